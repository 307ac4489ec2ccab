/* lb.h: the load balancer interface (thesis 2.3.4 and chapter 3).
 *
 * A balancer decides where tokens run; the scheduler decides when. Each
 * balancer is one file in lb/ exporting one `etc_lb_ops` named etc_lb_<name>
 * (dashes as underscores) and one line in lb/registry.c (and its name in
 * etcpre/toolchain.py BALANCERS, which a test keeps equal); all are linked
 * into every program and one is chosen by name at start-up (ETC_LB, etcrun
 * --lb, or the etcc -lb default; spn, or nop on one node). Balancers that
 * share a mechanism and differ in policy are one table of ops whose `config`
 * names the policy (lb/rand.c: the seven rand variants).
 *
 * The core calls, on the node's own process (never concurrently); every hook
 * but `name` and `summary` may be NULL:
 *   init()      once at start-up, on every node count (NULL if unused);
 *   idle()      when the ready queue and token deque are empty, repeatedly
 *               while they stay empty (only on multi-node runs): ask for
 *               work; returns how long the node may block before calling it
 *               again (seconds; < 0: until a message arrives). An idle node
 *               that found nothing must back off (etc_lb_backoff) rather than
 *               ask again at once, so that a run whose nodes are all idle
 *               sleeps until termination is detected;
 *   last_token() when this node has just taken the last token of its deque
 *               to run it (multi-node runs; rare, so it may send): a
 *               receiver-initiated policy may ask for work ahead of idling
 *               (spn). NULL if unused;
 *   boundary()  after every thread on multi-node runs, once the messages that
 *               arrived have been handled (sender-initiated policies push
 *               surplus tokens here; NULL if unused). It runs at the rate of
 *               the finest-grain threads: keep it to a few comparisons;
 *   token()     when a TOKEN message arrives: keep it (etc_lb_keep), or
 *               forward it (etc_lb_send_token) -- exactly one of the two
 *               (NULL: keep every token);
 *   message()   for the balancer's own control messages (requests, replies,
 *               load probes), types ETC_LB_MSG + 0 .. ETC_LB_MSG_COUNT - 1
 *               (NULL: it sends none, and one arriving is a fatal error).
 *
 * Rules:
 *   - A balancer never loses or duplicates a token: each arriving token is
 *     either kept or forwarded exactly once, and a token taken from the deque
 *     is sent (or kept) exactly once, before the hook returns (the debug
 *     build of the runtime checks it). A forwarded token carries hops + 1; every policy
 *     that forwards stops after a bounded number of hops (keeps the token), so
 *     no token can circulate for ever.
 *   - Control messages never carry work (termination detection does not
 *     count them); only TOKEN messages move work. Every request that waits for
 *     an answer gets one (a token or a refusal) or has a time-out, so a node
 *     never waits for ever for a lost answer.
 *   - No global mutable state: per-node state lives in etc_lb_state().
 *   - Profile counters (appendix C) that only the balancer can know are
 *     counted through etc_lb_count_request_*: a *request* is a message asking
 *     another node for work or for its load (token requests, load probes);
 *     it is counted as sent by every node that sends it (a forwarded request
 *     too) and as received by every node it reaches, so that the sums over
 *     the nodes are equal. Tokens sent and received, and extra tokens (tokens
 *     that reach a node that already has work), are counted by the core.
 */
#ifndef ETC_LB_H
#define ETC_LB_H

#include <stddef.h>
#include <stdint.h>

#include "etc.h"

/* The header of a TOKEN message; the parameter frame follows it. */
typedef struct etc_token_msg {
    uint64_t fn;     /* thread 0 of the function (same address on every node) */
    uint32_t size;   /* bytes of parameter frame that follow */
    int32_t origin;  /* a node the policy names (snd: first sender; shis: the rich node) */
    int32_t hops;    /* times forwarded (0 on the first send) */
    int32_t load;    /* sender's token count after sending, piggy-backed (rand variants) */
    int32_t reply;   /* 1: sent in answer to a request */
    int32_t pad;
} etc_token_msg;

typedef struct etc_lb_ops {
    const char *name;
    const char *summary;
    void (*init)(void);
    double (*idle)(void);
    void (*boundary)(void);
    void (*last_token)(void);
    void (*token)(int src, const etc_token_msg *h, etc_tok tok);
    void (*message)(int src, int type, const void *body, size_t len);
    const void *config; /* the policy of a shared mechanism (etc_lb_config) */
} etc_lb_ops;

/* Balancer message types are ETC_LB_MSG + 0 .. ETC_LB_MSG + ETC_LB_MSG_COUNT - 1. */
#define ETC_LB_MSG 32
#define ETC_LB_MSG_COUNT 16

/* ---- what the core offers balancers (core/balance.c) */

size_t etc_lb_tokens(void);                  /* tokens in this node's deque */
int etc_lb_take_oldest(etc_tok *out);        /* from the head (FIFO for remote) */
void etc_lb_keep(etc_tok tok);               /* an arriving token: at the head */
/* An arriving token this node must run itself: at the tail, where local work
 * is taken (LIFO) and remote work is not (snd: a token back at its origin). */
void etc_lb_keep_local(etc_tok tok);
/* Sends a token to `dest` (and frees its local parameter frame); the message
 * carries origin, hops, reply and this node's token count (load). Under
 * ETC_ADAPT=1 a token that answers no request (reply 0) and is for a dormant
 * node goes to the next awake node after it instead, or stays here (at the
 * head, as etc_lb_keep) if every other node is dormant: balancers need not know
 * about dormant nodes (core/adapt.c). */
void etc_lb_send_token(int dest, etc_tok tok, int origin, int hops, int reply);
/* Sends a control message (never to this node). */
void etc_lb_send(int dest, int type, const void *body, size_t len);
/* etc_lb_send and etc_lb_count_request_sent in one. */
void etc_lb_send_request(int dest, int type, const void *body, size_t len);
/* The ring balancers' request (spn, shis, his, range, catapult): it carries the
 * node that asked (sent by etc_lb_ring_ask and _serve, below). Reading one
 * checks it (a malformed one ends the run), counts it received and returns who
 * asked. */
#define ETC_LB_RING_REQ ETC_LB_MSG
int etc_lb_ring_request_origin(int src, int type, const void *body, size_t len);
/* A balancer message of the wrong type or size: a fatal error. */
void etc_lb_bad_message(int src, int type, size_t len) __attribute__((noreturn));
/* A message the balancer's protocol cannot produce now (an answer to no
 * question): a fatal error naming `what`. */
void etc_lb_protocol_error(int src, const char *what) __attribute__((noreturn));

/* The chosen balancer's `config`. */
const void *etc_lb_config(void);

int etc_lb_node(void);
int etc_lb_nodes(void);
int etc_lb_pred(void);                        /* predecessor on the virtual ring */
int etc_lb_succ(void);                        /* successor on the virtual ring */
int etc_lb_busy(void);                        /* ready threads or tokens here */
/* This node is dormant (ETC_ADAPT=1, core/adapt.c): the core calls no idle()
 * meanwhile, and a balancer must not start a request for work from its other
 * hooks either (answering and passing on other nodes' requests goes on). */
int etc_lb_dormant(void);
/* Surplus: a token beyond the one this node will run next (two tokens, or one
 * and a ready thread). The "rich" test of the ring balancers. */
int etc_lb_surplus(void);
uint64_t etc_lb_random(void);                 /* per-node xorshift */
int etc_lb_random_other(void);                /* uniform among the other nodes */
double etc_lb_now(void);
void etc_lb_count_request_sent(void);
void etc_lb_count_request_received(void);

/* The sender threshold of the balancers whose thesis description says only
 * "a given threshold" (snd, his, range, catapult): 5 tokens, the value the
 * thesis settles on as the floor of Rand's threshold, "a good balance between
 * aggressive and conservative load migration" (3.2). */
#define ETC_LB_THRESHOLD 5

/* Exponential back-off of an idle node that found no work: the first retry
 * after ETC_LB_BACKOFF_MIN, doubling up to ETC_LB_BACKOFF_MAX; reset once
 * work is found. */
#define ETC_LB_BACKOFF_MIN 20e-6
#define ETC_LB_BACKOFF_MAX 2e-3
typedef struct etc_lb_backoff {
    double retry_at; /* etc_lb_now() before which the node must not ask */
    double delay;    /* the next delay (0: ETC_LB_BACKOFF_MIN) */
} etc_lb_backoff;
void etc_lb_backoff_fail(etc_lb_backoff *b);        /* asked, found nothing */
void etc_lb_backoff_reset(etc_lb_backoff *b);       /* found work */
double etc_lb_backoff_wait(const etc_lb_backoff *b); /* seconds left; 0: may ask */

/* The protocol the ring balancers share (spn, and the receiver part of shis,
 * his, range, catapult). The asking side has at most one request out and backs
 * off after one that came home unanswered; the answering side sends its oldest
 * token to the requester if it has a surplus, and otherwise passes the request
 * on to its predecessor. */
typedef struct etc_lb_ring {
    int pending; /* this node's request is out */
    etc_lb_backoff backoff;
} etc_lb_ring;
/* What idle() returns while this node may not ask: -1 with its request out,
 * the back-off left after a failed one; 0: it may ask now. */
double etc_lb_ring_wait(const etc_lb_ring *r);
void etc_lb_ring_ask(etc_lb_ring *r, int dest); /* sends this node's request */
/* The two above as an idle() does them: ask `dest` if allowed; returns idle()'s wait. */
double etc_lb_ring_idle(etc_lb_ring *r, int dest);
void etc_lb_ring_answered(etc_lb_ring *r);      /* a token replied to it */
void etc_lb_ring_came_home(etc_lb_ring *r);     /* nobody on the way had work */
/* Someone else's request: 1 if this node answered it with a token. */
int etc_lb_ring_serve(int origin);

/* The private state of the chosen balancer (one per node): zeroed memory of
 * `size` bytes, allocated at the first call; later calls return the same
 * block (pass the same size). */
void *etc_lb_state(size_t size);

extern const etc_lb_ops *const etc_lb_all[];
const etc_lb_ops *etc_lb_find(const char *name);

#endif
