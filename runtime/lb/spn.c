/* spn.c: the spn balancer (thesis 2.3.4), the default. Receiver-initiated on a
 * virtual ring: an idle node sends a request carrying its id to its
 * predecessor; a node with surplus tokens answers the originator directly with
 * its oldest token (the biggest piece of work, thesis 2.3.2); any other node
 * passes the request on to its own predecessor. A request that comes back to
 * its originator found no work: the originator asks again after a backoff.
 * Each node has at most one request out; every request ends with a token to
 * its originator or back at the originator, so none is waited for in vain. */
#include <string.h>

#include "lb/lb.h"

typedef struct {
    int pending;
    etc_lb_backoff backoff;
} state;

static state *S(void)
{
    return etc_lb_state(sizeof(state));
}

static double idle(void)
{
    state *s = S();
    if (s->pending)
        return -1.0;
    double wait = etc_lb_backoff_wait(&s->backoff);
    if (wait > 0)
        return wait;
    s->pending = 1;
    etc_lb_send_ring_request(etc_lb_pred(), etc_lb_node());
    return -1.0;
}

static void token(int src, const etc_token_msg *h, etc_tok tok)
{
    (void)src;
    state *s = S();
    if (h->reply) {
        s->pending = 0;
        etc_lb_backoff_reset(&s->backoff);
    }
    etc_lb_keep(tok);
}

static void message(int src, int type, const void *body, size_t len)
{
    int origin = etc_lb_ring_request_origin(src, type, body, len);
    state *s = S();
    if (origin == etc_lb_node()) { /* around the ring: nobody had work */
        s->pending = 0;
        if (!etc_lb_busy())
            etc_lb_backoff_fail(&s->backoff);
        return;
    }
    etc_tok t;
    if (etc_lb_surplus() && etc_lb_take_oldest(&t)) {
        etc_lb_send_token(origin, t, etc_lb_node(), 0, 1);
        return;
    }
    etc_lb_send_ring_request(etc_lb_pred(), origin);
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
