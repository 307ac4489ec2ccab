/* range_core.c: the range and catapult balancers (thesis 2.3.4 and 5.1),
 * hybrid balancers on a virtual ring. Their receiver part is spn's: an idle
 * node sends a request carrying its id to its predecessor, a node with a
 * surplus answers the requester directly with its oldest token, any other
 * node passes the request on counter-clockwise, and a request back at its
 * originator found no work (the originator backs off). A request that reaches
 * node R from originator O has passed O-1, ..., R+1 without finding work, so
 * R takes O and every node between as idle: its *range list*. When R's token
 * deque grows beyond THRESHOLD it sends its oldest token, one per thread
 * boundary, to an end of that list -- the far end, the farthest clockwise from
 * R (range), or the near end, R+1 onward (catapult) -- and drops that node
 * from the list.
 *
 * A token sent to a node believed idle may find it busy. Range: the node
 * passes the token on to its predecessor (the next node of the range) and
 * tells the node that sent it out to drop it from its range list. Catapult:
 * the node passes the token to the near end of its own range list (and sends
 * no update; keeping the token when its list is empty).
 *
 * Where the thesis is silent:
 *   - The range list is kept as one flag per node (idle or not) rather than a
 *     list of intervals: its ends are the same, found by a scan clockwise
 *     from this node. A node leaves it when it is sent a token, sends one, or
 *     says it is not idle; it enters it when a request shows it idle.
 *   - "No longer idle" means having work (ready threads or tokens); a token
 *     sent as an answer to a request is always kept by the requester.
 *   - A token forwarded N - 1 times is kept wherever it is, so that
 *     forwarding ends even when every node is busy.
 *   - THRESHOLD is ETC_LB_THRESHOLD (5, see lb.h). */
#include "lb/range_core.h"

enum { NOT_IDLE = ETC_LB_RING_REQ + 1 };

#define THRESHOLD ETC_LB_THRESHOLD

typedef struct {
    const etc_lb_range_policy *policy;
    etc_lb_ring ring;
    int idle_count;
    unsigned char idle[]; /* per node: in the range list */
} state;

static state *node_state(void)
{
    return etc_lb_state(sizeof(state) + (size_t)etc_lb_nodes());
}

static void set_idle(state *s, int k, int v)
{
    if (k == etc_lb_node() || s->idle[k] == v)
        return;
    s->idle[k] = (unsigned char)v;
    s->idle_count += v ? 1 : -1;
}

/* The first (near) or last (far) node of the range list clockwise from this
 * node; -1 if the list is empty. */
static int range_end(state *s, int far)
{
    int n = etc_lb_nodes(), me = etc_lb_node(), found = -1;
    if (s->idle_count == 0)
        return -1;
    for (int i = 1; i < n; i++) {
        int k = (me + i) % n;
        if (s->idle[k]) {
            found = k;
            if (!far)
                break;
        }
    }
    return found;
}

void etc_lb_range_core_init(const etc_lb_range_policy *policy)
{
    node_state()->policy = policy;
}

double etc_lb_range_core_idle(void)
{
    return etc_lb_ring_idle(&node_state()->ring, etc_lb_pred());
}

void etc_lb_range_core_boundary(void)
{
    if (etc_lb_tokens() <= THRESHOLD)
        return;
    state *s = node_state();
    int dest = range_end(s, s->policy->far_end);
    etc_tok t;
    if (dest >= 0 && etc_lb_take_oldest(&t)) {
        set_idle(s, dest, 0);
        etc_lb_send_token(dest, t, etc_lb_node(), 0, 0);
    }
}

void etc_lb_range_core_token(int src, const etc_token_msg *h, etc_tok tok)
{
    state *s = node_state();
    set_idle(s, src, 0); /* it had a token to spare */
    if (h->reply) {
        etc_lb_ring_answered(&s->ring);
        etc_lb_keep(tok);
        return;
    }
    if (etc_lb_busy() && h->hops < etc_lb_nodes() - 1) {
        if (s->policy->forward_to_pred_and_notify) {
            int pred = etc_lb_pred();
            set_idle(s, pred, 0);
            etc_lb_send_token(pred, tok, h->origin, h->hops + 1, 0);
            if (h->origin >= 0 && h->origin < etc_lb_nodes() && h->origin != etc_lb_node())
                etc_lb_send(h->origin, NOT_IDLE, NULL, 0);
            return;
        }
        int dest = range_end(s, 0);
        if (dest >= 0) {
            set_idle(s, dest, 0);
            etc_lb_send_token(dest, tok, h->origin, h->hops + 1, 0);
            return;
        }
    }
    etc_lb_keep(tok);
}

void etc_lb_range_core_message(int src, int type, const void *body, size_t len)
{
    state *s = node_state();
    if (type == NOT_IDLE && len == 0) {
        set_idle(s, src, 0);
        return;
    }
    int origin = etc_lb_ring_request_origin(src, type, body, len);
    int n = etc_lb_nodes(), me = etc_lb_node();
    if (origin == me) { /* back home: nobody on the way had work */
        etc_lb_ring_came_home(&s->ring);
        return;
    }
    for (int k = (me + 1) % n;; k = (k + 1) % n) { /* me+1 .. origin are idle */
        set_idle(s, k, 1);
        if (k == origin)
            break;
    }
    if (etc_lb_ring_serve(origin))
        set_idle(s, origin, 0);
}
