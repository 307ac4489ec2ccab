/* dual.c: the dual balancer (thesis 2.3.4). Receiver-initiated on a virtual
 * ring, with anonymous requests: an idle node sends a request that does not
 * name it to its predecessor; an idle (not rich) node passes a request on to
 * its own predecessor; a rich node answers a request by sending its oldest
 * token to its *successor*. Tokens travel clockwise: a rich node passes an
 * arriving token on to its successor, any other node keeps it. So requests
 * circulate counter-clockwise and tokens clockwise, and the token a request
 * draws out lands on the first node past the rich one that still wants work,
 * which need not be the node that asked.
 *
 * Where the thesis is silent:
 *   - A request carries a hop count (not its originator's id): after N hops it
 *     is back where it started, so its originator knows nobody had work and
 *     backs off instead of letting it circulate for ever.
 *   - Because a request may be answered with a token that some other node
 *     keeps, its originator cannot know when it has been answered: an idle
 *     node with a request out asks again after REQ_TIMEOUT.
 *   - A token forwarded N - 1 times (round the ring) is kept wherever it is:
 *     forwarding must end even if every node stays rich.
 *   - "Rich" is having a surplus token (etc_lb_surplus), as in spn. */
#include <string.h>

#include "lb/lb.h"

enum { REQ = ETC_LB_MSG };

typedef struct {
    int32_t hops; /* nodes it has reached so far */
} req_msg;

typedef struct {
    int outstanding;
    double sent_at;
    etc_lb_backoff backoff;
} state;

/* An outstanding request is given up after this long (a ring round trip on a
 * loaded machine takes well under it). */
#define REQ_TIMEOUT 1e-3

static state *node_state(void)
{
    return etc_lb_state(sizeof(state));
}

static double idle(void)
{
    state *s = node_state();
    double now = etc_lb_now();
    if (s->outstanding && now - s->sent_at < REQ_TIMEOUT)
        return s->sent_at + REQ_TIMEOUT - now;
    double wait = etc_lb_backoff_wait(&s->backoff);
    if (wait > 0)
        return wait;
    req_msg m = {1};
    s->outstanding = 1;
    s->sent_at = now;
    etc_lb_send_request(etc_lb_pred(), REQ, &m, sizeof m);
    return REQ_TIMEOUT;
}

static void token(int src, const etc_token_msg *h, etc_tok tok)
{
    (void)src;
    if (etc_lb_surplus() && h->hops < etc_lb_nodes() - 1) {
        etc_lb_send_token(etc_lb_succ(), tok, h->origin, h->hops + 1, 0);
        return;
    }
    if (!etc_lb_busy()) { /* an idle node runs it: its wish is granted */
        state *s = node_state();
        s->outstanding = 0;
        etc_lb_backoff_reset(&s->backoff);
    }
    etc_lb_keep(tok);
}

static void message(int src, int type, const void *body, size_t len)
{
    req_msg m;
    if (type != REQ || len != sizeof m)
        etc_lb_bad_message(src, type, len);
    memcpy(&m, body, sizeof m);
    if (m.hops < 1 || m.hops > etc_lb_nodes())
        etc_lb_bad_message(src, type, len);
    etc_lb_count_request_received();
    if (m.hops == etc_lb_nodes()) { /* our own, round the ring: nobody had work */
        state *s = node_state();
        s->outstanding = 0;
        if (!etc_lb_busy())
            etc_lb_backoff_fail(&s->backoff);
        return;
    }
    etc_tok t;
    if (etc_lb_surplus() && etc_lb_take_oldest(&t)) {
        etc_lb_send_token(etc_lb_succ(), t, etc_lb_node(), 0, 1);
        return;
    }
    m.hops++;
    etc_lb_send_request(etc_lb_pred(), REQ, &m, sizeof m);
}

const etc_lb_ops etc_lb_dual = {
    .name = "dual",
    .summary = "anonymous requests go counter-clockwise, tokens clockwise to the first idle node",
    .init = NULL,
    .idle = idle,
    .boundary = NULL,
    .token = token,
    .message = message,
};
