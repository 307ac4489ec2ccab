/* sched.c: a node's life: start-up, the scheduler loop, idleness, the end.
 *
 * The scheduler runs enabled threads from the ready queue in FIFO order; when
 * it is empty it expands the newest token (LIFO, thesis 2.3.2); when both are
 * empty the node is idle: it polls the network, lets the balancer look for
 * work, takes part in termination detection and, after a short spin, blocks
 * in the network layer until a message arrives. With ETC_ADAPT=1 an idle node
 * of an oversubscribed machine may become dormant (adapt.c): it then skips the
 * balancer and the spin, and blocks until a message or its next load check. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/rts.h"

/* etcc -lb NAME links a strong definition of this; the library's is empty. */
__attribute__((weak)) const char etc_default_lb[] = "";

#ifdef ETC_CHECK
const char etc_abi_check = 1;
#elif !defined(ETC_TRACE) /* the tracing build's is in trace.c */
const char etc_abi_plain = 1;
#endif

static etc_node_private node_private;

uint64_t etc_net_key;

uintptr_t etc_make_tag(int node)
{
#ifdef ETC_CHECK
    if (node < 0 || node >= etc_rts.num_nodes)
        etc_fatal("MAKE_GPTR: node %d does not exist (the run has %d node%s)", node,
                  etc_rts.num_nodes, etc_rts.num_nodes == 1 ? "" : "s");
#endif
    return ETC_GTAG(node);
}

/* Between two threads: messages in, and the sender-initiated balancers (the
 * hook is looked up once per run). The layer's watched word lets the common
 * case, where nothing arrived and nothing waits to be sent, cost one load and a
 * compare, and no call. */
typedef struct {
    int multi;
    _Atomic uint64_t *word; /* etc_net_boundary_word(), or NULL */
    void (*lb_boundary)(void);
} boundary_state;

static inline int net_quiet(const boundary_state *b)
{
    return b->word && atomic_load_explicit(b->word, memory_order_relaxed) == etc_net_key;
}

/* The general boundary of a run on several nodes (run_loop, LOOP_GENERAL). */
static inline void boundary(const boundary_state *b)
{
    if (!net_quiet(b)) {
        ETC_PART_SET(ETC_PART_POLLING);
        etc_net_boundary();
        ETC_PART_SET(ETC_PART_APPLICATION);
    }
    if (b->lb_boundary) {
        ETC_PART_SET(ETC_PART_LOAD_BALANCING);
        ETC_TRACE_LB(1, b->lb_boundary());
        ETC_PART_SET(ETC_PART_APPLICATION);
    }
}

/* POLL(): messages are handled in the middle of a thread, so the node counts as
 * busy (for balancers and termination) even if its queues are empty. */
void etc_poll(void)
{
    if (etc_rts.num_nodes > 1) {
        ETC_PART_BEGIN(ETC_PART_POLLING);
        etc_rts.priv->in_thread_poll = 1;
        etc_net_poll();
        etc_net_flush();
        etc_rts.priv->in_thread_poll = 0;
        ETC_PART_END();
    }
}

/* CALL: the callee's thread 0 runs at once, on this node (Fig. 2.16). */
void etc_call(etc_thread fn, void *pp)
{
#ifdef ETC_CHECK
    etc_rts.running = fn;
#endif
#ifdef ETC_TRACE
    etc_trace_run(fn, pp, etc_trace_cur | ETC_TRACE_CAUSE); /* started by the caller */
#else
    fn(pp);
#endif
}

/* An idle node polls for SPIN_SECONDS before it blocks in the layer's wait
 * (half as long after a wait), taking the balancer and termination steps at
 * every POLLS_PER_STEP-th poll. */
#define SPIN_SECONDS 50e-6
enum { POLLS_PER_STEP = 8 };

/* With more nodes than cores a spinning node steals the core of a busy one: it
 * takes this many steps, yielding the CPU between them, then blocks (0: it may
 * spin). A yield is a task switch, as dear as a wake-up: one is enough. */
static int yield_steps(void)
{
    return etc_net_oversubscribed() ? 2 : 0;
}

/* Returns 1 when the run is over. */
static int idle(int yields)
{
    etc_node_private *p = etc_rts.priv;
#ifdef ETC_CHECK
    etc_rts.running = NULL;
#endif
    if (etc_rts.num_nodes == 1)
        return 1; /* nothing can arrive: the node, and so the run, is quiescent */
    ETC_PART_SET(ETC_PART_IDLE);
    int polls = 0, steps = 0, over = 0;
    double spin_end = -1; /* set at the first step */
#ifdef ETC_PROF
    double t0 = etc_time();
    uint64_t tokens_before = etc_rts.prof.tokens_received;
#endif
#ifdef ETC_TRACE
    uint64_t trace_t0 = etc_trace_idle_begin(), trace_tokens = etc_trace_tokens_in();
#endif
    etc_term_enter_idle();
    for (;;) {
        int got = etc_net_poll();
        if (etc_work_here())
            break;
        if (p->term.over) { /* no balancer step: the other nodes are leaving */
            over = 1;
            break;
        }
        /* The steps read the clock: a message's arrival waits half a loop for
         * its handling on average. (The first comes at once: a node that has
         * just run out of work asks for more, or goes dormant, first.) */
        if (!yields && !p->adapt.dormant && polls++ % POLLS_PER_STEP != 0) {
            if (got)
                spin_end = -1;
            continue; /* (no pause instruction: it would lengthen the loop) */
        }
        p->step_clock = etc_time();
        double wait, load_check_in = etc_adapt_idle_step();
        if (p->adapt.dormant)
            wait = load_check_in; /* A3: it asks the balancer for no work */
        else
            ETC_TRACE_LB(0, wait = etc_balance_idle());
        etc_term_idle_step();
        double now = p->step_clock;
        p->step_clock = 0;
        etc_net_flush();
        if (p->term.over) {
            over = 1;
            break;
        }
        if (etc_work_here())
            break;
        if (got) {
            steps = 0;
            spin_end = -1;
            continue;
        }
        if (!p->adapt.dormant) {
            if (yields && ++steps < yields) {
                sched_yield();
                continue;
            }
            if (!yields) {
                if (spin_end < 0)
                    spin_end = now + SPIN_SECONDS;
                if (now < spin_end)
                    continue;
            }
        }
        double due = etc_term_wait_hint(); /* (its own clock read: before a wait) */
        if (due >= 0 && (wait < 0 || due < wait))
            wait = due;
        etc_net_wait(wait);
        steps = yields / 2;
        spin_end = etc_time() + SPIN_SECONDS / 2;
    }
    etc_term_leave_idle();
#ifdef ETC_TRACE
    etc_trace_idle_end(trace_t0, trace_tokens);
#endif
#ifdef ETC_PROF
    /* every idle period counts, the last one too (a node that never gets work is
     * idle the whole run); it was a balancer's if a token ended it */
    double t1 = etc_time(), dt = t1 - t0;
    int balancer = !over && etc_rts.prof.tokens_received != tokens_before;
    etc_rts.prof.idle_periods++;
    etc_rts.prof.idle_time += dt;
    if (balancer) {
        etc_rts.prof.balancer_idle_periods++;
        etc_rts.prof.balancer_idle_time += dt;
    }
    etc_prof_idle_period(t0, t1, balancer);
    ETC_PART_SET(ETC_PART_APPLICATION);
#endif
    return over;
}

/* The scheduler loop, expanded once per kind of boundary (`kind` is a constant
 * at each call below): on one node there is nothing to check; with one watched
 * word, the layer's key and no balancer hook (smp) the check is a load through
 * a pointer kept in a register and a compare with a global; anything else
 * (tcp, balancers with a boundary hook) takes the general test. */
enum { LOOP_ONE_NODE, LOOP_ONE_WORD, LOOP_GENERAL };

static inline __attribute__((always_inline)) void run_loop(int kind, const boundary_state *b,
                                                          int yields)
{
    etc_rq *rq = &etc_rts.rq;
    etc_tq *tq = &etc_rts.tq;
    _Atomic uint64_t *const word = b->word;
    for (;;) {
        if (rq->head != rq->tail) {
            etc_closure c = rq->buf[rq->head++ & rq->mask];
#ifdef ETC_CHECK
            etc_check_dispatch(&c);
#endif
#ifdef ETC_CHECK
            etc_rts.running = c.ip; /* every message's origin names it */
#endif
#ifdef ETC_TRACE
            etc_trace_run(c.ip, c.fp, c.trace_eid);
#else
            c.ip(c.fp);
#endif
        } else if (tq->head != tq->tail) {
            etc_tok t = tq->buf[--tq->tail & tq->mask];
            if (kind != LOOP_ONE_NODE && tq->head == tq->tail)
                etc_balance_last_token();
#ifdef ETC_CHECK
            etc_rts.running = t.fn;
#endif
#ifdef ETC_TRACE
            etc_trace_run(t.fn, t.pp, t.trace_eid);
#else
            t.fn(t.pp);
#endif
        } else if (idle(yields)) {
            return;
        } else {
            continue;
        }
        if (kind == LOOP_ONE_WORD) {
            if (atomic_load_explicit(word, memory_order_relaxed) != etc_net_key) {
                ETC_PART_SET(ETC_PART_POLLING);
                etc_net_boundary();
                ETC_PART_SET(ETC_PART_APPLICATION);
            }
        } else if (kind == LOOP_GENERAL) {
            boundary(b);
        }
    }
}

static void run(void)
{
    int yields = yield_steps();
    const boundary_state b = {etc_rts.num_nodes > 1, etc_net_boundary_word(),
                              etc_rts.priv->lb->boundary};
    if (!b.multi)
        run_loop(LOOP_ONE_NODE, &b, yields);
    else if (b.word && !b.lb_boundary)
        run_loop(LOOP_ONE_WORD, &b, yields);
    else
        run_loop(LOOP_GENERAL, &b, yields);
}

static int env_nodes(void)
{
    const char *s = getenv("ETC_NODES");
    if (!s || !*s)
        return 0;
    if (strcmp(s, "auto") == 0) /* (seq runs one node whatever the machine) */
        return strcmp(etc_net_name, "seq") == 0 ? 1 : etc_auto_nodes();
    /* decimal digits only, as etcrun reads it (etcpre/cli/common.py node_count):
     * no sign, space or '_' */
    long n = 0;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9' || n > ETC_MAX_NODES)
            etc_die("ETC_NODES='%s' is not a node count (1 to %d, or auto)", s, ETC_MAX_NODES);
        n = n * 10 + (*c - '0');
    }
    if (n < 1 || n > ETC_MAX_NODES)
        etc_die("ETC_NODES='%s' is not a node count (1 to %d, or auto)", s, ETC_MAX_NODES);
    return (int)n;
}

static const char *lb_name(void)
{
    const char *s = getenv("ETC_LB");
    if (s && *s)
        return s;
    return etc_default_lb;
}

int main(int argc, char **argv)
{
    /* Whole lines, as the smp and tcp layers write them: a line printed before a
     * crash is not lost in a buffer. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    etc_rts.running = ETC_RUNNING_UNKNOWN; /* until a node says (crash.c) */
    const char *query = getenv("ETC_QUERY");
    if (query && *query)
        return etc_cpus_answer_query(query);
    int want = env_nodes();
    int adapt = etc_adapt_setting();
#ifdef ETC_PROF
    etc_prof_settings();
#endif
#ifdef ETC_TRACE
    etc_trace_settings();
#endif
    const char *lb = lb_name();
    if (*lb && !etc_lb_find(lb)) {
        fprintf(stderr, "etc: error: unknown load balancer '%s'; valid ones:", lb);
        for (const etc_lb_ops *const *o = etc_lb_all; *o; o++)
            fprintf(stderr, " %s", (*o)->name);
        fprintf(stderr, "\n");
        return 2;
    }
    int id = 0, n = 1;
    etc_net_start(want, &id, &n);
    etc_rts.node_id = id;
    etc_rts.num_nodes = n;
    etc_rts.gtag = ETC_GTAG(id);
    etc_rts.priv = &node_private;
#ifdef ETC_PROF
    node_private.prof_enabled = 1;
#endif
    etc_crash_init();
    etc_alloc_init();
    etc_balance_init(*lb ? lb : (n == 1 ? "nop" : "spn"));
    etc_adapt_init(adapt);
    ETC_PART_SET(ETC_PART_APPLICATION);
    node_private.start_time = etc_time();
#ifdef ETC_TRACE
    etc_trace_start();
#endif
    etc_prof_start();
    if (id == 0)
        etc_user_main(argc, argv);
    run();
    double end = etc_time();
    etc_prof_stop(end);
    etc_rts.prof.elapsed = end - node_private.start_time;
    int deadlock = etc_waiting_report();
    etc_prof_finish();
#ifdef ETC_TRACE
    etc_trace_finish();
#endif
    if (deadlock)
        etc_net_abort(); /* reported: the run ends with status 1 */
    etc_net_finish();
}
