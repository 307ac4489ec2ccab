/* range_core.h: what the range and catapult balancers share (range_core.c).
 * The two differ only in which end of the range list they send surplus
 * tokens to and in what a busy node does with a token sent to it as idle. */
#ifndef ETC_LB_RANGE_CORE_H
#define ETC_LB_RANGE_CORE_H

#include "lb/lb.h"

typedef struct etc_lb_range_policy {
    /* Surplus tokens go to the far end of the range list (range) or to the
     * near end (catapult). */
    int far_end;
    /* A node that is no longer idle when a token meant for an idle node
     * reaches it: forwards it to its predecessor and tells the sender to drop
     * it from its range list (range), or forwards it to the near end of its
     * own range list (catapult). */
    int forward_to_pred_and_notify;
} etc_lb_range_policy;

void etc_lb_range_core_init(const etc_lb_range_policy *policy);
double etc_lb_range_core_idle(void);
void etc_lb_range_core_boundary(void);
void etc_lb_range_core_token(int src, const etc_token_msg *h, etc_tok tok);
void etc_lb_range_core_message(int src, int type, const void *body, size_t len);

#endif
