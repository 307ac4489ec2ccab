/* registry.c: every balancer, by name (etcc -lb, etcrun --lb, ETC_LB), in the
 * order of reference section 6. etcpre/toolchain.py BALANCERS lists the same
 * names (tests/e2e/test_balancers.py keeps the two equal). */
#include <string.h>

#include "lb/lb.h"

extern const etc_lb_ops etc_lb_dual, etc_lb_spn, etc_lb_shis, etc_lb_snd, etc_lb_his,
    etc_lb_range, etc_lb_catapult, etc_lb_rand, etc_lb_rand_rcv_info, etc_lb_rand_rcv,
    etc_lb_rand_snd_info, etc_lb_rand_hybrid_noinfo, etc_lb_rand_hybrid,
    etc_lb_rand_hybrid_piggyback, etc_lb_minima, etc_lb_nop;

const etc_lb_ops *const etc_lb_all[] = {
    &etc_lb_dual,
    &etc_lb_spn,
    &etc_lb_shis,
    &etc_lb_snd,
    &etc_lb_his,
    &etc_lb_range,
    &etc_lb_catapult,
    &etc_lb_rand,
    &etc_lb_rand_rcv_info,
    &etc_lb_rand_rcv,
    &etc_lb_rand_snd_info,
    &etc_lb_rand_hybrid_noinfo,
    &etc_lb_rand_hybrid,
    &etc_lb_rand_hybrid_piggyback,
    &etc_lb_minima,
    &etc_lb_nop,
    NULL,
};

const etc_lb_ops *etc_lb_find(const char *name)
{
    for (const etc_lb_ops *const *o = etc_lb_all; *o; o++)
        if (strcmp((*o)->name, name) == 0)
            return *o;
    return NULL;
}
