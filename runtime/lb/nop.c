/* nop.c: no balancing. Tokens run where they were made; the default of the
 * seq target (thesis B.5). On several nodes only INVOKE spreads work. */
#include "lb/lb.h"

static void token(int src, const etc_token_msg *h, etc_tok tok)
{
    (void)src;
    (void)h;
    etc_lb_keep(tok); /* only reached if another node's balancer sent one */
}

static void message(int src, int type, const void *body, size_t len)
{
    (void)src;
    (void)type;
    (void)body;
    (void)len;
}

const etc_lb_ops etc_lb_nop = {
    .name = "nop",
    .summary = "no balancing: tokens run where they are created",
    .init = NULL,
    .idle = NULL,
    .boundary = NULL,
    .token = token,
    .message = message,
};
