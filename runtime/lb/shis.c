/* shis.c: the shis balancer (thesis 2.3.4): spn with a one-entry history.
 * A rich node that answers a request attaches its own id to the token (the
 * token message's origin); the idle node that receives it remembers that node
 * and sends its next request straight to it. If that node is no longer rich
 * it circulates the request counter-clockwise round the ring, as spn does; a
 * rich node on the way answers the requester directly. A request that reaches
 * its originator again found no work: the originator forgets the remembered
 * node (the next request starts at its predecessor, so covers the whole ring)
 * and asks again after a backoff. Without a remembered node a request goes to
 * the predecessor, exactly as in spn. One request out per node at a time. */
#include "lb/lb.h"

typedef struct {
    etc_lb_ring ring;
    int last_rich; /* the node whose token came last, -1: none */
} state;

static state *node_state(void)
{
    return etc_lb_state(sizeof(state));
}

static void init(void)
{
    node_state()->last_rich = -1;
}

static double idle(void)
{
    state *s = node_state();
    return etc_lb_ring_idle(&s->ring, s->last_rich >= 0 ? s->last_rich : etc_lb_pred());
}

static void token(int src, const etc_token_msg *h, etc_tok tok)
{
    state *s = node_state();
    if (h->reply) {
        etc_lb_ring_answered(&s->ring);
        s->last_rich = h->origin >= 0 && h->origin < etc_lb_nodes() && h->origin != etc_lb_node()
                           ? h->origin
                           : src;
    }
    etc_lb_keep(tok);
}

static void message(int src, int type, const void *body, size_t len)
{
    int origin = etc_lb_ring_request_origin(src, type, body, len);
    state *s = node_state();
    if (origin == etc_lb_node()) { /* back home: nobody on the way had work */
        s->last_rich = -1;
        etc_lb_ring_came_home(&s->ring);
        return;
    }
    etc_lb_ring_serve(origin); /* a token it sends names this node as its origin */
}

const etc_lb_ops etc_lb_shis = {
    .name = "shis",
    .summary = "spn whose requests go first to the node that sent work last",
    .init = init,
    .idle = idle,
    .boundary = NULL,
    .token = token,
    .message = message,
};
