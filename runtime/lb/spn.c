/* spn.c: the spn balancer (thesis 2.3.4), the default. Receiver-initiated on a
 * virtual ring: an idle node sends a request carrying its id to its
 * predecessor; a node with surplus tokens answers the originator directly with
 * its oldest token (the biggest piece of work, thesis 2.3.2); any other node
 * passes the request on to its own predecessor. A request that comes back to
 * its originator found no work: the originator asks again after a backoff.
 * Each node has at most one request out; every request ends with a token to
 * its originator or back at the originator, so none is waited for in vain.
 *
 * Asking ahead: on EARTH a node's SU answered requests while its EU ran a
 * thread; here a node answers at its next thread boundary, so a thief waited
 * for the end of the donor's current thread (matmul: rows of about a
 * millisecond, node 1 idle 29% of the run in 600 waits). So a node whose last
 * request was answered with a token asks again as it takes the last token of
 * its deque, while it still runs the work it has: the answer comes while it
 * computes.
 * It stops asking ahead once a request comes home unanswered (nobody has a
 * surplus) and starts again with the next token an idle request brings.
 */
#include "lb/lb.h"

typedef struct {
    etc_lb_ring ring;
    int ahead; /* the last request was answered: ask again before idling */
} state;

static state *node_state(void)
{
    return etc_lb_state(sizeof(state));
}

static double idle(void)
{
    return etc_lb_ring_idle(&node_state()->ring, etc_lb_pred());
}

/* This node has just taken its last token: ask for the next while it runs. */
static void last_token(void)
{
    state *s = node_state();
    if (s->ahead && !s->ring.pending && !etc_lb_dormant())
        etc_lb_ring_ask(&s->ring, etc_lb_pred());
}

static void token(int src, const etc_token_msg *h, etc_tok tok)
{
    (void)src;
    if (h->reply) {
        state *s = node_state();
        etc_lb_ring_answered(&s->ring);
        s->ahead = 1;
    }
    etc_lb_keep(tok);
}

static void message(int src, int type, const void *body, size_t len)
{
    int origin = etc_lb_ring_request_origin(src, type, body, len);
    if (origin == etc_lb_node()) { /* around the ring: nobody had work */
        state *s = node_state();
        etc_lb_ring_came_home(&s->ring);
        s->ahead = 0;
    } else
        etc_lb_ring_serve(origin);
}

const etc_lb_ops etc_lb_spn = {
    .name = "spn",
    .summary = "requests travel the ring to a rich node, which answers the requester",
    .init = NULL,
    .idle = idle,
    .boundary = NULL,
    .last_token = last_token,
    .token = token,
    .message = message,
};
