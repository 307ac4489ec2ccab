/* trace.c: the tracing build (etcc -trace, -DETC_TRACE; docs/tracing.md).
 *
 * Each node writes fixed-size binary records to ETC_TRACE_DIR/node-K.bin (a
 * buffer of them at a time) and, at the end, ETC_TRACE_DIR/node-K.json: the node,
 * the counts and the program's threaded functions (thread addresses to names and
 * .tc lines). etcrun merges the nodes' files into one Chrome Trace Event file
 * (etcpre/trace/merge.py). What is recorded:
 *
 *   RUN     a thread ran: start, end, its id, what enabled it (a slot's event,
 *           or with ETC_TRACE_CAUSE the one thread whose INVOKE, TOKEN, CALL,
 *           SPAWN or RETURN started it), the thread's address and its frame;
 *   EDGE    the running thread (or, in a handler, the thread that sent the
 *           message) signalled a slot: it fed the slot's event;
 *   IDLE    an idle period; LB balancer activity; MSG a message's handler;
 *   TOKSEND, TOKRECV  a token moved by the balancer (its event travels with it);
 *   COUNT   the ready queue's and the token deque's lengths;
 *   CLOCK   a tick count and CLOCK_MONOTONIC read together: the records' times
 *           are ticks (the time-stamp counter where there is one: a third of the
 *           cost of clock_gettime), which the merger maps to nanoseconds by the
 *           CLOCK records around them (one starts the file and one ends every
 *           buffer written, so a node that dies keeps the points its records need).
 *
 * Ids: a thread run is (node + 1) << 40 | n, n counting the node's runs from 1;
 * a slot's event likewise in its own count. A thread depends on the thread that
 * started it, or on every thread that fed the slot event that enabled it: those
 * are the edges of the run's graph (etctrace summary computes work and span).
 *
 * Without ETC_TRACE this file is empty: the normal build has no trace symbol. */
#ifdef ETC_TRACE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "core/rts.h"

const char etc_abi_trace = 1;

uint64_t etc_trace_cur;
uint64_t etc_trace_pending;

/* One record: 56 bytes in the machine's byte order (docs/tracing.md). */
typedef struct {
    uint32_t kind, aux;
    uint64_t t0, t1, a, b, c, d;
} trace_rec;
_Static_assert(sizeof(trace_rec) == 56, "trace records are 56 bytes");

enum {
    REC_RUN = 1,  /* t0 t1, a thread id, b event or cause, c thread address, d frame */
    REC_EDGE,     /* a slot's event, b thread id that fed it */
    REC_IDLE,     /* t0 t1, aux 1: a token from another node ended it */
    REC_LB,       /* t0 t1, aux: 0 idle hook, 1 boundary hook, 2 message (a: from) */
    REC_TOKSEND,  /* t0, a event of the token, aux destination */
    REC_TOKRECV,  /* t0, a event of the token, aux source */
    REC_COUNT,    /* t0, a ready queue length, b token deque length */
    REC_MSG,      /* t0 t1, aux message type, a source node */
    REC_CLOCK,    /* t0 ticks, t1 CLOCK_MONOTONIC ns, read together */
};

#define TRACE_BUF 8192
#define TRACE_DEFAULT_LIMIT 2000000ULL
/* a counter sample at most every ~50 us of threads (ticks: ~3 GHz time-stamp counter) */
#if defined(__x86_64__) || defined(__i386__)
#define COUNT_INTERVAL 150000ULL
#else
#define COUNT_INTERVAL 50000ULL
#endif

static struct {
    int fd;              /* -1: not writing */
    char dir[4096];
    trace_rec buf[TRACE_BUF];
    size_t n;
    uint64_t kept, limit, dropped;
    uint64_t tag;        /* (node + 1) << 40 */
    uint64_t threads, events;
    void *frame;         /* the activation frame thread 0 made (etc_trace_frame) */
    uint64_t last_count;
    uint64_t lb_activity; /* balancer messages and tokens sent */
    uint64_t eid_out;    /* the token's event, for the message being sent */
    uint64_t eid_in;     /* the event a received token message carried */
    uint64_t tokens_in;
    uint64_t start_ns;
    /* the clock exchange at the end (clock_offsets) */
    int clock_done;           /* a node: node 0 said it has what it needs */
    uint64_t pong_seq, pong_node_ns, pong_at;
    int64_t *offsets;         /* node 0: each node's clock less node 0's, ns */
    uint64_t *rtts;           /* node 0: the round trip each was measured in */
} tracer = {.fd = -1};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return now_ns();
#endif
}


static void flush_buf(void)
{
    const char *p = (const char *)tracer.buf;
    size_t left = tracer.n * sizeof(trace_rec);
    while (left && tracer.fd >= 0) {
        ssize_t w = write(tracer.fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            fprintf(stderr, "etc: warning: node %d: cannot write the trace to %s: %s; the "
                    "rest of this node's trace is lost\n", etc_rts.node_id, tracer.dir,
                    strerror(w < 0 ? errno : ENOSPC));
            close(tracer.fd);
            tracer.fd = -1;
            break;
        }
        p += w;
        left -= (size_t)w;
    }
    tracer.n = 0;
}

static void put(uint32_t kind, uint32_t aux, uint64_t t0, uint64_t t1, uint64_t a, uint64_t b,
                uint64_t c, uint64_t d)
{
    if (tracer.fd < 0)
        return;
    if (tracer.kept >= tracer.limit) {
        tracer.dropped++;
        return;
    }
    tracer.buf[tracer.n++] = (trace_rec){kind, aux, t0, t1, a, b, c, d};
    tracer.kept++;
    if (tracer.n == TRACE_BUF - 1) { /* every buffer ends with a clock point */
        uint64_t t = ticks();
        tracer.buf[tracer.n++] = (trace_rec){REC_CLOCK, 0, t, now_ns(), 0, 0, 0, 0};
        flush_buf();
    }
}

static void count_now(uint64_t t)
{
    tracer.last_count = t;
    put(REC_COUNT, 0, t, t, etc_rts.rq.tail - etc_rts.rq.head, etc_rts.tq.tail - etc_rts.tq.head,
        0, 0);
}

static uint64_t env_count(const char *name, uint64_t dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    uint64_t v = 0;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9' || v > UINT64_MAX / 10 - 1)
            etc_die("%s='%s' is not a count of records", name, s);
        v = v * 10 + (uint64_t)(*c - '0');
    }
    if (v == 0)
        etc_die("%s='%s' is not a count of records", name, s);
    return v;
}

void etc_trace_settings(void)
{
    const char *dir = getenv("ETC_TRACE_DIR");
    if (!dir || !*dir)
        return; /* a tracing build run without etcrun --trace: ids only */
    tracer.limit = env_count("ETC_TRACE_LIMIT", TRACE_DEFAULT_LIMIT);
    snprintf(tracer.dir, sizeof tracer.dir, "%s", dir);
}

void etc_trace_start(void)
{
    tracer.tag = (uint64_t)(etc_rts.node_id + 1) << 40;
    tracer.start_ns = now_ns();
    tracer.last_count = ticks();
    if (!tracer.dir[0])
        return;
    char path[4200];
    snprintf(path, sizeof path, "%s/node-%d.bin", tracer.dir, etc_rts.node_id);
    tracer.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (tracer.fd < 0) /* the run has started: a failure of it */
        etc_fatal("cannot write the trace (ETC_TRACE_DIR): %s: %s", path, strerror(errno));
    uint64_t t = ticks(); /* the first clock point (not one of the limit's records) */
    tracer.buf[tracer.n++] = (trace_rec){REC_CLOCK, 0, t, now_ns(), 0, 0, 0, 0};
}

void etc_trace_signal(etc_slot *s)
{
    if (!s->trace_eid)
        s->trace_eid = tracer.tag | ++tracer.events;
    if (etc_trace_cur)
        put(REC_EDGE, 0, 0, 0, s->trace_eid, etc_trace_cur, 0, 0);
}

void etc_trace_frame(void *fp)
{
    tracer.frame = fp;
}

void etc_trace_run(etc_thread ip, void *fp, uint64_t eid)
{
    uint64_t outer = etc_trace_cur;
    void *outer_frame = tracer.frame;
    uint64_t id = tracer.tag | ++tracer.threads;
    etc_trace_cur = id;
    tracer.frame = NULL;
    if (tracer.fd < 0) { /* not recording: the ids alone */
        ip(fp);
        etc_trace_cur = outer;
        tracer.frame = outer_frame;
        return;
    }
    uint64_t t0 = ticks();
    ip(fp);
    uint64_t t1 = ticks();
    put(REC_RUN, 0, t0, t1, id, eid, (uint64_t)(uintptr_t)ip,
        (uint64_t)(uintptr_t)(tracer.frame ? tracer.frame : fp));
    etc_trace_cur = outer;
    tracer.frame = outer_frame;
    if (t1 - tracer.last_count >= COUNT_INTERVAL)
        count_now(t1);
}

uint64_t etc_trace_idle_begin(void)
{
    uint64_t t = ticks();
    count_now(t);
    return t;
}

void etc_trace_idle_end(uint64_t t0, uint64_t tokens_before)
{
    uint64_t t = ticks();
    put(REC_IDLE, tracer.tokens_in != tokens_before, t0, t, 0, 0, 0, 0);
    count_now(t);
}

uint64_t etc_trace_tokens_in(void)
{
    return tracer.tokens_in;
}

void etc_trace_lb_begin(etc_trace_span *s)
{
    s->t0 = ticks();
    s->activity = tracer.lb_activity;
}

void etc_trace_lb_end(const etc_trace_span *s, int what)
{
    if (tracer.lb_activity != s->activity)
        put(REC_LB, (uint32_t)what, s->t0, ticks(), 0, 0, 0, 0);
}

void etc_trace_lb_sent(void)
{
    tracer.lb_activity++;
}

void etc_trace_token_sent(const etc_tok *tok, int dest)
{
    tracer.lb_activity++;
    tracer.eid_out = tok->trace_eid;
    put(REC_TOKSEND, (uint32_t)dest, ticks(), 0, tok->trace_eid, 0, 0, 0);
}

void etc_trace_token_received(etc_tok *tok, int src)
{
    tok->trace_eid = tracer.eid_in;
    tracer.tokens_in++;
    put(REC_TOKRECV, (uint32_t)src, ticks(), 0, tracer.eid_in, 0, 0, 0);
}

/* Every message starts with the thread that sent it and, for a token, its event. */
typedef struct {
    uint64_t cause, eid;
} trace_prefix;

void etc_trace_send(int dest, int type, const void *a, size_t alen, const void *b, size_t blen)
{
    trace_prefix o = {etc_trace_cur, tracer.eid_out};
    tracer.eid_out = 0;
    unsigned char small[256];
    unsigned char *buf = sizeof o + alen <= sizeof small ? small : etc_xmalloc(sizeof o + alen);
    memcpy(buf, &o, sizeof o);
    if (alen)
        memcpy(buf + sizeof o, a, alen);
    etc_net_send(dest, type, buf, sizeof o + alen, b, blen);
    if (buf != small)
        free(buf);
}

void etc_trace_receive(etc_trace_msg *outer, const void **body, size_t *len, int src, int type)
{
    trace_prefix o;
    if (*len < sizeof o)
        etc_fatal("malformed message (type %d, %zu bytes) from node %d", type, *len, src);
    memcpy(&o, *body, sizeof o);
    *body = (const char *)*body + sizeof o;
    *len -= sizeof o;
    outer->cause = etc_trace_cur;
    outer->eid = tracer.eid_in;
    outer->t0 = ticks();
    etc_trace_cur = o.cause;
    tracer.eid_in = o.eid;
}

void etc_trace_received(const etc_trace_msg *outer, int src, int type)
{
    etc_trace_cur = outer->cause;
    tracer.eid_in = outer->eid;
    /* the messages that carry work and the balancer's; not termination's chatter */
    if (type <= ETC_M_TOKEN || type >= ETC_LB_MSG)
        put(REC_MSG, (uint32_t)type, outer->t0, ticks(), (uint64_t)src, 0, 0, 0);
}

/* TRACE_CLOCK (docs/protocols.md M1): node 0 sends PING (seq, 0) to a node, which
 * answers PONG (seq, its CLOCK_MONOTONIC); node 0 takes the node's offset from the
 * round trip with the smallest delay, assuming the two halves took as long; then DONE. */
enum { CLOCK_PING = 1, CLOCK_PONG, CLOCK_DONE };
typedef struct {
    uint64_t what, seq, ns;
} clock_msg;

void etc_trace_clock_message(int src, const void *body, size_t len)
{
    clock_msg m;
    if (len != sizeof m)
        etc_fatal("malformed message (type %d, %zu bytes) from node %d", ETC_M_TRACE_CLOCK,
                  len, src);
    memcpy(&m, body, sizeof m);
    if (m.what == CLOCK_PING) {
        clock_msg r = {CLOCK_PONG, m.seq, now_ns()};
        etc_send(src, ETC_M_TRACE_CLOCK, &r, sizeof r, NULL, 0);
        etc_net_flush();
    } else if (m.what == CLOCK_PONG) {
        tracer.pong_at = now_ns();
        tracer.pong_node_ns = m.ns;
        tracer.pong_seq = m.seq;
    } else if (m.what == CLOCK_DONE) {
        tracer.clock_done = 1;
    }
}

#define CLOCK_ROUNDS 8

/* Node 0 measures every node's clock against its own (for tcp nodes on other hosts,
 * whose CLOCK_MONOTONIC has another origin); the others answer until it is done. */
static void clock_offsets(void)
{
    int n = etc_rts.num_nodes;
    if (n == 1)
        return;
    if (etc_rts.node_id != 0) {
        double give_up = etc_time() + 30;
        while (!tracer.clock_done && etc_time() < give_up)
            if (etc_net_poll() == 0)
                etc_net_wait(0.01);
        return;
    }
    tracer.offsets = etc_xmalloc((size_t)n * sizeof *tracer.offsets);
    tracer.rtts = etc_xmalloc((size_t)n * sizeof *tracer.rtts);
    tracer.offsets[0] = 0;
    tracer.rtts[0] = 0;
    uint64_t seq = 0;
    for (int k = 1; k < n; k++) {
        tracer.rtts[k] = UINT64_MAX;
        tracer.offsets[k] = 0;
        for (int r = 0; r < CLOCK_ROUNDS; r++) {
            clock_msg m = {CLOCK_PING, ++seq, 0};
            uint64_t sent = now_ns();
            etc_send(k, ETC_M_TRACE_CLOCK, &m, sizeof m, NULL, 0);
            etc_net_flush();
            double give_up = etc_time() + 1;
            while (tracer.pong_seq != seq && etc_time() < give_up)
                etc_net_poll();
            if (tracer.pong_seq != seq)
                break; /* no answer: the offset stays unknown (0) */
            uint64_t rtt = tracer.pong_at - sent;
            if (rtt < tracer.rtts[k]) {
                tracer.rtts[k] = rtt;
                tracer.offsets[k] = (int64_t)(tracer.pong_node_ns - (sent + rtt / 2));
            }
        }
        clock_msg done = {CLOCK_DONE, 0, 0};
        etc_send(k, ETC_M_TRACE_CLOCK, &done, sizeof done, NULL, 0);
    }
    etc_net_flush();
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void etc_trace_finish(void)
{
    if (tracer.fd < 0 && !tracer.dir[0])
        return;
    clock_offsets();
    count_now(ticks());
    if (tracer.fd >= 0) { /* the last clock point, whatever the limit */
        uint64_t t = ticks();
        tracer.buf[tracer.n++] = (trace_rec){REC_CLOCK, 0, t, now_ns(), 0, 0, 0, 0};
    }
    flush_buf();
    if (tracer.fd >= 0)
        close(tracer.fd);
    tracer.fd = -1;
    char path[4200], tmp[4210];
    snprintf(path, sizeof path, "%s/node-%d.json", tracer.dir, etc_rts.node_id);
    snprintf(tmp, sizeof tmp, "%s.part", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "etc: warning: node %d: cannot write %s: %s\n", etc_rts.node_id, tmp,
                strerror(errno));
        return;
    }
    fprintf(f, "{\"version\": 1, \"node\": %d, \"nodes\": %d, \"record_size\": %zu, "
            "\"records\": %llu, \"dropped\": %llu, \"limit\": %llu, \"start_ns\": %llu, "
            "\"end_ns\": %llu, \"threads\": %llu,",
            etc_rts.node_id, etc_rts.num_nodes, sizeof(trace_rec), (unsigned long long)tracer.kept,
            (unsigned long long)tracer.dropped, (unsigned long long)tracer.limit,
            (unsigned long long)tracer.start_ns, (unsigned long long)now_ns(),
            (unsigned long long)tracer.threads);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    fprintf(f, " \"host\": ");
    json_string(f, host);
    if (tracer.offsets) {
        fprintf(f, ",\n \"clock_offsets_ns\": [");
        for (int k = 0; k < etc_rts.num_nodes; k++)
            fprintf(f, "%s%lld", k ? ", " : "", (long long)tracer.offsets[k]);
        fprintf(f, "],\n \"clock_rtts_ns\": [");
        for (int k = 0; k < etc_rts.num_nodes; k++)
            fprintf(f, "%s%lld", k ? ", " : "",
                    tracer.rtts[k] == UINT64_MAX ? -1LL : (long long)tracer.rtts[k]);
        fprintf(f, "]");
    }
    fprintf(f, ",\n \"functions\": [");
    const char *sep = "";
    for (etc_fn_info *const *fn = etc_fns_begin(); fn != etc_fns_end(); fn++) {
        fprintf(f, "%s\n  {\"name\": ", sep);
        json_string(f, (*fn)->name);
        fprintf(f, ", \"file\": ");
        json_string(f, (*fn)->file);
        fprintf(f, ", \"line\": %d, \"threads\": [", (*fn)->line);
        for (int k = 0; k < (*fn)->nthreads; k++)
            fprintf(f, "%s{\"ip\": %llu, \"number\": %d, \"line\": %d}", k ? ", " : "",
                    (unsigned long long)(uintptr_t)(*fn)->threads[k].ip,
                    (*fn)->threads[k].number, (*fn)->threads[k].line);
        fprintf(f, "]}");
        sep = ",";
    }
    fprintf(f, "]}\n");
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        fprintf(stderr, "etc: warning: node %d: cannot write %s: %s\n", etc_rts.node_id, path,
                strerror(errno));
}
#else
typedef int etc_trace_unused; /* ISO C: a translation unit is not empty */
#endif
