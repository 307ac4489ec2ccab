/* rand_hybrid.c: the Rand-Hybrid balancer (thesis 3.3.3): Rand-Rcv with a
 * sender component. Both token requests and token pushes go to random nodes;
 * no probes, no load information. The mechanism is in rand_core.c. */
#include "lb/rand_core.h"

static const etc_lb_rand_policy policy = {
    .receiver = 1,
    .probes = 0,
    .info = 0,
    .info_requests = 0,
    .sender = 1,
    .info_sender = 0,
};

static void init(void)
{
    etc_lb_rand_core_init(&policy);
}

const etc_lb_ops etc_lb_rand_hybrid = {
    .name = "rand-hybrid",
    .summary = "naive hybrid: random requests and random pushes, no load information",
    .init = init,
    .idle = etc_lb_rand_core_idle,
    .boundary = etc_lb_rand_core_boundary,
    .token = etc_lb_rand_core_token,
    .message = etc_lb_rand_core_message,
};
