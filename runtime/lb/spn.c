/* spn.c: the spn balancer (thesis 2.3.4), the default. Receiver-initiated on a
 * virtual ring: an idle node sends a request carrying its id to its
 * predecessor; a node with surplus tokens answers the originator directly with
 * its oldest token (the biggest piece of work, thesis 2.3.2); any other node
 * passes the request on to its own predecessor. A request that comes back to
 * its originator found no work: the originator asks again after a backoff.
 * Each node has at most one request out; every request ends with a token to
 * its originator or back at the originator, so none is waited for in vain. */
#include "lb/lb.h"

typedef struct {
    etc_lb_ring ring;
} state;

static state *node_state(void)
{
    return etc_lb_state(sizeof(state));
}

static double idle(void)
{
    return etc_lb_ring_idle(&node_state()->ring, etc_lb_pred());
}

static void token(int src, const etc_token_msg *h, etc_tok tok)
{
    (void)src;
    if (h->reply)
        etc_lb_ring_answered(&node_state()->ring);
    etc_lb_keep(tok);
}

static void message(int src, int type, const void *body, size_t len)
{
    int origin = etc_lb_ring_request_origin(src, type, body, len);
    if (origin == etc_lb_node()) /* around the ring: nobody had work */
        etc_lb_ring_came_home(&node_state()->ring);
    else
        etc_lb_ring_serve(origin);
}

const etc_lb_ops etc_lb_spn = {
    .name = "spn",
    .summary = "requests travel the ring to a rich node, which answers the requester",
    .init = NULL,
    .idle = idle,
    .boundary = NULL,
    .token = token,
    .message = message,
};
