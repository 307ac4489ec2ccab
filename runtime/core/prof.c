/* prof.c: the profile of a -prof build (thesis appendix C).
 *
 * C.1, where a node's time goes, in seven parts. Idle time is measured: idle()
 * reads the clock when the node runs out of work and when it finds some. The
 * rest of the elapsed time is shared among the other six parts by sampling:
 * a timer interrupts the node ETC_PROF_HZ times a second (SIGPROF; idle
 * samples are dropped), and each other sample is given to
 *   - the part etc_rts.part names, where the runtime marks one that the code
 *     address cannot tell (polling, the balancer, a message's handler: rts.h
 *     ETC_PART_*), or else
 *   - the part the interrupted instruction belongs to, by the line the line
 *     table says it was compiled from: a .tc file is application; etc.h's
 *     operations of thread management and of synchronization stand between
 *     markers (ETC_LINES_*); the runtime's files are scheduling (sched.c and
 *     the rest of core/), thread management (alloc.c), synchronization
 *     (remote.c), load balancing (balance.c, lb/), polling (net/), or the
 *     program's own (clock.c: etc_time(), etc_delay()); an address outside the
 *     executable (libc) is the program's. etcc -prof compiles with line tables
 *     (-g1) for this.
 * So a thread and its inlined primitives cost nothing more to profile: a
 * transition writes nothing. Each part gets the busy time in proportion to its
 * samples; the parts add up to the elapsed time, and a part's share is an
 * estimate from `samples` readings (standard error about
 * sqrt(share * (1 - share) / samples)).
 *
 * C.2, the counters (etc_prof, counted with ETC_PROF_ADD) and the idle periods
 * as intervals (start and end in seconds since the node started, and whether a
 * token from the balancer or the node's own work ended it).
 *
 * At the end every node sends its profile to node 0, which prints a table on
 * stderr (a metric per row, nodes as columns, several tables for many nodes)
 * and, when ETC_PROF_OUT names a file (etcrun --prof-out), writes it as JSON
 * (docs/profiling.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/rts.h"

/* Samples per second, ETC_PROF_HZ to change it: on the machine the numbers in
 * bench/REPORT.md come from a sample costs some 10-50 us (a timer interrupt and
 * a signal in a virtual machine), so 1 kHz costs fib about 1%, 10 kHz 20-50%. */
#define PROF_HZ_DEFAULT 1000
#define PROF_HZ_MIN 10
#define PROF_HZ_MAX 20000
#define IDLE_KEEP 100000 /* idle periods kept per node; the rest are counted */
#define PCS 8192         /* distinct code addresses sampled (a power of 2) */

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

typedef struct {
    double start, end; /* seconds since the node started */
    int32_t balancer;  /* a balancer's token ended it */
    int32_t pad;
} idle_span;

typedef struct {
    uintptr_t pc;
    uint64_t n;
} pc_count;

typedef struct etc_prof_state {
    timer_t timer;
    int started;
    double period;
    struct sigaction old;
    uint64_t hits[ETC_PARTS]; /* samples the part word placed */
    pc_count *pcs;            /* the others, by code address */
    uint64_t samples, idle_samples;
    idle_span *idle;
    size_t nidle, cap;
    uint64_t dropped;
} etc_prof_state;

/* node 0: a node's whole profile */
typedef struct etc_prof_node {
    etc_prof prof;
    idle_span *idle;
    size_t nidle, expected;
    uint64_t dropped;
    int have_counters, done;
} etc_prof_node;

static const char *const PART_KEYS[ETC_PARTS] = {
    "application", "thread_management", "synchronization", "scheduling",
    "load_balancing", "idle", "polling",
};

#ifdef ETC_PROF
/* ---------------------------------------------------------------- the sampler */

static etc_prof_state *state(void)
{
    etc_node_private *p = etc_rts.priv;
    if (!p->prof) {
        p->prof = calloc(1, sizeof *p->prof);
        if (!p->prof)
            etc_fatal("out of memory (profile)");
    }
    return p->prof;
}

static etc_prof_state *sampling; /* for the signal handler */

static void on_sample(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    etc_prof_state *s = sampling;
    if (!s)
        return;
    (void)si;
    /* One sample, however many periods passed since the last (si_overrun): a node
     * that had to wait for a CPU resumes where it stopped, and giving that one
     * instant the weight of the whole wait would make it many samples. */
    uint64_t weight = 1;
    s->samples += weight;
    uint32_t part = ETC_PART_GET();
    if (part == ETC_PART_IDLE) {
        s->idle_samples += weight;
        return;
    }
    uintptr_t pc = part == ETC_PART_APPLICATION ? etc_interrupted_pc(uc) : 0;
    if (!pc) {
        s->hits[part < ETC_PARTS ? part : ETC_PART_APPLICATION] += weight;
        return;
    }
    for (size_t i = (pc >> 2) & (PCS - 1), k = 0; k < PCS; k++, i = (i + 1) & (PCS - 1)) {
        if (s->pcs[i].pc == pc || s->pcs[i].pc == 0) {
            s->pcs[i].pc = pc;
            s->pcs[i].n += weight;
            return;
        }
    }
    s->hits[ETC_PART_APPLICATION] += weight; /* the table is full */
}

/* Read by etc_prof_settings, before the nodes start. */
static double settings_period;

static double sample_period(void)
{
    const char *v = getenv("ETC_PROF_HZ");
    if (!v || !*v)
        return 1.0 / PROF_HZ_DEFAULT;
    char *end;
    long hz = strtol(v, &end, 10);
    if (*end || hz < PROF_HZ_MIN || hz > PROF_HZ_MAX)
        etc_die("ETC_PROF_HZ='%s' is not a sampling rate (%d to %d per second)", v, PROF_HZ_MIN,
                PROF_HZ_MAX);
    return 1.0 / (double)hz;
}

void etc_prof_settings(void)
{
    settings_period = sample_period();
}

void etc_prof_start(void)
{
    if (!etc_rts.priv->prof_enabled)
        return;
    etc_prof_state *s = state();
    s->period = settings_period;
    s->pcs = calloc(PCS, sizeof *s->pcs);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGPROF;
    ev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
    if (!s->pcs || timer_create(CLOCK_MONOTONIC, &ev, &s->timer) != 0)
        etc_fatal("cannot start the profile's sampling timer: %s", strerror(errno));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sample;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, &s->old);
    sampling = s;
    long ns = (long)(s->period * 1e9);
    struct itimerspec every = {{ns / 1000000000L, ns % 1000000000L},
                               {ns / 1000000000L, ns % 1000000000L}};
    timer_settime(s->timer, 0, &every, NULL);
    s->started = 1;
}

/* ---------------------------------------------------------------- what an address is */

typedef struct {
    uintptr_t lo, hi;
    uint32_t part;
} code_range;

typedef struct {
    const char *dir, *name;
    uint32_t part; /* ETC_PARTS: etc.h, by line */
} file_part;

typedef struct {
    code_range *r;
    size_t n, cap;
    file_part seen[8]; /* the files of the ranges just before: each is many ranges */
    unsigned next;
} code_map;

static int named(const char *path, const char *parent, const char *base)
{
    size_t p = strlen(path), b = strlen(base), d = strlen(parent);
    if (p < b + 1 + d || strcmp(path + p - b, base) != 0 || path[p - b - 1] != '/')
        return 0;
    const char *dir_end = path + p - b - 1;
    return strncmp(dir_end - d, parent, d) == 0 && (dir_end - d == path || dir_end[-d - 1] == '/');
}

/* The part of a file's code (ETC_PARTS for etc.h, whose part depends on the line). */
static uint32_t part_of_file(const char *dir, const char *name)
{
    char path[1024];
    if (name[0] == '/' || !dir[0])
        snprintf(path, sizeof path, "%s", name);
    else
        snprintf(path, sizeof path, "%s/%s", dir, name);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (strcmp(base, "etc.h") == 0)
        return ETC_PARTS;
    if (named(path, "core", "clock.c")) /* the program's etc_time(), etc_delay() */
        return ETC_PART_APPLICATION;
    if (named(path, "core", "alloc.c"))
        return ETC_PART_THREAD_MANAGEMENT;
    if (named(path, "core", "remote.c") || named(path, "core", "check.c"))
        return ETC_PART_SYNCHRONIZATION;
    if (named(path, "core", "balance.c"))
        return ETC_PART_LOAD_BALANCING;
    if (named(path, "core", base)) /* the scheduler and the rest of the core */
        return ETC_PART_SCHEDULING;
    if (named(path, "net", base))
        return ETC_PART_POLLING;
    if (named(path, "lb", base))
        return ETC_PART_LOAD_BALANCING;
    return ETC_PART_APPLICATION; /* the program's .tc and .c files, its headers */
}

static uint32_t part_of_line(code_map *m, const char *dir, const char *name, int line)
{
    uint32_t part = ETC_PARTS + 1;
    for (unsigned i = 0; i < 8; i++)
        if (m->seen[i].name == name && m->seen[i].dir == dir)
            part = m->seen[i].part;
    if (part > ETC_PARTS) {
        part = part_of_file(dir, name);
        m->seen[m->next++ % 8] = (file_part){dir, name, part};
    }
    if (part < ETC_PARTS)
        return part;
    if (line >= ETC_LINES_THREAD_MANAGEMENT_FIRST && line <= ETC_LINES_THREAD_MANAGEMENT_LAST)
        return ETC_PART_THREAD_MANAGEMENT;
    if (line >= ETC_LINES_SYNCHRONIZATION_FIRST && line <= ETC_LINES_SYNCHRONIZATION_LAST)
        return ETC_PART_SYNCHRONIZATION;
    return ETC_PART_APPLICATION; /* etc.h's GLOBAL pointers in the program's expressions */
}

static void add_range(void *ctx, uintptr_t lo, uintptr_t hi, const char *dir, const char *name,
                      int line)
{
    code_map *m = ctx;
    uint32_t part = part_of_line(m, dir, name, line);
    if (m->n && m->r[m->n - 1].hi == lo && m->r[m->n - 1].part == part) {
        m->r[m->n - 1].hi = hi;
        return;
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 4096;
        m->r = etc_xrealloc(m->r, m->cap * sizeof *m->r);
    }
    m->r[m->n++] = (code_range){lo, hi, part};
}

static int by_start(const void *a, const void *b)
{
    const code_range *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

static uint32_t part_of_pc(const code_map *m, uintptr_t pc)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->r[mid].hi <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < m->n && m->r[lo].lo <= pc && pc < m->r[lo].hi)
        return m->r[lo].part;
    return ETC_PART_APPLICATION; /* libc and the like, called from a thread */
}

/* The counts of threads and tokens run, from what the queues and the balancer
 * counted, once the node's queues are empty (the run is over): every token made
 * here or received was run here or sent on; every closure the ready queue took
 * (its head moved on, less the continuations RETURN put back at the head) ran. */
static void count_runs(void)
{
    etc_prof *p = &etc_rts.prof;
    p->tokens_consumed = p->tokens_generated + p->tokens_received - p->tokens_sent;
    p->tokens_consumed_local = p->tokens_generated - p->own_tokens_sent;
    uint64_t ready = (uint64_t)etc_rts.rq.head + p->rq_taken_before_grow + p->rq_returns;
    p->threads_run = ready + p->tokens_consumed;
}

/* The busy time (elapsed less idle) shared by the samples; idle as measured. */
void etc_prof_stop(double end)
{
    count_runs();
    etc_prof_state *s = etc_rts.priv->prof;
    if (!s || !s->started)
        return;
    timer_delete(s->timer);
    sampling = NULL;
    sigaction(SIGPROF, &s->old, NULL);
    s->started = 0;
    uint64_t hits[ETC_PARTS];
    memcpy(hits, s->hits, sizeof hits);
    code_map m;
    memset(&m, 0, sizeof m);
    etc_debuginfo_init();
    etc_lines_each(add_range, &m);
    qsort(m.r, m.n, sizeof *m.r, by_start);
    for (size_t i = 0; i < PCS; i++)
        if (s->pcs[i].pc)
            hits[part_of_pc(&m, s->pcs[i].pc)] += s->pcs[i].n;
    free(m.r);
    free(s->pcs);
    s->pcs = NULL;
    double elapsed = end - etc_rts.priv->start_time;
    double idle = etc_rts.prof.idle_time < elapsed ? etc_rts.prof.idle_time : elapsed;
    uint64_t busy_samples = 0;
    for (int i = 0; i < ETC_PARTS; i++)
        busy_samples += i == ETC_PART_IDLE ? 0 : hits[i];
    for (int i = 0; i < ETC_PARTS; i++)
        etc_rts.prof.part_time[i] =
            i == ETC_PART_IDLE  ? idle
            : busy_samples      ? (elapsed - idle) * (double)hits[i] / (double)busy_samples
            : i == ETC_PART_APPLICATION ? elapsed - idle /* no sample: a very short run */
                                        : 0.0;
    etc_rts.prof.samples = s->samples;
}

void etc_prof_idle_period(double start, double end, int balancer)
{
    etc_prof_state *s = state();
    if (s->nidle == IDLE_KEEP) {
        s->dropped++;
        return;
    }
    if (s->nidle == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->idle = etc_xrealloc(s->idle, s->cap * sizeof *s->idle);
    }
    double t0 = etc_rts.priv->start_time;
    s->idle[s->nidle++] = (idle_span){start - t0, end - t0, balancer, 0};
}

uint32_t etc_prof_part_of_message(int type)
{
    uint32_t now = ETC_PART_GET();
    if (now == ETC_PART_IDLE)
        return now; /* the idle time is measured as a whole */
    switch (type) {
    case ETC_M_SYNC:
    case ETC_M_INCR:
    case ETC_M_DATA:
    case ETC_M_GET:
    case ETC_M_PUT:
    case ETC_M_BLKGET:
        return ETC_PART_SYNCHRONIZATION;
    case ETC_M_SPAWN:
    case ETC_M_INVOKE:
        return ETC_PART_THREAD_MANAGEMENT;
    case ETC_M_TOKEN:
    case ETC_M_ADAPT:
        return ETC_PART_LOAD_BALANCING;
    default:
        if (type >= ETC_LB_MSG && type < ETC_LB_MSG + ETC_LB_MSG_COUNT)
            return ETC_PART_LOAD_BALANCING;
        return now; /* termination waves, end-of-run reports: the part that polled */
    }
}

#else
void etc_prof_start(void)
{
}

void etc_prof_stop(double end)
{
    (void)end;
}
#endif

/* ---------------------------------------------------------------- gathering */

enum { MSG_COUNTERS, MSG_IDLE };

typedef struct {
    int32_t node, kind;
    uint32_t count, last; /* counters: idle periods to follow; idle: in this one */
    uint64_t dropped;
} msg_head;

/* Node 0's table of every node's profile. A node sends its profile as soon as it
 * learns that the run is over, which may be before node 0 itself has left its
 * scheduler, so the table is made by whichever needs it first. */
static etc_prof_node *prof_table(void)
{
    etc_node_private *p = etc_rts.priv;
    if (!p->prof_all) {
        p->prof_all = calloc((size_t)etc_rts.num_nodes, sizeof *p->prof_all);
        if (!p->prof_all)
            etc_fatal("out of memory (profile)");
    }
    return p->prof_all;
}

static void add_idle(etc_prof_node *n, const void *spans, size_t count)
{
    n->idle = etc_xrealloc(n->idle, (n->nidle + count) * sizeof *n->idle);
    if (count)
        memcpy(n->idle + n->nidle, spans, count * sizeof *n->idle);
    n->nidle += count;
}

void etc_prof_message(int src, const void *body, size_t len)
{
    etc_node_private *p = etc_rts.priv;
    msg_head h;
    if (len < sizeof h || etc_rts.node_id != 0 || !p->prof_enabled)
        etc_fatal("unexpected profile message (%zu bytes) from node %d", len, src);
    memcpy(&h, body, sizeof h);
    const char *payload = (const char *)body + sizeof h;
    size_t rest = len - sizeof h;
    etc_prof_node *n = &prof_table()[src];
    if (h.node != src || n->done)
        etc_fatal("unexpected profile message from node %d", src);
    if (h.kind == MSG_COUNTERS && rest == sizeof(etc_prof) && !n->have_counters) {
        memcpy(&n->prof, payload, sizeof n->prof);
        n->have_counters = 1;
        n->expected = h.count;
        n->dropped = h.dropped;
    } else if (h.kind == MSG_IDLE && n->have_counters && rest == h.count * sizeof(idle_span) &&
               n->nidle + h.count <= n->expected) {
        add_idle(n, payload, h.count);
    } else {
        etc_fatal("malformed profile message (%zu bytes) from node %d", len, src);
    }
    if (h.last) {
        if (n->nidle != n->expected)
            etc_fatal("profile of node %d: %zu idle periods, not %zu", src, n->nidle,
                      n->expected);
        n->done = 1;
        p->prof_reports++;
    }
}

static void send_profile(const etc_prof_state *s)
{
    size_t nidle = s ? s->nidle : 0;
    msg_head h = {etc_rts.node_id, MSG_COUNTERS, (uint32_t)nidle, nidle == 0,
                  s ? s->dropped : 0};
    etc_send(0, ETC_M_PROF, &h, sizeof h, &etc_rts.prof, sizeof etc_rts.prof);
    size_t per = (etc_net_max_message() - sizeof h) / sizeof(idle_span);
    for (size_t i = 0; i < nidle; i += per) {
        size_t k = nidle - i < per ? nidle - i : per;
        msg_head c = {etc_rts.node_id, MSG_IDLE, (uint32_t)k, i + k == nidle, 0};
        etc_send(0, ETC_M_PROF, &c, sizeof c, s->idle + i, k * sizeof(idle_span));
        etc_net_flush();
    }
    etc_net_flush();
}

/* ---------------------------------------------------------------- the table */

/* C.2's counters in appendix C's order: JSON key, table label; "balancing
 * activities" is derived (requests sent + received + tokens sent + received). */
enum { COUNT, TIME, ACTIVITIES };

static const struct {
    const char *key, *label;
    size_t off;
    int kind;
} COUNTERS[] = {
#define C(f, l) {#f, l, offsetof(etc_prof, f), COUNT}
#define T(f, l) {#f, l, offsetof(etc_prof, f), TIME}
    C(threads_run, "threads run"),
    C(tokens_generated, "tokens generated"),
    C(tokens_consumed, "tokens consumed"),
    C(tokens_consumed_local, "  of them made here"),
    {"balancing_activities", "balancing activities", 0, ACTIVITIES},
    C(requests_sent, "requests sent"),
    C(requests_received, "requests received"),
    C(tokens_sent, "tokens sent"),
    C(tokens_received, "tokens received"),
    C(extra_tokens, "extra tokens"),
    C(remote_comms, "remote comms"),
    T(idle_time, "idle time (s)"),
    {"idle_period_count", "idle periods", offsetof(etc_prof, idle_periods), COUNT},
    T(balancer_idle_time, "balancer idle (s)"),
    {"balancer_idle_period_count", "balancer idle periods",
     offsetof(etc_prof, balancer_idle_periods), COUNT},
#undef C
#undef T
};
#define NCOUNTERS (sizeof COUNTERS / sizeof COUNTERS[0])

static uint64_t count_of(const etc_prof *p, size_t c)
{
    if (COUNTERS[c].kind == ACTIVITIES)
        return p->requests_sent + p->requests_received + p->tokens_sent + p->tokens_received;
    uint64_t v;
    memcpy(&v, (const char *)p + COUNTERS[c].off, sizeof v);
    return v;
}

static double time_of(const etc_prof *p, size_t c)
{
    double v;
    memcpy(&v, (const char *)p + COUNTERS[c].off, sizeof v);
    return v;
}

/* Totals: sums, except the elapsed time of the run, the longest node's. */
static etc_prof totals(const etc_prof_node *all, int n)
{
    etc_prof t;
    memset(&t, 0, sizeof t);
    for (int k = 0; k < n; k++) {
        const etc_prof *p = &all[k].prof;
        t.tokens_generated += p->tokens_generated;
        t.tokens_consumed += p->tokens_consumed;
        t.tokens_consumed_local += p->tokens_consumed_local;
        t.threads_run += p->threads_run;
        t.requests_sent += p->requests_sent;
        t.requests_received += p->requests_received;
        t.tokens_sent += p->tokens_sent;
        t.tokens_received += p->tokens_received;
        t.extra_tokens += p->extra_tokens;
        t.remote_comms += p->remote_comms;
        t.idle_periods += p->idle_periods;
        t.balancer_idle_periods += p->balancer_idle_periods;
        t.idle_time += p->idle_time;
        t.balancer_idle_time += p->balancer_idle_time;
        t.elapsed = p->elapsed > t.elapsed ? p->elapsed : t.elapsed;
        for (int i = 0; i < ETC_PARTS; i++)
            t.part_time[i] += p->part_time[i];
        t.samples += p->samples;
    }
    return t;
}

#define LABEL_W 22
#define COL_W 13
#define COLS_PER_TABLE 5 /* node columns per table: 22 + 6 * 13 = 100 columns with total */

static const char *const PART_LABELS[ETC_PARTS] = {
    "application", "thread management", "synchronization", "scheduling",
    "load balancing", "idle", "polling",
};

/* One table: nodes [first, last), and the totals column when `tot`. */
static void print_table(FILE *f, const etc_prof_node *all, int first, int last,
                        const etc_prof *tot)
{
    const etc_prof *col[COLS_PER_TABLE + 1];
    char head[COLS_PER_TABLE + 1][16];
    int ncol = 0;
    for (int k = first; k < last; k++) {
        col[ncol] = &all[k].prof;
        snprintf(head[ncol++], sizeof head[0], "%d", k);
    }
    if (tot) {
        col[ncol] = tot;
        snprintf(head[ncol++], sizeof head[0], "total");
    }
    fprintf(f, "%-*s", LABEL_W, "node");
    for (int c = 0; c < ncol; c++)
        fprintf(f, "%*s", COL_W, head[c]);
    fprintf(f, "\n%-*s", LABEL_W, "elapsed (s)");
    for (int c = 0; c < ncol; c++)
        fprintf(f, "%*.4f", COL_W, col[c]->elapsed);
    fputc('\n', f);
    for (int i = 0; i < ETC_PARTS; i++) {
        fprintf(f, "%-*s", LABEL_W, PART_LABELS[i]);
        for (int c = 0; c < ncol; c++) {
            double t = col[c]->part_time[i], whole = 0; /* a node's elapsed time */
            for (int j = 0; j < ETC_PARTS; j++)
                whole += col[c]->part_time[j];
            char cell[32];
            snprintf(cell, sizeof cell, "%.4f %3.0f%%", t, whole > 0 ? 100 * t / whole : 0.0);
            fprintf(f, "%*s", COL_W, cell);
        }
        fputc('\n', f);
    }
    for (size_t i = 0; i < NCOUNTERS; i++) {
        fprintf(f, "%-*s", LABEL_W, COUNTERS[i].label);
        for (int c = 0; c < ncol; c++) {
            if (COUNTERS[i].kind == TIME)
                fprintf(f, "%*.4f", COL_W, time_of(col[c], i));
            else
                fprintf(f, "%*" PRIu64, COL_W, count_of(col[c], i));
        }
        fputc('\n', f);
    }
}

static void print_profile(const etc_prof_node *all, int n)
{
    FILE *f = stderr;
    etc_prof tot = totals(all, n);
    fprintf(f, "etc profile (%d node%s, balancer %s; times in seconds; %" PRIu64 " samples)\n",
            n, n == 1 ? "" : "s", etc_rts.priv->lb->name, tot.samples);
    for (int first = 0; first < n; first += COLS_PER_TABLE) {
        int last = first + COLS_PER_TABLE < n ? first + COLS_PER_TABLE : n;
        if (first)
            fputc('\n', f);
        print_table(f, all, first, last, last == n && n > 1 ? &tot : NULL);
    }
    fflush(f);
}

/* ---------------------------------------------------------------- JSON */

static void json_node(FILE *f, const etc_prof *p, const etc_prof_node *node)
{
    fprintf(f, "\"elapsed\": %.9f, \"time\": {", p->elapsed);
    for (int i = 0; i < ETC_PARTS; i++)
        fprintf(f, "%s\"%s\": %.9f", i ? ", " : "", PART_KEYS[i], p->part_time[i]);
    fprintf(f, "}, \"samples\": %" PRIu64, p->samples);
    for (size_t c = 0; c < NCOUNTERS; c++) {
        if (COUNTERS[c].kind == TIME)
            fprintf(f, ", \"%s\": %.9f", COUNTERS[c].key, time_of(p, c));
        else
            fprintf(f, ", \"%s\": %" PRIu64, COUNTERS[c].key, count_of(p, c));
    }
    if (!node)
        return;
    fprintf(f, ", \"idle_periods_dropped\": %" PRIu64 ", \"idle_periods\": [", node->dropped);
    for (size_t i = 0; i < node->nidle; i++)
        fprintf(f, "%s[%.9f, %.9f, \"%s\"]", i ? ", " : "", node->idle[i].start,
                node->idle[i].end, node->idle[i].balancer ? "balancer" : "application");
    fputc(']', f);
}

/* {"balancer", "node_count", "sample_period", "nodes": [...], "totals": {...}}:
 * docs/profiling.md */
static void write_json(const char *path, const etc_prof_node *all, int n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        etc_fatal("cannot write the profile to '%s': %s", path, strerror(errno));
    etc_prof_state *s = etc_rts.priv->prof;
    fprintf(f, "{\n  \"balancer\": \"%s\",\n  \"node_count\": %d,\n  \"sample_period\": %g,\n"
               "  \"nodes\": [\n",
            etc_rts.priv->lb->name, n, s ? s->period : 0.0);
    for (int k = 0; k < n; k++) {
        fprintf(f, "    {\"node\": %d, ", k);
        json_node(f, &all[k].prof, &all[k]);
        fprintf(f, "}%s\n", k + 1 < n ? "," : "");
    }
    etc_prof tot = totals(all, n);
    fprintf(f, "  ],\n  \"totals\": {\"nodes\": %d, ", n);
    json_node(f, &tot, NULL);
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
    etc_prof_state *s = p->prof;
    int n = etc_rts.num_nodes;
    if (etc_rts.node_id != 0) {
        send_profile(s);
        return;
    }
    etc_prof_node *all = prof_table();
    all[0].prof = etc_rts.prof;
    if (s && s->nidle)
        add_idle(&all[0], s->idle, s->nidle);
    all[0].dropped = s ? s->dropped : 0;
    all[0].done = 1;
    while (p->prof_reports < n - 1) {
        if (etc_net_poll() == 0)
            etc_net_wait(0.1);
    }
    fflush(stdout);
    print_profile(all, n);
    const char *out = getenv("ETC_PROF_OUT");
    if (out && *out)
        write_json(out, all, n);
    for (int k = 0; k < n; k++)
        free(all[k].idle);
    free(all);
    p->prof_all = NULL;
}
