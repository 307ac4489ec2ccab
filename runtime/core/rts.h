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
    double next_wave;
} etc_term;

typedef struct etc_node_private {
    int in_thread_poll; /* inside POLL() in a running thread: busy */
    const etc_lb_ops *lb;
    void *lb_state;
    uint64_t rng;
    etc_term term;
    int prof_enabled;   /* a -prof build */
    int prof_reports;   /* node 0: counters received at the end */
    etc_prof *prof_all; /* node 0: every node's counters */
    double start_time;
#ifdef ETC_CHECK
    struct etc_frame_hdr *check_live; /* live frames, for the end-of-run report */
    int check_quarantine_n;           /* freed frames not yet reused (check.c) */
    void **check_quarantine;
    size_t *check_quarantine_size;
    int check_quarantine_next;
#endif
} etc_node_private;

/* remote.c: every send counts work messages; etc_deliver (net/net.h) runs
 * the handler table */
void etc_send(int dest, int type, const void *a, size_t alen, const void *b, size_t blen);

/* balance.c */
void etc_balance_init(const char *name);
double etc_balance_idle(void);
void etc_balance_token_message(int src, int type, const void *body, size_t len);
void etc_balance_message(int src, int type, const void *body, size_t len);

/* term.c */
void etc_term_work_sent(void);
void etc_term_work_received(void);
void etc_term_enter_idle(void);
void etc_term_leave_idle(void);
void etc_term_idle_step(void);
double etc_term_wait_hint(void);
void etc_term_message(int src, int type, const void *body, size_t len);

/* prof.c */
void etc_prof_finish(void);
void etc_prof_message(int src, const void *body, size_t len);

/* fatal.c: etc_fatal, etc_vfatal, etc_die and etc_assert_fail (net/net.h) */

/* alloc.c */
void etc_alloc_init(void); /* also etc_xmalloc, etc_xrealloc (net/net.h) */
void etc_tq_push_head(etc_tok t);
int etc_tq_pop_head(etc_tok *out);

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

#endif
