/* his.c: the history balancer (thesis 2.3.4): hybrid, receiver- and
 * sender-initiated. Every node keeps, from the recent history of balancing
 * messages, which nodes are likely idle (they sent a request for work) and
 * which are likely rich (they sent a token). When its token deque becomes
 * empty a node sends a request to the node it most recently saw rich (to its
 * predecessor when it knows none); a node that cannot answer passes the
 * request counter-clockwise round the ring, and a rich node answers the
 * requester directly. When its deque grows beyond THRESHOLD a node sends its
 * oldest token to the node it most recently saw idle, and no longer counts
 * that node idle.
 *
 * Where the thesis is silent:
 *   - The two lists are ordered by recency (a stamp per node): the newest
 *     entry is the likeliest to be still true. A node leaves the idle list
 *     when it sends this node a token or is sent one; it leaves the rich list
 *     when it asks for work or when a request sent to it first came back
 *     unanswered.
 *   - A request that comes back to its originator found no work: the
 *     originator backs off before asking again. One request out per node.
 *   - THRESHOLD is ETC_LB_THRESHOLD (5, see lb.h). */
#include "lb/lb.h"

#define THRESHOLD ETC_LB_THRESHOLD

typedef struct {
    etc_lb_ring ring;
    int asked; /* the node the pending request went to first */
    uint64_t clock;
    int idle_count;    /* nodes with idle_stamp != 0 */
    uint64_t stamp[];  /* [0, N): likely idle since; [N, 2N): likely rich since */
} state;

static size_t state_size(void)
{
    return sizeof(state) + 2 * (size_t)etc_lb_nodes() * sizeof(uint64_t);
}

static state *node_state(void)
{
    return etc_lb_state(state_size());
}

static uint64_t *idle_stamp(state *s)
{
    return s->stamp;
}

static uint64_t *rich_stamp(state *s)
{
    return s->stamp + etc_lb_nodes();
}

static void forget_idle(state *s, int k)
{
    if (idle_stamp(s)[k]) {
        idle_stamp(s)[k] = 0;
        s->idle_count--;
    }
}

static void saw_idle(state *s, int k)
{
    if (!idle_stamp(s)[k])
        s->idle_count++;
    idle_stamp(s)[k] = ++s->clock;
    rich_stamp(s)[k] = 0;
}

static void saw_rich(state *s, int k)
{
    forget_idle(s, k);
    rich_stamp(s)[k] = ++s->clock;
}

/* The node with the newest stamp in `st`, -1 if none. */
static int newest(const uint64_t *st)
{
    int best = -1;
    uint64_t t = 0;
    for (int k = 0, n = etc_lb_nodes(); k < n; k++)
        if (st[k] > t) {
            t = st[k];
            best = k;
        }
    return best;
}

static void init(void)
{
    node_state();
}

static void ask(state *s)
{
    if (etc_lb_ring_wait(&s->ring) != 0)
        return;
    int dest = newest(rich_stamp(s));
    if (dest < 0)
        dest = etc_lb_pred();
    s->asked = dest;
    etc_lb_ring_ask(&s->ring, dest);
}

static double idle(void)
{
    state *s = node_state();
    ask(s);
    return etc_lb_ring_wait(&s->ring);
}

static void boundary(void)
{
    size_t t = etc_lb_tokens();
    if (t == 0) { /* the deque has become empty: ask before running dry */
        ask(node_state());
        return;
    }
    if (t <= THRESHOLD)
        return;
    state *s = node_state();
    if (s->idle_count == 0)
        return;
    int dest = newest(idle_stamp(s));
    etc_tok tok;
    if (dest >= 0 && etc_lb_take_oldest(&tok)) {
        forget_idle(s, dest);
        etc_lb_send_token(dest, tok, etc_lb_node(), 0, 0);
    }
}

static void token(int src, const etc_token_msg *h, etc_tok tok)
{
    state *s = node_state();
    saw_rich(s, src);
    if (h->reply)
        etc_lb_ring_answered(&s->ring);
    etc_lb_keep(tok);
}

static void message(int src, int type, const void *body, size_t len)
{
    int origin = etc_lb_ring_request_origin(src, type, body, len);
    state *s = node_state();
    if (origin == etc_lb_node()) { /* back home: nobody on the way had work */
        rich_stamp(s)[s->asked] = 0;
        etc_lb_ring_came_home(&s->ring);
        return;
    }
    saw_idle(s, origin);
    if (etc_lb_ring_serve(origin))
        forget_idle(s, origin);
}

const etc_lb_ops etc_lb_his = {
    .name = "his",
    .summary = "history: requests to nodes seen rich, surplus tokens to nodes seen idle",
    .init = init,
    .idle = idle,
    .boundary = boundary,
    .token = token,
    .message = message,
};
