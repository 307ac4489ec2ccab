/* rand_hybrid_piggyback.c: the Rand-Hybrid-Piggyback balancer (thesis 3.3.3):
 * Rand-Hybrid plus a load database fed only by load balancing messages and
 * the loads piggy-backed on tokens (no probes), consulted before choosing the
 * destination of a token transfer, i.e. in sender mode; requests still go to
 * random nodes, as in Rand-Hybrid (the thesis names only "token transfer"
 * among the two choices Rand-Hybrid makes at random). The mechanism is in
 * rand_core.c. */
#include "lb/rand_core.h"

static const etc_lb_rand_policy policy = {
    .receiver = 1,
    .probes = 0,
    .info = 1,
    .info_requests = 0,
    .sender = 1,
    .info_sender = 1,
};

static void init(void)
{
    etc_lb_rand_core_init(&policy);
}

const etc_lb_ops etc_lb_rand_hybrid_piggyback = {
    .name = "rand-hybrid-piggyback",
    .summary = "naive hybrid whose pushes use piggy-backed load information",
    .init = init,
    .idle = etc_lb_rand_core_idle,
    .boundary = etc_lb_rand_core_boundary,
    .token = etc_lb_rand_core_token,
    .message = etc_lb_rand_core_message,
};
