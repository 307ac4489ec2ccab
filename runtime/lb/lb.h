/* lb.h: the load balancer interface (thesis 2.3.4 and chapter 3).
 *
 * A balancer decides where tokens run; the scheduler decides when. Each
 * balancer is one file in lb/ exporting one `etc_lb_ops`; all are linked into
 * every program and one is chosen by name at start-up (ETC_LB, etcrun --lb,
 * or the etcc -lb default). The core calls:
 *   idle()      when the ready queue and token deque are empty: ask for work;
 *               returns how long the node may block before calling it again
 *               (seconds; < 0: until a message arrives);
 *   boundary()  at every thread boundary on multi-node runs (sender-initiated
 *               policies push surplus tokens here; NULL if unused);
 *   token()     when a TOKEN message arrives: keep it (etc_lb_keep), run it
 *               or forward it (etc_lb_send_token);
 *   message()   for the balancer's own control messages (requests, replies,
 *               load probes), which never carry work.
 * A balancer never loses or duplicates a token: each arriving token is either
 * kept or forwarded exactly once.
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
    int32_t origin;  /* node that first sent it out (snd, shis) */
    int32_t hops;    /* times forwarded */
    int32_t load;    /* sender's token count, piggy-backed (rand variants) */
    int32_t reply;   /* 1: sent in answer to a request */
    int32_t pad;
} etc_token_msg;

typedef struct etc_lb_ops {
    const char *name;
    const char *summary;
    void (*init)(void);
    double (*idle)(void);
    void (*boundary)(void);
    void (*token)(int src, const etc_token_msg *h, etc_tok tok);
    void (*message)(int src, int type, const void *body, size_t len);
} etc_lb_ops;

/* Balancer message types are ETC_LB_MSG + 0 .. ETC_LB_MSG + ETC_LB_MSG_COUNT - 1. */
#define ETC_LB_MSG 32
#define ETC_LB_MSG_COUNT 16

/* ---- what the core offers balancers (core/balance.c) */

size_t etc_lb_tokens(void);                  /* tokens in this node's deque */
int etc_lb_take_oldest(etc_tok *out);        /* from the head (FIFO for remote) */
void etc_lb_keep(etc_tok tok);               /* an arriving token: at the head */
/* Sends a token to `dest` (and frees its local parameter frame). */
void etc_lb_send_token(int dest, etc_tok tok, int origin, int hops, int reply);
void etc_lb_send(int dest, int type, const void *body, size_t len);
int etc_lb_node(void);
int etc_lb_nodes(void);
int etc_lb_busy(void);                        /* ready threads or tokens here */
uint64_t etc_lb_random(void);                 /* per-node xorshift */
double etc_lb_now(void);
void etc_lb_count_request_sent(void);
void etc_lb_count_request_received(void);
void etc_lb_count_extra_token(void);

/* The private state of the chosen balancer (one per node). */
void *etc_lb_state(size_t size);

extern const etc_lb_ops *const etc_lb_all[];
const etc_lb_ops *etc_lb_find(const char *name);

#endif
