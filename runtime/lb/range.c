/* range.c: the range balancer (thesis 2.3.4, 5.1). spn's requests; a request
 * tells each node it reaches which nodes behind it are idle (its range list);
 * a node whose token deque passes the threshold sends its oldest token to the
 * FAR end of its range list; a token that finds its target busy goes on to the
 * target's predecessor, and the sender is told to drop the target from its
 * list. The mechanism, shared with catapult, is in range_core.c. */
#include "lb/range_core.h"

static const etc_lb_range_policy policy = {
    .far_end = 1,
    .forward_to_pred_and_notify = 1,
};

static void init(void)
{
    etc_lb_range_core_init(&policy);
}

const etc_lb_ops etc_lb_range = {
    .name = "range",
    .summary = "spn requests; surplus tokens go to the far end of the known idle range",
    .init = init,
    .idle = etc_lb_range_core_idle,
    .boundary = etc_lb_range_core_boundary,
    .token = etc_lb_range_core_token,
    .message = etc_lb_range_core_message,
};
