/* prof.c: the profile of a -prof build (thesis appendix C). Each node counts
 * in etc_rts.prof; at the end the nodes send their counters to node 0, which
 * prints one table (a row per node, then totals) on stderr and, when
 * ETC_PROF_OUT names a file, writes the same numbers there as JSON. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rts.h"

typedef struct {
    int32_t node;
    int32_t pad;
    etc_prof prof;
} msg_prof;

/* Node 0's table of every node's counters. A node sends its counters as soon
 * as it learns that the run is over, which may be before node 0 itself has
 * left its scheduler (node 0 decides, and the answers can arrive in the same
 * poll), so the table is made by whichever needs it first. */
static etc_prof *prof_table(void)
{
    etc_node_private *p = etc_rts.priv;
    if (!p->prof_all) {
        p->prof_all = calloc((size_t)etc_rts.num_nodes, sizeof *p->prof_all);
        if (!p->prof_all)
            etc_fatal("out of memory (profile)");
    }
    return p->prof_all;
}

void etc_prof_message(int src, const void *body, size_t len)
{
    etc_node_private *p = etc_rts.priv;
    msg_prof m;
    if (len != sizeof m || etc_rts.node_id != 0 || !p->prof_enabled)
        etc_fatal("unexpected profile message (%zu bytes) from node %d", len, src);
    memcpy(&m, body, sizeof m);
    if (m.node < 0 || m.node >= etc_rts.num_nodes)
        etc_fatal("profile message for node %d from node %d", m.node, src);
    prof_table()[m.node] = m.prof;
    p->prof_reports++;
}

/* The columns of the table and the keys of the JSON, in appendix C's terms.
 * Counts are uint64_t fields of etc_prof, times double ones; "balancing
 * activities" is derived: requests sent + received + tokens sent + received. */
enum { COUNT, TIME, ACTIVITIES };

static const struct {
    const char *key, *head;
    size_t off;
    int kind;
} COLUMNS[] = {
#define C(f, h) {#f, h, offsetof(etc_prof, f), COUNT}
#define T(f, h) {#f, h, offsetof(etc_prof, f), TIME}
    T(elapsed, "elapsed s"),
    C(threads_run, "threads"),
    C(tokens_generated, "tok gen"),
    C(tokens_consumed, "tok used"),
    C(tokens_consumed_local, "used local"),
    {"balancing_activities", "bal acts", 0, ACTIVITIES},
    C(requests_sent, "req sent"),
    C(requests_received, "req recv"),
    C(tokens_sent, "tok sent"),
    C(tokens_received, "tok recv"),
    C(extra_tokens, "extra tok"),
    C(remote_comms, "remote com"),
    T(idle_time, "idle s"),
    C(idle_periods, "idle per"),
    T(balancer_idle_time, "lb idle s"),
    C(balancer_idle_periods, "lb idle per"),
#undef C
#undef T
};
#define NCOL (sizeof COLUMNS / sizeof COLUMNS[0])

/* One row: counts in u[], times in t[] (the other array unused). */
typedef struct {
    uint64_t u[NCOL];
    double t[NCOL];
} row;

static row row_of(const etc_prof *p)
{
    row r;
    memset(&r, 0, sizeof r);
    for (size_t c = 0; c < NCOL; c++) {
        const char *base = (const char *)p + COLUMNS[c].off;
        if (COLUMNS[c].kind == TIME)
            memcpy(&r.t[c], base, sizeof r.t[c]);
        else if (COLUMNS[c].kind == COUNT)
            memcpy(&r.u[c], base, sizeof r.u[c]);
        else
            r.u[c] = p->requests_sent + p->requests_received + p->tokens_sent +
                     p->tokens_received;
    }
    return r;
}

/* Totals: sums, except the elapsed time of the run, the longest node's. */
static row totals(const etc_prof *all, int n)
{
    row tot;
    memset(&tot, 0, sizeof tot);
    for (int k = 0; k < n; k++) {
        row r = row_of(&all[k]);
        for (size_t c = 0; c < NCOL; c++) {
            tot.u[c] += r.u[c];
            if (COLUMNS[c].off == offsetof(etc_prof, elapsed) && COLUMNS[c].kind == TIME)
                tot.t[c] = r.t[c] > tot.t[c] ? r.t[c] : tot.t[c];
            else
                tot.t[c] += r.t[c];
        }
    }
    return tot;
}

static int width(size_t c)
{
    int w = (int)strlen(COLUMNS[c].head);
    return w < 8 ? 8 : w;
}

static void print_row(FILE *f, const char *label, const row *r)
{
    fprintf(f, "%-5s", label);
    for (size_t c = 0; c < NCOL; c++) {
        if (COLUMNS[c].kind == TIME)
            fprintf(f, " %*.4f", width(c), r->t[c]);
        else
            fprintf(f, " %*" PRIu64, width(c), r->u[c]);
    }
    fputc('\n', f);
}

static void print_table(const etc_prof *all, int n)
{
    FILE *f = stderr;
    fprintf(f, "etc profile (%d node%s, balancer %s; times in seconds)\n%-5s", n,
            n == 1 ? "" : "s", etc_rts.priv->lb->name, "node");
    for (size_t c = 0; c < NCOL; c++)
        fprintf(f, " %*s", width(c), COLUMNS[c].head);
    fputc('\n', f);
    for (int k = 0; k < n; k++) {
        char label[16];
        row r = row_of(&all[k]);
        snprintf(label, sizeof label, "%d", k);
        print_row(f, label, &r);
    }
    row tot = totals(all, n);
    print_row(f, "total", &tot);
    fflush(f);
}

static void json_fields(FILE *f, const row *r)
{
    for (size_t c = 0; c < NCOL; c++) {
        if (COLUMNS[c].kind == TIME)
            fprintf(f, ", \"%s\": %.9f", COLUMNS[c].key, r->t[c]);
        else
            fprintf(f, ", \"%s\": %" PRIu64, COLUMNS[c].key, r->u[c]);
    }
}

/* {"balancer": ..., "nodes": [{"node": 0, <column>: ...}, ...], "totals": {...}} */
static void write_json(const char *path, const etc_prof *all, int n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        etc_fatal("cannot write the profile to '%s': %s", path, strerror(errno));
    fprintf(f, "{\n  \"balancer\": \"%s\",\n  \"node_count\": %d,\n  \"nodes\": [\n",
            etc_rts.priv->lb->name, n);
    for (int k = 0; k < n; k++) {
        row r = row_of(&all[k]);
        fprintf(f, "    {\"node\": %d", k);
        json_fields(f, &r);
        fprintf(f, "}%s\n", k + 1 < n ? "," : "");
    }
    row tot = totals(all, n);
    fprintf(f, "  ],\n  \"totals\": {\"nodes\": %d", n);
    json_fields(f, &tot);
    fprintf(f, "}\n}\n");
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        etc_fatal("cannot write the profile to '%s': %s", path, strerror(errno));
}

void etc_prof_finish(void)
{
    etc_node_private *p = etc_rts.priv;
    if (!p->prof_enabled) {
        const char *out = getenv("ETC_PROF_OUT");
        if (out && *out && etc_rts.node_id == 0)
            fprintf(stderr, "etc: warning: ETC_PROF_OUT is set but this program was built "
                            "without -prof: no profile written\n");
        return;
    }
    int n = etc_rts.num_nodes;
    if (etc_rts.node_id != 0) {
        msg_prof m = {etc_rts.node_id, 0, etc_rts.prof};
        etc_send(0, ETC_M_PROF, &m, sizeof m, NULL, 0);
        etc_net_flush();
        return;
    }
    etc_prof *all = prof_table();
    all[0] = etc_rts.prof;
    while (p->prof_reports < n - 1) {
        if (etc_net_poll() == 0)
            etc_net_wait(0.1);
    }
    fflush(stdout);
    print_table(all, n);
    const char *out = getenv("ETC_PROF_OUT");
    if (out && *out)
        write_json(out, all, n);
    free(all);
    p->prof_all = NULL;
}
