/* catapult.c: the catapult balancer (thesis 2.3.4, 5.1). As range, but surplus
 * tokens go to the NEAR end of the range list, and a token that finds its
 * target busy is passed to the near end of the target's own range list (no
 * update message is sent back). The mechanism is in range_core.c. */
#include "lb/range_core.h"

static const etc_lb_range_policy policy = {
    .far_end = 0,
    .forward_to_pred_and_notify = 0,
};

static void init(void)
{
    etc_lb_range_core_init(&policy);
}

const etc_lb_ops etc_lb_catapult = {
    .name = "catapult",
    .summary = "spn requests; surplus tokens go to the near end of the known idle range",
    .init = init,
    .idle = etc_lb_range_core_idle,
    .boundary = etc_lb_range_core_boundary,
    .token = etc_lb_range_core_token,
    .message = etc_lb_range_core_message,
};
