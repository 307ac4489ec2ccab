/* deadlock.c: what a run left waiting when it ended (reference section 3).
 *
 * A run ends by quiescence: no thread ready or running anywhere, no token, no
 * message in flight. Activations still alive then wait on sync slots nobody
 * will signal. If MAIN's is one of them the run was deadlocked: an error, exit
 * status 1. If MAIN ended, the program left other functions waiting: a warning.
 *
 * Every build counts live activations per function in the function's
 * descriptor (one increment in thread 0, one decrement at END_FUNCTION/RETURN:
 * etc.h etc_fn_enter/etc_fn_leave). At the end every node sends its non-zero
 * counts to node 0, which reports for the whole run; the checking build adds
 * each waiting slot's count and the INIT_SYNC that armed it (check.c keeps the
 * live frames).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rts.h"

#define SLOTS_PER_NODE 16 /* slot details a node reports */
#define NAMES_SHOWN 8     /* functions named on the report's line */
#define NOTES_SHOWN 20    /* slot details printed */

typedef struct {
    int32_t node, nfns, nslots, slots_total;
} msg_head;

typedef struct {
    uint64_t fn; /* etc_fn_info * */
    int64_t live;
} msg_fn;

typedef struct {
    const etc_fn_info *fn;
    long live;
    int node;
} fn_count;

typedef struct etc_waiting {
    fn_count *fns;
    size_t nfns, fns_cap;
    etc_waiting_slot slots[NOTES_SHOWN];
    int nslots;
    long slots_total;
} etc_waiting;

static etc_waiting *table(void)
{
    etc_node_private *p = etc_rts.priv;
    if (!p->waiting) {
        p->waiting = calloc(1, sizeof *p->waiting);
        if (!p->waiting)
            etc_fatal("out of memory (end-of-run report)");
    }
    return p->waiting;
}

static void add_fn(etc_waiting *w, const etc_fn_info *fn, long live, int node)
{
    if (w->nfns == w->fns_cap) {
        w->fns_cap = w->fns_cap ? 2 * w->fns_cap : 16;
        w->fns = etc_xrealloc(w->fns, w->fns_cap * sizeof *w->fns);
    }
    w->fns[w->nfns++] = (fn_count){fn, live, node};
}

static void add_slots(etc_waiting *w, const etc_waiting_slot *s, int n, long total)
{
    for (int i = 0; i < n && w->nslots < NOTES_SHOWN; i++)
        w->slots[w->nslots++] = s[i];
    w->slots_total += total;
}

void etc_waiting_message(int src, const void *body, size_t len)
{
    msg_head h;
    if (etc_rts.node_id != 0 || len < sizeof h)
        etc_fatal("unexpected end-of-run report (%zu bytes) from node %d", len, src);
    memcpy(&h, body, sizeof h);
    if (h.node != src || h.nfns < 0 || h.nslots < 0 || h.nslots > SLOTS_PER_NODE ||
        len != sizeof h + (size_t)h.nfns * sizeof(msg_fn) +
                   (size_t)h.nslots * sizeof(etc_waiting_slot))
        etc_fatal("malformed end-of-run report (%zu bytes) from node %d", len, src);
    etc_waiting *w = table();
    const char *at = (const char *)body + sizeof h;
    for (int i = 0; i < h.nfns; i++, at += sizeof(msg_fn)) {
        msg_fn m;
        memcpy(&m, at, sizeof m);
        const etc_fn_info *fn = (const etc_fn_info *)(uintptr_t)m.fn;
        if (!etc_fn_is_known(fn))
            etc_fatal("end-of-run report from node %d names no threaded function", src);
        add_fn(w, fn, (long)m.live, src);
    }
    etc_waiting_slot s[SLOTS_PER_NODE];
    memcpy(s, at, (size_t)h.nslots * sizeof *s);
    add_slots(w, s, h.nslots, h.slots_total);
    etc_rts.priv->waiting_reports++;
}

/* This node's counts: functions with live activations, and (checking build) the
 * slots they wait on. */
static void send_own(void)
{
    size_t room = etc_net_max_message() - sizeof(msg_head) -
                  SLOTS_PER_NODE * sizeof(etc_waiting_slot);
    size_t max_fns = room / sizeof(msg_fn), nfns = 0;
    size_t count = (size_t)(etc_fns_end() - etc_fns_begin());
    msg_fn *fns = etc_xmalloc((count < max_fns ? count : max_fns) * sizeof *fns);
    for (etc_fn_info *const *f = etc_fns_begin(); f != etc_fns_end(); f++)
        if ((*f)->live > 0 && nfns < max_fns)
            fns[nfns++] = (msg_fn){(uint64_t)(uintptr_t)*f, (*f)->live};
    etc_waiting_slot slots[SLOTS_PER_NODE];
    int total = 0;
#ifdef ETC_CHECK
    total = etc_check_waiting_slots(slots, SLOTS_PER_NODE);
#endif
    int nslots = total < SLOTS_PER_NODE ? total : SLOTS_PER_NODE;
    if (etc_rts.node_id == 0) {
        etc_waiting *w = table();
        for (size_t i = 0; i < nfns; i++)
            add_fn(w, (const etc_fn_info *)(uintptr_t)fns[i].fn, (long)fns[i].live, 0);
        add_slots(w, slots, nslots, total);
    } else {
        msg_head h = {etc_rts.node_id, (int32_t)nfns, nslots, total};
        size_t len = sizeof h + nfns * sizeof *fns + (size_t)nslots * sizeof *slots;
        char *m = etc_xmalloc(len);
        memcpy(m, &h, sizeof h);
        memcpy(m + sizeof h, fns, nfns * sizeof *fns);
        memcpy(m + sizeof h + nfns * sizeof *fns, slots, (size_t)nslots * sizeof *slots);
        etc_send(0, ETC_M_WAITING, m, len, NULL, 0);
        etc_net_flush();
        free(m);
    }
    free(fns);
}

static int by_function_then_node(const void *a, const void *b)
{
    const fn_count *x = a, *y = b;
    if (x->fn != y->fn)
        return strcmp(x->fn->name, y->fn->name) != 0 ? strcmp(x->fn->name, y->fn->name)
                                                     : (x->fn < y->fn ? -1 : 1);
    return (x->node > y->node) - (x->node < y->node);
}

/* "node 3", "nodes 0-2, 5" for the nodes of entries [i, j) (sorted by node). */
static void node_list(const fn_count *e, size_t i, size_t j, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "node%s ", j - i > 1 ? "s" : "");
    for (size_t k = i; k < j && used < cap;) {
        size_t r = k;
        while (r + 1 < j && e[r + 1].node == e[r].node + 1)
            r++;
        if (r == k)
            used += (size_t)snprintf(buf + used, cap - used, "%s%d", k > i ? ", " : "", e[k].node);
        else
            used += (size_t)snprintf(buf + used, cap - used, "%s%d-%d", k > i ? ", " : "",
                                     e[k].node, e[r].node);
        k = r + 1;
    }
}

static int by_node(const void *a, const void *b)
{
    const etc_waiting_slot *x = a, *y = b;
    return (x->node > y->node) - (x->node < y->node);
}

static void print_report(etc_waiting *w, int deadlock)
{
    qsort(w->fns, w->nfns, sizeof *w->fns, by_function_then_node);
    qsort(w->slots, (size_t)w->nslots, sizeof *w->slots, by_node);
    long total = 0;
    for (size_t i = 0; i < w->nfns; i++)
        total += w->fns[i].live;
    char list[1024] = "";
    size_t used = 0;
    int shown = 0, more = 0;
    for (size_t i = 0; i < w->nfns;) {
        size_t j = i;
        long live = 0;
        while (j < w->nfns && w->fns[j].fn == w->fns[i].fn)
            live += w->fns[j++].live;
        if (shown < NAMES_SHOWN && used < sizeof list) {
            char nodes[256];
            node_list(w->fns, i, j, nodes, sizeof nodes);
            used += (size_t)snprintf(list + used, sizeof list - used, "%s'%s' x%ld on %s",
                                     shown ? ", " : "", w->fns[i].fn->name, live, nodes);
            shown++;
        } else {
            more++;
        }
        i = j;
    }
    if (more && used < sizeof list)
        snprintf(list + used, sizeof list - used, ", and %d more function%s", more,
                 more == 1 ? "" : "s");
    fflush(stdout);
    fprintf(stderr, "etc: %s: the run ended with %ld threaded function activation%s %swaiting on "
                    "sync slots: %s\n",
            deadlock ? "error: deadlock" : "warning", total, total == 1 ? "" : "s",
            deadlock ? "" : "still ", list);
    for (int i = 0; i < w->nslots; i++) {
        const etc_waiting_slot *s = &w->slots[i];
        const char *fname = (const char *)(uintptr_t)s->fname;
        const char *file = (const char *)(uintptr_t)s->file;
        fprintf(stderr, "etc: note: node %d: '%s' slot %d awaits %d more signal%s", s->node, fname,
                s->slot, s->cnt, s->cnt == 1 ? "" : "s");
        if (file && s->line > 0)
            fprintf(stderr, " (armed by the INIT_SYNC at %s:%d)", file, s->line);
        fputc('\n', stderr);
    }
    if (w->slots_total > w->nslots)
        fprintf(stderr, "etc: note: and %ld more waiting slot%s\n", w->slots_total - w->nslots,
                w->slots_total - w->nslots == 1 ? "" : "s");
#ifndef ETC_CHECK
    fprintf(stderr, "etc: note: build with etcc -g to see each waiting slot and the INIT_SYNC "
                    "that armed it\n");
#endif
    fflush(stderr);
}

int etc_waiting_report(void)
{
    send_own();
    if (etc_rts.node_id != 0)
        return 0;
    etc_node_private *p = etc_rts.priv;
    while (p->waiting_reports < etc_rts.num_nodes - 1)
        if (etc_net_poll() == 0)
            etc_net_wait(0.1);
    etc_waiting *w = table();
    int deadlock = 0;
    for (size_t i = 0; i < w->nfns; i++)
        if (w->fns[i].node == 0 && strcmp(w->fns[i].fn->name, "MAIN") == 0)
            deadlock = 1;
    if (w->nfns)
        print_report(w, deadlock);
    free(w->fns);
    free(w);
    p->waiting = NULL;
    return deadlock;
}
