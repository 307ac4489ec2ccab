/* minima.c: the minima balancer (thesis 3.3.4): the realistic lower bound of
 * parallel performance. Every node but the last passes one token, once, to
 * its successor on the ring (node 0 to node 1, node 1 to node 2, ... up to
 * node N-1), so that every node runs at least one piece of the activation
 * tree when the program has that much parallelism; after that no balancing
 * at all: each node runs the tokens it makes and idle nodes stay idle.
 *
 * Where the thesis is vague ("every rich node passes its second token"): a
 * node passes on a token at the first thread boundary at which it has a
 * surplus -- a token beyond the one it will run next (etc_lb_surplus) -- so it
 * keeps work for itself; the one it passes is the oldest, the biggest piece
 * of work (thesis 2.3.2), as every balancer sends. */
#include "lb/lb.h"

typedef struct {
    int exported;
} state;

static state *node_state(void)
{
    return etc_lb_state(sizeof(state));
}

static void init(void)
{
    /* the last node never passes one on: the chain ends there */
    node_state()->exported = etc_lb_node() == etc_lb_nodes() - 1;
}

static void boundary(void)
{
    state *s = node_state();
    if (s->exported || !etc_lb_surplus())
        return;
    etc_tok t;
    if (etc_lb_take_oldest(&t)) {
        s->exported = 1;
        etc_lb_send_token(etc_lb_succ(), t, etc_lb_node(), 0, 0);
    }
}

const etc_lb_ops etc_lb_minima = {
    .name = "minima",
    .summary = "each node passes one token to its successor once, then no balancing",
    .init = init,
    .boundary = boundary,
    /* token, message: the core's defaults (keep every token; no messages) */
};
