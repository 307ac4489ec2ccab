/* rts.h: the runtime core's internal interface (not seen by generated code).
 *
 * The core is the scheduler (sched.c), the memory of a node (alloc.c), the
 * remote operations and their message handlers (remote.c), the glue to the
 * balancers (balance.c), termination detection (term.c), the checking build
 * (check.c), profiling (prof.c) and fatal errors (fatal.c).
 */
#ifndef ETC_RTS_H
#define ETC_RTS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ETC_INSIDE_RUNTIME /* etc.h: not the wrappers of generated code's calls */
#include "etc.h"
#include "lb/lb.h"
#include "net/net.h"

/* Message types: indexes into the core's handler table (remote.c), which also
 * says which carry work (they may make a node busy, so termination detection
 * counts them: the types up to ETC_M_TOKEN); the others are control messages
 * that never do. docs/protocols.md (M1) lists them all. */
enum etc_msg_type {
    ETC_M_SYNC = 1,  /* slot address */
    ETC_M_INCR,      /* slot address, increment */
    ETC_M_SPAWN,     /* frame, thread */
    ETC_M_DATA,      /* store a word at an address, then signal a slot */
    ETC_M_GET,       /* read a word here and DATA it to a GLOBAL address */
    ETC_M_PUT,       /* store bytes (a block move piece), maybe signal a slot */
    ETC_M_BLKGET,    /* block move from here to a GLOBAL address */
    ETC_M_INVOKE,    /* run thread 0 of a function here */
    ETC_M_TOKEN,     /* a token, handed to the balancer */
    ETC_M_TERM_PROBE, /* detector -> node: report your counts */
    ETC_M_TERM_STATE, /* node -> detector: idle flag and counts */
    ETC_M_TERM_IDLE,  /* node -> detector: I was busy at the last probe, now idle */
    ETC_M_TERM_EXIT,  /* detector -> node: the run is over */
    ETC_M_PROF,       /* node -> node 0: profile counters at the end */
    ETC_M_WAITING,    /* node -> node 0: activations still alive at the end */
    ETC_M_TRACE_CLOCK, /* -trace: node 0 <-> node: clock offsets at the end (trace.c) */
    ETC_M_ADAPT,      /* node -> every node: I am dormant / awake again (adapt.c) */
    ETC_M_TYPES = ETC_NET_TYPES
};
_Static_assert(ETC_LB_MSG + ETC_LB_MSG_COUNT == ETC_NET_TYPES,
               "the balancers' message types end the handler table");

/* Termination detection state (term.c). */
typedef struct etc_term {
    uint64_t sent, recv; /* work messages */
    int idle;
    int over;            /* TERM_EXIT seen: leave the scheduler */
    /* the node's side of a wave */
    int answered_busy;   /* answered a probe while busy: say when idle */
    uint64_t said_sent, said_recv; /* the counts of its last answer (W4) */
    /* the detector's side (node 0) */
    uint32_t wave;
    int replies;
    int all_idle;
    uint64_t sum_sent, sum_recv;
    uint64_t prev_sent, prev_recv;
    int prev_ok;
    int wave_running;
    int want_wave;
    int delay_from_step; /* idle entered: the wave's delay starts at the next idle step */
    double next_wave;
} etc_term;

#ifdef ETC_CHECK
/* What every message of the checking build starts with: where the operation
 * that sent it ran (its .tc line, the thread, the node), handed on by handlers
 * that send on, so that a report on another node names the sender. */
typedef struct etc_origin {
    uint64_t file, ip; /* const char *, etc_thread */
    int32_t line, node;
} etc_origin;
#endif

/* Self-allocating nodes (adapt.c). */
typedef struct etc_adapt {
    int enabled;                  /* ETC_ADAPT=1 on a run of several nodes */
    int dormant;                  /* this node: no balancer requests, no unsolicited tokens */
    int cpus;                     /* the CPUs the program may use */
    double next_check;            /* when an idle step next reads the load */
    unsigned char *dormant_nodes; /* what each node last said (ADAPT) */
} etc_adapt;

typedef struct etc_node_private {
    int in_thread_poll; /* inside POLL() in a running thread: busy */
    const etc_lb_ops *lb;
    void *lb_state;
    uint64_t rng;
    etc_term term;
    etc_adapt adapt;
    int waiting_reports;            /* node 0: end-of-run reports received (deadlock.c) */
    struct etc_waiting *waiting;    /* node 0: what they said */
    int prof_enabled;   /* a -prof build */
    int prof_reports;   /* node 0: nodes whose whole profile has come */
    struct etc_prof_node *prof_all; /* node 0: every node's profile */
    struct etc_prof_state *prof;    /* the sampler and the idle periods (prof.c) */
    double start_time;
    double step_clock; /* etc_time() at the start of the idle step under way, else 0 */
#ifdef ETC_CHECK
    struct etc_frame_hdr *check_live; /* live frames, for the end-of-run report */
    int check_quarantine_n;           /* freed frames not yet reused (check.c) */
    void **check_quarantine;
    size_t *check_quarantine_size;
    int check_quarantine_next;
    etc_origin check_from; /* the message being handled, if check_from_valid */
    int check_from_valid;
#endif
} etc_node_private;

/* remote.c: every send counts work messages; etc_deliver (net/net.h) runs
 * the handler table */
void etc_send(int dest, int type, const void *a, size_t alen, const void *b, size_t blen);
/* A message a handler cannot take: a fatal error naming it. */
void etc_bad_message(int src, int type, size_t len) __attribute__((noreturn));
/* Copies a fixed-size message body out (bodies need not be aligned), or ends the
 * run if the size is wrong: `exact` 0 allows bytes after the fixed part. Inline,
 * so that the copy of a constant size is a few moves, not a call. */
static inline void etc_take_message(void *m, size_t size, const void *body, size_t len,
                                    int exact, int src, int type)
{
    if (exact ? len != size : len < size)
        etc_bad_message(src, type, len);
    memcpy(m, body, size);
}

/* balance.c */
void etc_balance_init(const char *name);
double etc_balance_idle(void);
void etc_balance_last_token(void); /* the deque just gave its last token (lb.h) */
void etc_balance_token_message(int src, int type, const void *body, size_t len);
void etc_balance_message(int src, int type, const void *body, size_t len);

/* term.c; the counts of W1 are kept inline: they are taken once per message */
static inline void etc_term_work_sent(void)
{
    etc_rts.priv->term.sent++;
}
static inline void etc_term_work_received(void)
{
    etc_rts.priv->term.recv++;
}
void etc_term_enter_idle(void);
void etc_term_leave_idle(void);
void etc_term_idle_step(void);
double etc_term_wait_hint(void);
void etc_term_message(int src, int type, const void *body, size_t len);

/* adapt.c: ETC_ADAPT (0 or 1; anything else: etc_die, before the nodes start) */
int etc_adapt_setting(void);
void etc_adapt_init(int enabled);
/* Every idle step: reads the load when due and becomes dormant or wakes (A1);
 * returns the seconds until the next read (< 0: adapt is off). */
double etc_adapt_idle_step(void);
void etc_adapt_message(int src, int type, const void *body, size_t len);
/* Where a token the balancer sends to `dest` goes (A2): `dest`, or the next
 * awake node after it if `dest` is dormant and the token answers no request;
 * -1: every other node is dormant, keep it. */
int etc_adapt_token_dest(int dest, int reply);

/* functions.c: the program's threaded functions (etc.h etc_fn_info) */
etc_fn_info *const *etc_fns_begin(void);
etc_fn_info *const *etc_fns_end(void);
const etc_fn_info *etc_fn_of_thread(etc_thread ip, const etc_thread_info **thread);
int etc_fn_is_known(const void *fn);
void etc_describe_thread(etc_thread ip, char *buf, size_t cap);
int etc_thread_start(etc_thread ip, const char **file, int *line);
/* The thread this node is in (NULL: none): the innermost thread function on the
 * stack (the checking build keeps it in etc_rts.running, for every message's
 * origin). */
etc_thread etc_current_thread(void);
etc_thread etc_thread_busy_with(void); /* the same, or the next thread to start */
/* etc_describe_nodes: net/net.h */

/* deadlock.c: at the end of a run, what is still waiting. Every node calls it;
 * node 0 reports and returns 1 if MAIN never ended (a deadlock). */
int etc_waiting_report(void);
void etc_waiting_message(int src, const void *body, size_t len);

/* A slot still waiting at the end (checking build): where it was armed. Names and
 * files are pointers into the executable, the same on every node. */
typedef struct etc_waiting_slot {
    uint64_t fname, file;
    int32_t slot, cnt, line, node;
} etc_waiting_slot;
#ifdef ETC_CHECK
int etc_check_waiting_slots(etc_waiting_slot *out, int max);
/* check.c: messages carry their origin (etc_send, etc_deliver) */
void etc_check_send(int dest, int type, const void *a, size_t alen, const void *b, size_t blen);
void etc_check_receive(etc_origin *outer, const void **body, size_t *len, int src, int type);
void etc_check_received(const etc_origin *outer);
#endif

/* crash.c: fatal signals and interrupts reported with the thread and line */
void etc_crash_init(void);

/* cpus.c: the node count ETC_NODES=auto means (etc_usable_cpus is in net/net.h). */
int etc_auto_nodes(void);
/* Answers ETC_QUERY on stdout (etcrun's question to a remote host); main's exit status. */
int etc_cpus_answer_query(const char *query);
/* The machine's runnable tasks now, the caller included (/proc/loadavg's fourth
 * field, or the file ETC_LOADAVG names); 0 if it cannot be read. */
int etc_runnable_tasks(void);
/* The address of the instruction a signal interrupted (0 if unknown here). */
uintptr_t etc_interrupted_pc(const void *ucontext);

/* debuginfo.c: the executable's symbol table (every build) and line table
 * (checking and -prof builds). The checking build finds the .tc line of a code
 * address; the -prof build walks every address range with its file and line. */
void etc_debuginfo_init(void);
const char *etc_symbol_at(uintptr_t addr);
int etc_have_symbols(void); /* 0: stripped: no thread can be named */
#ifdef ETC_CHECK
int etc_lines_find(uintptr_t pc, const char **file, int *line);
#endif
#ifdef ETC_PROF
typedef void (*etc_lines_fn)(void *ctx, uintptr_t lo, uintptr_t hi, const char *dir,
                             const char *name, int line);
int etc_lines_each(etc_lines_fn fn, void *ctx); /* 0: no line table */
#endif

/* prof.c: the -prof build's sampler (C.1) runs from etc_prof_start() to
 * etc_prof_stop(end); idle() records each idle period (C.2). Its setting
 * (ETC_PROF_HZ) is read by etc_prof_settings() before the nodes start: a bad
 * one is the command line's error (etc_die, status 2), not a failure of the run. */
void etc_prof_settings(void);
void etc_prof_start(void);
void etc_prof_stop(double end);
void etc_prof_idle_period(double start, double end, int balancer);
void etc_prof_finish(void);
/* The part a message's handler belongs to (the current one for the rest). */
uint32_t etc_prof_part_of_message(int type);
void etc_prof_message(int src, const void *body, size_t len);

/* fatal.c: etc_fatal, etc_vfatal, etc_die and etc_assert_fail (net/net.h) */
/* A fatal error the running thread caused: names the thread and, in the
 * checking build, the .tc line of the primitive (or the sender's, in a handler). */
void etc_fatal_in_thread(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* "the run has 2 nodes: 0-1", for messages about a node that does not exist */
const char *etc_run_nodes(char *buf, size_t cap);

/* alloc.c */
void etc_alloc_init(void); /* also etc_xmalloc, etc_xrealloc (net/net.h) */
void etc_tq_push_head(etc_tok t);
int etc_tq_pop_head(etc_tok *out);

#ifdef ETC_TRACE
/* trace.c: the tracing build (etc.h declares what generated code calls) */
typedef struct etc_trace_span {
    uint64_t t0, activity;
} etc_trace_span;
typedef struct etc_trace_msg {
    uint64_t cause, eid, t0;
} etc_trace_msg;
/* ETC_TRACE_DIR and ETC_TRACE_LIMIT, read before the nodes start */
void etc_trace_settings(void);
void etc_trace_start(void);
void etc_trace_finish(void);
uint64_t etc_trace_idle_begin(void);
void etc_trace_idle_end(uint64_t t0, uint64_t tokens_before);
uint64_t etc_trace_tokens_in(void);
void etc_trace_lb_begin(etc_trace_span *s);
void etc_trace_lb_end(const etc_trace_span *s, int what);
void etc_trace_lb_sent(void);
void etc_trace_token_sent(const etc_tok *tok, int dest);
void etc_trace_token_received(etc_tok *tok, int src);
void etc_trace_send(int dest, int type, const void *a, size_t alen, const void *b, size_t blen);
void etc_trace_receive(etc_trace_msg *outer, const void **body, size_t *len, int src, int type);
void etc_trace_received(const etc_trace_msg *outer, int src, int type);
void etc_trace_clock_message(int src, const void *body, size_t len);
#define ETC_TRACE_LB(what, call)         \
    do {                                 \
        etc_trace_span trace_span_;      \
        etc_trace_lb_begin(&trace_span_); \
        call;                            \
        etc_trace_lb_end(&trace_span_, (what)); \
    } while (0)
#else
#define ETC_TRACE_LB(what, call) call
#endif

/* The clock for deadlines: an idle step (sched.c) reads it once for all its
 * parts, which each took a clock read of their own (25 ns) before. */
static inline double etc_step_time(void)
{
    double t = etc_rts.priv->step_clock;
    return t > 0 ? t : etc_time();
}

static inline int etc_work_here(void)
{
    return etc_rts.rq.head != etc_rts.rq.tail || etc_rts.tq.head != etc_rts.tq.tail ||
           etc_rts.priv->in_thread_poll;
}

#ifdef ETC_PROF
#define ETC_PROF_ADD(field, n) (etc_rts.prof.field += (n))
#else
#define ETC_PROF_ADD(field, n) ((void)0)
#endif

/* -prof, C.1: the runtime marks the parts the address of an instruction cannot
 * tell (idle, polling, the balancer, message handlers) in etc_rts.part; in a
 * thread and in the scheduler the word is ETC_PART_APPLICATION and the sampled
 * address decides between application, thread management, synchronization and
 * scheduling (prof.c). */
#ifdef ETC_PROF
#define ETC_PART_GET() atomic_load_explicit(&etc_rts.part, memory_order_relaxed)
#define ETC_PART_SET(p) atomic_store_explicit(&etc_rts.part, (uint32_t)(p), memory_order_relaxed)
#define ETC_PART_BEGIN(p)                      \
    uint32_t etc_part_outer_ = ETC_PART_GET(); \
    ETC_PART_SET(p)
#define ETC_PART_END() ETC_PART_SET(etc_part_outer_)
#else
#define ETC_PART_SET(p) ((void)0)
#define ETC_PART_BEGIN(p) ((void)0)
#define ETC_PART_END() ((void)0)
#endif

#endif
