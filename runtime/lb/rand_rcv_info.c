/* rand_rcv_info.c: the Rand-Rcv-Info balancer (thesis 3.3.1): Rand without
 * its sender component. Strictly receiver-initiated -- tokens move only in
 * answer to requests -- with Rand's selection, location and information
 * policies (probes, the load database). The mechanism is in rand_core.c. */
#include "lb/rand_core.h"

static const etc_lb_rand_policy policy = {
    .receiver = 1,
    .probes = 1,
    .info = 1,
    .info_requests = 1,
    .sender = 0,
    .info_sender = 0,
};

static void init(void)
{
    etc_lb_rand_core_init(&policy);
}

const etc_lb_ops etc_lb_rand_rcv_info = {
    .name = "rand-rcv-info",
    .summary = "receiver-initiated Rand: probes and the load database, no sender mode",
    .init = init,
    .idle = etc_lb_rand_core_idle,
    .boundary = NULL,
    .token = etc_lb_rand_core_token,
    .message = etc_lb_rand_core_message,
};
