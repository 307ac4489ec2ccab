/* prof.c: the profile of a -prof build (thesis appendix C). Each node counts
 * in etc_rts.prof; at the end the nodes send their counters to node 0, which
 * prints one table (a row per node, then totals) on stderr and, when
 * ETC_PROF_OUT names a file, writes the same numbers there as JSON. */
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

static const struct {
    const char *key, *head;
    size_t off;
    int is_time;
} COLUMNS[] = {
#define C(f, h) {#f, h, offsetof(etc_prof, f), 0}
#define T(f, h) {#f, h, offsetof(etc_prof, f), 1}
    T(elapsed, "elapsed s"),
    C(threads_run, "threads"),
    C(tokens_generated, "tok gen"),
    C(tokens_consumed, "tok used"),
    C(tokens_consumed_local, "used local"),
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

static double value(const etc_prof *p, size_t c)
{
    const char *base = (const char *)p + COLUMNS[c].off;
    if (COLUMNS[c].is_time) {
        double d;
        memcpy(&d, base, sizeof d);
        return d;
    }
    uint64_t u;
    memcpy(&u, base, sizeof u);
    return (double)u;
}

static void print_row(FILE *f, const char *label, const double *v)
{
    fprintf(f, "%-6s", label);
    for (size_t c = 0; c < NCOL; c++) {
        if (COLUMNS[c].is_time)
            fprintf(f, " %11.4f", v[c]);
        else
            fprintf(f, " %11.0f", v[c]);
    }
    fputc('\n', f);
}

static void print_table(const etc_prof *all, int n)
{
    double total[NCOL] = {0};
    fprintf(stderr, "etc profile (%d node%s, balancer %s)\n%-6s", n, n == 1 ? "" : "s",
            etc_rts.priv->lb->name, "node");
    for (size_t c = 0; c < NCOL; c++)
        fprintf(stderr, " %11s", COLUMNS[c].head);
    fputc('\n', stderr);
    for (int k = 0; k < n; k++) {
        double v[NCOL];
        char label[16];
        for (size_t c = 0; c < NCOL; c++) {
            v[c] = value(&all[k], c);
            total[c] = COLUMNS[c].is_time && strcmp(COLUMNS[c].key, "elapsed") == 0
                           ? (v[c] > total[c] ? v[c] : total[c])
                           : total[c] + v[c];
        }
        snprintf(label, sizeof label, "%d", k);
        print_row(stderr, label, v);
    }
    print_row(stderr, "total", total);
    fflush(stderr);
}

static void write_json(const char *path, const etc_prof *all, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "etc: error: cannot write the profile to '%s'\n", path);
        return;
    }
    fprintf(f, "{\n  \"balancer\": \"%s\",\n  \"nodes\": [\n", etc_rts.priv->lb->name);
    for (int k = 0; k < n; k++) {
        fprintf(f, "    {\"node\": %d", k);
        for (size_t c = 0; c < NCOL; c++) {
            if (COLUMNS[c].is_time)
                fprintf(f, ", \"%s\": %.9f", COLUMNS[c].key, value(&all[k], c));
            else
                fprintf(f, ", \"%s\": %.0f", COLUMNS[c].key, value(&all[k], c));
        }
        fprintf(f, "}%s\n", k + 1 < n ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    fclose(f);
}

void etc_prof_finish(void)
{
    etc_node_private *p = etc_rts.priv;
    if (!p->prof_enabled)
        return;
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
