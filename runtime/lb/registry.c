/* registry.c: every balancer, by name (etcc -lb, etcrun --lb, ETC_LB). */
#include <string.h>

#include "lb/lb.h"

extern const etc_lb_ops etc_lb_nop, etc_lb_spn;

const etc_lb_ops *const etc_lb_all[] = {
    &etc_lb_spn,
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
