/* spn.c: the spn balancer (thesis 2.3.4), the default. Receiver-initiated on a
 * virtual ring: an idle node sends a request carrying its id to its
 * predecessor; a node with surplus tokens answers the originator directly with
 * its oldest token (the biggest piece of work, thesis 2.3.2); any other node
 * passes the request on to its own predecessor. A request that comes back to
 * its originator found no work: the originator asks again after a backoff. */
#include "lb/lb.h"

enum { REQ = ETC_LB_MSG };

typedef struct {
    int32_t origin;
} req_msg;

typedef struct {
    int pending;
    double retry_at;
    double backoff;
} state;

#define BACKOFF_MIN 20e-6
#define BACKOFF_MAX 2e-3

static state *S(void)
{
    return etc_lb_state(sizeof(state));
}

static void init(void)
{
    S()->backoff = BACKOFF_MIN;
}

static int predecessor(void)
{
    int n = etc_lb_nodes();
    return (etc_lb_node() + n - 1) % n;
}

/* Surplus: a token beyond the one this node will run next. */
static int rich(void)
{
    size_t t = etc_lb_tokens();
    return t >= 2 || (t == 1 && etc_rts.rq.head != etc_rts.rq.tail);
}

static double idle(void)
{
    state *s = S();
    if (s->pending)
        return -1.0;
    double now = etc_lb_now();
    if (now < s->retry_at)
        return s->retry_at - now;
    req_msg m = {etc_lb_node()};
    s->pending = 1;
    etc_lb_count_request_sent();
    etc_lb_send(predecessor(), REQ, &m, sizeof m);
    return -1.0;
}

static void token(int src, const etc_token_msg *h, etc_tok tok)
{
    (void)src;
    state *s = S();
    if (h->reply) {
        s->pending = 0;
        s->backoff = BACKOFF_MIN;
    }
    if (etc_lb_busy())
        etc_lb_count_extra_token();
    etc_lb_keep(tok);
}

static void message(int src, int type, const void *body, size_t len)
{
    (void)src;
    req_msg m;
    if (type != REQ || len != sizeof m)
        return;
    __builtin_memcpy(&m, body, sizeof m);
    state *s = S();
    if (m.origin == etc_lb_node()) { /* around the ring: nobody had work */
        s->pending = 0;
        s->retry_at = etc_lb_now() + s->backoff;
        s->backoff = s->backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : s->backoff * 2;
        return;
    }
    etc_lb_count_request_received();
    etc_tok t;
    if (rich() && etc_lb_take_oldest(&t)) {
        etc_lb_send_token(m.origin, t, etc_lb_node(), 0, 1);
        return;
    }
    etc_lb_send(predecessor(), REQ, &m, sizeof m);
}

const etc_lb_ops etc_lb_spn = {
    .name = "spn",
    .summary = "requests travel the ring to a rich node, which answers the requester",
    .init = init,
    .idle = idle,
    .boundary = NULL,
    .token = token,
    .message = message,
};
