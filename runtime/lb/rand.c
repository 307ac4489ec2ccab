/* rand.c: the Rand balancer (thesis 3.2), with every feature on: hybrid
 * (receiver and sender modes), load probes to d = N/10 + 1 random nodes in
 * receiver mode with the request to the richest, a load database fed by
 * probes, requests and piggy-backed loads and used by both modes, and a sender
 * threshold of max(5, 2d). The mechanism is in rand_core.c. */
#include "lb/rand_core.h"

static const etc_lb_rand_policy policy = {
    .receiver = 1,
    .probes = 1,
    .info = 1,
    .info_requests = 1,
    .sender = 1,
    .info_sender = 1,
};

static void init(void)
{
    etc_lb_rand_core_init(&policy);
}

const etc_lb_ops etc_lb_rand = {
    .name = "rand",
    .summary = "hybrid: d random load probes, a load database, a sender threshold",
    .init = init,
    .idle = etc_lb_rand_core_idle,
    .boundary = etc_lb_rand_core_boundary,
    .token = etc_lb_rand_core_token,
    .message = etc_lb_rand_core_message,
};
