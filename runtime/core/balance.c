/* balance.c: what the core offers the load balancers (lb/lb.h), the TOKEN
 * message and the balancers' own messages (the handler table in remote.c
 * routes them here), and the defaults of the hooks a balancer may leave out.
 * A token travels as its thread-0 address and a copy of its parameter frame;
 * the sender frees its local copy (thesis 2.3: a token has no activation
 * frame yet, so it is free to migrate). */
#include <stdlib.h>
#include <string.h>

#include "core/rts.h"

/* lb.h's first rule: a token a balancer holds (one that arrived, or one it
 * took from the deque) is kept or sent exactly once. The debug build counts
 * the tokens in a balancer's hands: it must be 0 whenever the balancer returns
 * to the core, and a hand-off must have a token to hand. */
#ifdef ETC_DEBUG
static long tokens_in_hand;
#define HOLD_TOKEN() (tokens_in_hand++)
#define HAND_OFF_TOKEN() (ETC_ASSERT(tokens_in_hand > 0), tokens_in_hand--)
#define NO_TOKEN_IN_HAND() ETC_ASSERT(tokens_in_hand == 0)
#else
#define HOLD_TOKEN() ((void)0)
#define HAND_OFF_TOKEN() ((void)0)
#define NO_TOKEN_IN_HAND() ((void)0)
#endif

void etc_balance_init(const char *name)
{
    etc_node_private *p = etc_rts.priv;
    p->lb = etc_lb_find(name);
    if (!p->lb)
        etc_fatal("unknown load balancer '%s'", name);
    p->rng = 0x9E3779B97F4A7C15ull ^ ((uint64_t)(etc_rts.node_id + 1) * 0xBF58476D1CE4E5B9ull);
    if (p->lb->init)
        p->lb->init();
}

double etc_balance_idle(void)
{
    if (!etc_rts.priv->lb->idle)
        return -1.0;
    NO_TOKEN_IN_HAND();
    double wait = etc_rts.priv->lb->idle();
    NO_TOKEN_IN_HAND();
    return wait;
}

void etc_balance_last_token(void)
{
    if (etc_rts.priv->lb->last_token)
        ETC_TRACE_LB(1, etc_rts.priv->lb->last_token());
}

void *etc_lb_state(size_t size)
{
    etc_node_private *p = etc_rts.priv;
    if (!p->lb_state)
        p->lb_state = calloc(1, size);
    if (!p->lb_state)
        etc_fatal("out of memory (balancer state)");
    return p->lb_state;
}

size_t etc_lb_tokens(void)
{
    return etc_rts.tq.tail - etc_rts.tq.head;
}

int etc_lb_take_oldest(etc_tok *out)
{
    if (!etc_tq_pop_head(out))
        return 0;
    HOLD_TOKEN();
    return 1;
}

void etc_lb_keep(etc_tok tok)
{
    HAND_OFF_TOKEN();
    etc_tq_push_head(tok);
}

void etc_lb_keep_local(etc_tok tok)
{
    HAND_OFF_TOKEN();
#ifdef ETC_TRACE
    etc_trace_pending = tok.trace_eid; /* the token keeps the TOKEN that made it */
#endif
    etc_tq_push_tail(tok.fn, tok.pp, tok.size);
    etc_rts.tq.buf[(etc_rts.tq.tail - 1) & etc_rts.tq.mask].remote = tok.remote;
}

const void *etc_lb_config(void)
{
    return etc_rts.priv->lb->config;
}

int etc_lb_node(void)
{
    return etc_rts.node_id;
}

int etc_lb_nodes(void)
{
    return etc_rts.num_nodes;
}

int etc_lb_pred(void)
{
    int n = etc_rts.num_nodes;
    return (etc_rts.node_id + n - 1) % n;
}

int etc_lb_succ(void)
{
    return (etc_rts.node_id + 1) % etc_rts.num_nodes;
}

int etc_lb_busy(void)
{
    return etc_work_here();
}

int etc_lb_dormant(void)
{
    return etc_rts.priv->adapt.dormant;
}

int etc_lb_surplus(void)
{
    size_t t = etc_lb_tokens();
    return t >= 2 || (t == 1 && etc_rts.rq.head != etc_rts.rq.tail);
}

uint64_t etc_lb_random(void)
{
    uint64_t x = etc_rts.priv->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    etc_rts.priv->rng = x;
    return x;
}

int etc_lb_random_other(void)
{
    int n = etc_rts.num_nodes;
    if (n < 2)
        etc_fatal("balancer %s looked for another node on a one-node run", etc_rts.priv->lb->name);
    int k = (int)(etc_lb_random() % (uint64_t)(n - 1));
    return k >= etc_rts.node_id ? k + 1 : k;
}

double etc_lb_now(void)
{
    return etc_step_time();
}

void etc_lb_backoff_fail(etc_lb_backoff *b)
{
    if (b->delay < ETC_LB_BACKOFF_MIN)
        b->delay = ETC_LB_BACKOFF_MIN;
    b->retry_at = etc_step_time() + b->delay;
    b->delay = b->delay * 2 > ETC_LB_BACKOFF_MAX ? ETC_LB_BACKOFF_MAX : b->delay * 2;
}

void etc_lb_backoff_reset(etc_lb_backoff *b)
{
    b->retry_at = 0;
    b->delay = ETC_LB_BACKOFF_MIN;
}

double etc_lb_backoff_wait(const etc_lb_backoff *b)
{
    if (b->retry_at <= 0)
        return 0;
    double d = b->retry_at - etc_step_time();
    return d > 0 ? d : 0;
}

void etc_lb_count_request_sent(void)
{
    ETC_PROF_ADD(requests_sent, 1);
}

void etc_lb_count_request_received(void)
{
    ETC_PROF_ADD(requests_received, 1);
}

/* A balancer that sends to its own node or outside its message types has a
 * bug: stop rather than deliver a message the network layer cannot route. */
static void check_dest(int dest, const char *what)
{
    if (dest < 0 || dest >= etc_rts.num_nodes || dest == etc_rts.node_id)
        etc_fatal("balancer %s sent %s to node %d (this is node %d of %d)",
                  etc_rts.priv->lb->name, what, dest, etc_rts.node_id, etc_rts.num_nodes);
}

void etc_lb_send(int dest, int type, const void *body, size_t len)
{
    check_dest(dest, "a message");
    if (type < ETC_LB_MSG || type >= ETC_LB_MSG + ETC_LB_MSG_COUNT)
        etc_fatal("balancer %s sent a message of type %d, outside its types",
                  etc_rts.priv->lb->name, type);
#ifdef ETC_TRACE
    etc_trace_lb_sent();
#endif
    etc_send(dest, type, body, len, NULL, 0);
}

void etc_lb_send_request(int dest, int type, const void *body, size_t len)
{
    etc_lb_send(dest, type, body, len);
    etc_lb_count_request_sent();
}

/* The request of the ring balancers (spn, shis, his, range, catapult): the node
 * that asked, travelling from node to node until someone has work. */
typedef struct {
    int32_t origin;
} ring_request;

static void send_ring_request(int dest, int origin)
{
    ring_request m = {origin};
    etc_lb_send_request(dest, ETC_LB_RING_REQ, &m, sizeof m);
}

int etc_lb_ring_request_origin(int src, int type, const void *body, size_t len)
{
    ring_request m;
    if (type != ETC_LB_RING_REQ || len != sizeof m)
        etc_lb_bad_message(src, type, len);
    memcpy(&m, body, sizeof m);
    if (m.origin < 0 || m.origin >= etc_rts.num_nodes)
        etc_lb_bad_message(src, type, len);
    etc_lb_count_request_received();
    return m.origin;
}

double etc_lb_ring_wait(const etc_lb_ring *r)
{
    return r->pending ? -1.0 : etc_lb_backoff_wait(&r->backoff);
}

void etc_lb_ring_ask(etc_lb_ring *r, int dest)
{
    r->pending = 1;
    send_ring_request(dest, etc_rts.node_id);
}

double etc_lb_ring_idle(etc_lb_ring *r, int dest)
{
    double wait = etc_lb_ring_wait(r);
    if (wait != 0)
        return wait;
    etc_lb_ring_ask(r, dest);
    return -1.0;
}

void etc_lb_ring_answered(etc_lb_ring *r)
{
    r->pending = 0;
    etc_lb_backoff_reset(&r->backoff);
}

/* Back off only if still idle: work may have come some other way meanwhile. */
void etc_lb_ring_came_home(etc_lb_ring *r)
{
    r->pending = 0;
    if (!etc_work_here())
        etc_lb_backoff_fail(&r->backoff);
}

int etc_lb_ring_serve(int origin)
{
    etc_tok t;
    if (etc_lb_surplus() && etc_lb_take_oldest(&t)) {
        etc_lb_send_token(origin, t, etc_rts.node_id, 0, 1);
        return 1;
    }
    send_ring_request(etc_lb_pred(), origin);
    return 0;
}

void etc_lb_bad_message(int src, int type, size_t len)
{
    etc_fatal("malformed message for balancer %s (type %d, %zu bytes) from node %d",
              etc_rts.priv->lb->name, type, len, src);
}

void etc_lb_protocol_error(int src, const char *what)
{
    etc_fatal("balancer %s: %s from node %d", etc_rts.priv->lb->name, what, src);
}

void etc_lb_send_token(int dest, etc_tok tok, int origin, int hops, int reply)
{
    check_dest(dest, "a token");
    dest = etc_adapt_token_dest(dest, reply);
    if (dest < 0) { /* every other node is dormant */
        etc_lb_keep(tok);
        return;
    }
    HAND_OFF_TOKEN();
    etc_token_msg h = {
        .fn = (uint64_t)(uintptr_t)tok.fn,
        .size = (uint32_t)tok.size,
        .origin = origin,
        .hops = hops,
        .load = (int32_t)etc_lb_tokens(),
        .reply = reply,
        .pad = 0,
    };
    ETC_PROF_ADD(tokens_sent, 1);
    ETC_PROF_ADD(own_tokens_sent, !tok.remote);
#ifdef ETC_TRACE
    etc_trace_token_sent(&tok, dest);
#endif
    etc_send(dest, ETC_M_TOKEN, &h, sizeof h, tok.pp, tok.size);
    etc_block_free(tok.pp, tok.size);
}

void etc_balance_token_message(int src, int type, const void *body, size_t len)
{
    (void)type;
    etc_token_msg h;
    if (len < sizeof h)
        etc_fatal("malformed token message (%zu bytes) from node %d", len, src);
    memcpy(&h, body, sizeof h);
    if (h.size != len - sizeof h)
        etc_fatal("malformed token message (%zu bytes) from node %d", len, src);
    etc_tok tok = {.fn = (etc_thread)(uintptr_t)h.fn, .pp = etc_frame_alloc(h.size),
                   .size = h.size, .remote = 1};
    memcpy(tok.pp, (const char *)body + sizeof h, h.size);
#ifdef ETC_TRACE
    etc_trace_token_received(&tok, src);
#endif
    ETC_PROF_ADD(tokens_received, 1);
    /* Appendix C: an extra token reaches a node that already has work (it
     * measures how well the location policy picks idle nodes). */
    ETC_PROF_ADD(extra_tokens, etc_work_here() ? 1 : 0);
    const etc_lb_ops *lb = etc_rts.priv->lb;
    NO_TOKEN_IN_HAND();
    HOLD_TOKEN();
    if (lb->token)
        lb->token(src, &h, tok);
    else
        etc_lb_keep(tok); /* the default: run it here */
    NO_TOKEN_IN_HAND();
}

/* A balancer's control message (types ETC_LB_MSG ..); one without a message
 * hook sends none, so any is malformed. */
void etc_balance_message(int src, int type, const void *body, size_t len)
{
    const etc_lb_ops *lb = etc_rts.priv->lb;
    if (!lb->message)
        etc_lb_bad_message(src, type, len);
    NO_TOKEN_IN_HAND();
#ifdef ETC_TRACE /* a balancer message handled is balancer activity */
    ETC_TRACE_LB(2, (etc_trace_lb_sent(), lb->message(src, type, body, len)));
#else
    lb->message(src, type, body, len);
#endif
    NO_TOKEN_IN_HAND();
}
