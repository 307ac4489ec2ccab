/* snd.c: the snd (sender) balancer (thesis 2.3.4). Purely sender-initiated:
 * when a node's token deque reaches THRESHOLD it sends its oldest token out,
 * one per thread boundary, to the other nodes in round-robin order (so as not
 * to overload any one of them). A node that receives a token while it is
 * itself rich (at the threshold) forwards it in its own round-robin order; a
 * token that comes back to the node that first sent it out (the message's
 * origin) is kept there and not sent out again: it is put where local work is
 * taken, not where the sender takes tokens from. An idle node does nothing:
 * it waits until a rich node sends it work.
 *
 * Where the thesis is silent:
 *   - THRESHOLD is ETC_LB_THRESHOLD (5, see lb.h): snd has no probes to
 *     scale it by as Rand does.
 *   - A token forwarded N - 1 times is kept wherever it is: with per-node
 *     round-robin orders a token need not pass its origin again, and the
 *     forwarding must end. */
#include "lb/lb.h"

#define THRESHOLD ETC_LB_THRESHOLD

typedef struct {
    int next; /* the next node in this node's round-robin order */
} state;

static state *node_state(void)
{
    return etc_lb_state(sizeof(state));
}

static void init(void)
{
    node_state()->next = etc_lb_succ();
}

/* The next node in round-robin order, never this one. */
static int next_dest(void)
{
    state *s = node_state();
    int n = etc_lb_nodes(), d = s->next;
    if (d == etc_lb_node())
        d = (d + 1) % n;
    s->next = (d + 1) % n;
    return d;
}

static void boundary(void)
{
    if (etc_lb_tokens() < THRESHOLD)
        return;
    etc_tok t;
    if (etc_lb_take_oldest(&t))
        etc_lb_send_token(next_dest(), t, etc_lb_node(), 0, 0);
}

static void token(int src, const etc_token_msg *h, etc_tok tok)
{
    (void)src;
    if (h->origin == etc_lb_node()) {
        etc_lb_keep_local(tok); /* back where it started: no longer sent out */
        return;
    }
    if (etc_lb_tokens() >= THRESHOLD && h->hops < etc_lb_nodes() - 1) {
        etc_lb_send_token(next_dest(), tok, h->origin, h->hops + 1, 0);
        return;
    }
    etc_lb_keep(tok);
}

const etc_lb_ops etc_lb_snd = {
    .name = "snd",
    .summary = "rich nodes send tokens round-robin; idle nodes wait",
    .init = init,
    .idle = NULL,
    .boundary = boundary,
    .token = token,
    /* message: the core's default (snd sends no control messages) */
};
