/* rand_snd_info.c: the Rand-Snd-Info balancer (thesis 3.3.2): Rand without
 * its receiver component and without probes. A node whose token deque reaches
 * the threshold sends a token to the poorest node of its load database (fed
 * by the loads piggy-backed on tokens), or to a random node; idle nodes wait
 * for work. The mechanism is in rand_core.c. */
#include "lb/rand_core.h"

static const etc_lb_rand_policy policy = {
    .receiver = 0,
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

const etc_lb_ops etc_lb_rand_snd_info = {
    .name = "rand-snd-info",
    .summary = "sender-initiated Rand: threshold pushes to the poorest known node",
    .init = init,
    .idle = etc_lb_rand_core_idle,
    .boundary = etc_lb_rand_core_boundary,
    .token = etc_lb_rand_core_token,
    .message = etc_lb_rand_core_message,
};
