/* rand_core.h: the Rand balancer of thesis chapter 3 and the six versions of
 * it that section 3.3 builds by leaving features out (rand_core.c). Each
 * version is a row of lb/rand.c whose `config` is its etc_lb_rand_policy. */
#ifndef ETC_LB_RAND_CORE_H
#define ETC_LB_RAND_CORE_H

#include "lb/lb.h"

typedef struct etc_lb_rand_policy {
    /* Receiver mode: an idle node (and one left without tokens after giving
     * its last one away) sends a token request. */
    int receiver;
    /* The request goes to the richest of d random nodes, found with load
     * probes (when d > 1; with d = 1 no probe is sent). */
    int probes;
    /* Keep the load database: loads from probe replies, requests and probes
     * (the sender is idle), and the load piggy-backed on every token. */
    int info;
    /* Without probes, a request goes to the richest fresh node of the load
     * database (a random node when it has none). */
    int info_requests;
    /* Sender mode: a node whose token deque reaches the threshold sends its
     * oldest token away, and forwards a token that reaches it then. */
    int sender;
    /* The sender's destination is the poorest fresh node of the load database
     * (a random node when it has none). */
    int info_sender;
} etc_lb_rand_policy;

void etc_lb_rand_core_init(void); /* reads etc_lb_config() */
double etc_lb_rand_core_idle(void);
void etc_lb_rand_core_boundary(void);
void etc_lb_rand_core_token(int src, const etc_token_msg *h, etc_tok tok);
void etc_lb_rand_core_message(int src, int type, const void *body, size_t len);

#endif
