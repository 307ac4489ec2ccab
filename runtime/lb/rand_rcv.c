/* rand_rcv.c: the Rand-Rcv balancer (thesis 3.3.1): simple random work
 * stealing. An idle node requests a token from a node picked at random; no
 * probes, no load database, no sender mode. The mechanism is in rand_core.c. */
#include "lb/rand_core.h"

static const etc_lb_rand_policy policy = {
    .receiver = 1,
    .probes = 0,
    .info = 0,
    .info_requests = 0,
    .sender = 0,
    .info_sender = 0,
};

static void init(void)
{
    etc_lb_rand_core_init(&policy);
}

const etc_lb_ops etc_lb_rand_rcv = {
    .name = "rand-rcv",
    .summary = "random work stealing: requests to random nodes, no load information",
    .init = init,
    .idle = etc_lb_rand_core_idle,
    .boundary = NULL,
    .token = etc_lb_rand_core_token,
    .message = etc_lb_rand_core_message,
};
