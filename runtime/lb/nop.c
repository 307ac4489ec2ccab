/* nop.c: no balancing. Tokens run where they were made; the default of the
 * seq target (thesis B.5, 3.3.4). On several nodes only INVOKE spreads work.
 * Every hook is the core's default: no node running nop sends tokens or
 * messages. */
#include "lb/lb.h"

const etc_lb_ops etc_lb_nop = {
    .name = "nop",
    .summary = "no balancing: tokens run where they are created",
};
