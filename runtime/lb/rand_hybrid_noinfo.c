/* rand_hybrid_noinfo.c: the Rand-Hybrid-Noinfo balancer (thesis 3.3.3): Rand
 * without its load database. Receiver mode as Rand's (probes to d random
 * nodes, the request to the richest; a random node when d = 1); sender mode
 * sends to a random node. The mechanism is in rand_core.c. */
#include "lb/rand_core.h"

static const etc_lb_rand_policy policy = {
    .receiver = 1,
    .probes = 1,
    .info = 0,
    .info_requests = 0,
    .sender = 1,
    .info_sender = 0,
};

static void init(void)
{
    etc_lb_rand_core_init(&policy);
}

const etc_lb_ops etc_lb_rand_hybrid_noinfo = {
    .name = "rand-hybrid-noinfo",
    .summary = "hybrid Rand without the load database: probes, random pushes",
    .init = init,
    .idle = etc_lb_rand_core_idle,
    .boundary = etc_lb_rand_core_boundary,
    .token = etc_lb_rand_core_token,
    .message = etc_lb_rand_core_message,
};
