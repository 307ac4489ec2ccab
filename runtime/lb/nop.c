/* nop.c: no balancing. Tokens run where they were made; the default of the
 * seq target (thesis B.5, 3.3.4). On several nodes only INVOKE spreads work. */
#include "lb/lb.h"

static void token(int src, const etc_token_msg *h, etc_tok tok)
{
    (void)src;
    (void)h;
    etc_lb_keep(tok); /* unreachable: no node running nop sends tokens */
}

static void message(int src, int type, const void *body, size_t len)
{
    (void)body;
    etc_lb_bad_message(src, type, len); /* nop has no messages */
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
