/* registry.c: every balancer, by name (etcc -lb, etcrun --lb, ETC_LB), in the
 * order of reference section 6: one line each, naming its etc_lb_<ident>.
 * etcpre/toolchain.py BALANCERS lists the same names (tests/e2e/
 * test_balancers.py keeps the two equal). */
#include <string.h>

#include "lb/lb.h"

#define ETC_LB_REGISTRY(X)                                                         \
    X(dual)                                                                        \
    X(spn)                                                                         \
    X(shis)                                                                        \
    X(snd)                                                                         \
    X(his)                                                                         \
    X(range)                                                                       \
    X(catapult)                                                                    \
    X(rand)                                                                        \
    X(rand_rcv_info)                                                               \
    X(rand_rcv)                                                                    \
    X(rand_snd_info)                                                               \
    X(rand_hybrid_noinfo)                                                          \
    X(rand_hybrid)                                                                 \
    X(rand_hybrid_piggyback)                                                       \
    X(minima)                                                                      \
    X(nop)

#define DECLARE(ident) extern const etc_lb_ops etc_lb_##ident;
#define ENTRY(ident) &etc_lb_##ident,
ETC_LB_REGISTRY(DECLARE)

const etc_lb_ops *const etc_lb_all[] = {ETC_LB_REGISTRY(ENTRY) NULL};

const etc_lb_ops *etc_lb_find(const char *name)
{
    for (const etc_lb_ops *const *o = etc_lb_all; *o; o++)
        if (strcmp((*o)->name, name) == 0)
            return *o;
    return NULL;
}
