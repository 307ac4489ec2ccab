/* rand_core.c: the Rand balancer (thesis 3.2) and its versions (3.3): the
 * mechanism; rand.c is the table of their policies.
 *
 * Rand is hybrid, on a completely connected graph. Transfer policy: the
 * receiver mode starts when the node is idle, when a token request finds no
 * token here or takes the last one, and when a token reaches an idle node
 * (which then has no extra token); the sender mode starts when the token
 * deque holds exactly `threshold` tokens. Location policy: in receiver mode
 * d = N/10 + 1 load probes go to distinct random nodes and the token request
 * goes to the richest of them -- with d = 1 no probe is sent, and the request
 * goes to the richest fresh node of the load database, or a random node; in
 * sender mode the token goes to the poorest fresh node of the database, or a
 * random node. Selection policy: the oldest token (the head of the deque).
 * Information policy: a database indexed by load, one slot per load value
 * holding a node and a reuse flag; a new report of a node's load enters it at
 * that load with the flag set, and a decision that uses an entry clears the
 * flag, so no information is used twice. Reports come from probe replies,
 * from probes and requests (their sender is idle: load 0), and from the load
 * every token message carries.
 *
 * Message handlers (thesis 3.2):
 *   PROBE       answer with this node's load; the prober is idle (load 0).
 *   PROBE_DATA  store the load; once all d have answered, request a token
 *               from the richest.
 *   REQUEST     the requester is idle (load 0); answer with the oldest token
 *               even if it is the only one, and start the receiver mode if
 *               that leaves the deque empty; with no token, answer NO_TOKEN
 *               and start the receiver mode.
 *   NO_TOKEN    the request found nothing: back off (see below).
 *   TOKEN       store the piggy-backed load; an idle node runs the token and
 *               requests another; a node at the threshold forwards it
 *               (sender mode); any other node keeps it.
 *
 * Where the thesis is silent, and why:
 *   - NO_TOKEN. The thesis gives no answer to a request that finds no token;
 *     without one the requester could only time out. An explicit refusal
 *     (carrying the refuser's load, information like any other) lets it try
 *     again at once elsewhere, and makes every request end in exactly one
 *     answer, so a node has at most one request out and never waits in vain.
 *   - Back-off. A node whose request or probe round found nothing waits
 *     before asking again (20 us, doubling up to 2 ms, reset when a token
 *     arrives), so that a run whose nodes are all idle goes quiet.
 *   - A probe round in which every probed node reports load 0 sends no
 *     request (it could only be refused) and counts as finding nothing.
 *   - The database has DB_LOADS slots; larger loads share the last. A node
 *     is in at most one slot: a new report removes its older one, so a stale
 *     load is never used once a newer one is known. This node never enters
 *     its own database. The sender's database choice must have a load below
 *     the threshold (it is not itself rich); a request's must have load > 0.
 *   - The sender mode at a boundary sends one token when the deque holds
 *     exactly the threshold ("equals", 3.2; section 5.2.5 notes that Rand's
 *     sender stays silent while the deque is far above it). A token forwarded
 *     by the sender mode N - 1 times is kept, so forwarding always ends.
 *   - Probes and requests are both counted as requests in the profile.
 */
#include <string.h>

#include "lb/rand_core.h"

enum { PROBE = ETC_LB_MSG, PROBE_DATA, REQUEST, NO_TOKEN };

enum { IDLE_PHASE, PROBING, REQUESTED };

#define DB_LOADS 64

typedef struct {
    int32_t load;
} load_msg;

typedef struct {
    int32_t node;
    int32_t fresh;
} db_slot;

typedef struct {
    const etc_lb_rand_policy *p;
    int d, threshold;
    int phase;
    int replies, best, best_load; /* the probe round */
    etc_lb_backoff backoff;
    db_slot db[DB_LOADS];
    int32_t node_slot[]; /* [0, N): each node's slot in db (-1: none); [N, 2N): scratch */
} state;

static state *node_state(void)
{
    return etc_lb_state(sizeof(state) + 2 * (size_t)etc_lb_nodes() * sizeof(int32_t));
}

/* d = N/10 + 1 load probes (at most N - 1), and the sender threshold, twice d
 * but at least 5 (thesis 3.2). */
static int probes_for(int nodes)
{
    int d = nodes / 10 + 1;
    return d > nodes - 1 ? (nodes > 1 ? nodes - 1 : 1) : d;
}

static int threshold_for(int nodes)
{
    int t = 2 * probes_for(nodes);
    return t < 5 ? 5 : t;
}

/* ---- the load database */

static void db_remove(state *s, int k)
{
    int at = s->node_slot[k];
    if (at >= 0 && s->db[at].node == k)
        s->db[at].fresh = 0;
    s->node_slot[k] = -1;
}

static void db_put(state *s, int k, int load)
{
    if (!s->p->info || k == etc_lb_node())
        return;
    int at = load < 0 ? 0 : load >= DB_LOADS ? DB_LOADS - 1 : load;
    db_remove(s, k);
    s->db[at].node = k;
    s->db[at].fresh = 1;
    s->node_slot[k] = at;
}

static int db_take(state *s, int at)
{
    int k = s->db[at].node;
    s->db[at].fresh = 0;
    s->node_slot[k] = -1;
    return k;
}

/* The richest fresh node with load >= 1, its information used up; -1: none. */
static int db_take_richest(state *s)
{
    for (int at = DB_LOADS - 1; at >= 1; at--)
        if (s->db[at].fresh)
            return db_take(s, at);
    return -1;
}

/* The poorest fresh node with load below the threshold; -1: none. */
static int db_take_poorest(state *s)
{
    for (int at = 0; at < s->threshold && at < DB_LOADS; at++)
        if (s->db[at].fresh)
            return db_take(s, at);
    return -1;
}

/* ---- receiver mode */

static void send_request(state *s, int dest)
{
    s->phase = REQUESTED;
    etc_lb_send_request(dest, REQUEST, NULL, 0);
}

/* Starts the receiver mode unless a request is out, the node backs off or it is
 * dormant. */
static void receiver_mode(state *s)
{
    if (!s->p->receiver || s->phase != IDLE_PHASE || etc_lb_backoff_wait(&s->backoff) > 0 ||
        etc_lb_dormant())
        return;
    if (s->p->probes && s->d > 1) {
        /* d distinct random nodes: a partial Fisher-Yates shuffle */
        int n = etc_lb_nodes(), me = etc_lb_node(), m = 0;
        int32_t *pool = s->node_slot + n;
        for (int k = 0; k < n; k++)
            if (k != me)
                pool[m++] = k;
        s->phase = PROBING;
        s->replies = 0;
        s->best = -1;
        s->best_load = 0;
        for (int i = 0; i < s->d; i++) {
            int j = i + (int)(etc_lb_random() % (uint64_t)(m - i));
            int32_t k = pool[j];
            pool[j] = pool[i];
            pool[i] = k;
            etc_lb_send_request(k, PROBE, NULL, 0);
        }
        return;
    }
    int dest = s->p->info_requests ? db_take_richest(s) : -1;
    send_request(s, dest >= 0 ? dest : etc_lb_random_other());
}

static void found_nothing(state *s)
{
    s->phase = IDLE_PHASE;
    if (!etc_lb_busy())
        etc_lb_backoff_fail(&s->backoff);
}

/* ---- sender mode */

static int sender_dest(state *s)
{
    int dest = s->p->info_sender ? db_take_poorest(s) : -1;
    return dest >= 0 ? dest : etc_lb_random_other();
}

/* ---- the interface */

void etc_lb_rand_core_init(void)
{
    state *s = node_state();
    s->p = etc_lb_config();
    s->d = probes_for(etc_lb_nodes());
    s->threshold = threshold_for(etc_lb_nodes());
    for (int k = 0, n = etc_lb_nodes(); k < n; k++)
        s->node_slot[k] = -1;
}

double etc_lb_rand_core_idle(void)
{
    state *s = node_state();
    if (!s->p->receiver)
        return -1.0;
    receiver_mode(s);
    if (s->phase != IDLE_PHASE)
        return -1.0; /* an answer is on its way */
    return etc_lb_backoff_wait(&s->backoff);
}

void etc_lb_rand_core_boundary(void)
{
    state *s = node_state();
    if (!s->p->sender || etc_lb_tokens() != (size_t)s->threshold)
        return;
    etc_tok t;
    if (etc_lb_take_oldest(&t))
        etc_lb_send_token(sender_dest(s), t, etc_lb_node(), 0, 0);
}

void etc_lb_rand_core_token(int src, const etc_token_msg *h, etc_tok tok)
{
    state *s = node_state();
    db_put(s, src, h->load);
    if (h->reply) {
        if (s->phase != REQUESTED)
            etc_lb_protocol_error(src, "a token answering no request");
        s->phase = IDLE_PHASE;
        etc_lb_backoff_reset(&s->backoff);
    }
    if (!etc_lb_busy()) {
        etc_lb_keep(tok);
        receiver_mode(s); /* no extra token: ask for the next one now */
        return;
    }
    if (s->p->sender && etc_lb_tokens() == (size_t)s->threshold &&
        h->hops < etc_lb_nodes() - 1) {
        etc_lb_send_token(sender_dest(s), tok, h->origin, h->hops + 1, 0);
        return;
    }
    etc_lb_keep(tok);
}

void etc_lb_rand_core_message(int src, int type, const void *body, size_t len)
{
    state *s = node_state();
    load_msg m;
    switch (type) {
    case PROBE:
        if (len != 0)
            break;
        etc_lb_count_request_received();
        db_put(s, src, 0);
        m.load = (int32_t)etc_lb_tokens();
        etc_lb_send(src, PROBE_DATA, &m, sizeof m);
        return;
    case PROBE_DATA:
        if (len != sizeof m)
            break;
        if (s->phase != PROBING)
            etc_lb_protocol_error(src, "probe data answering no probe");
        memcpy(&m, body, sizeof m);
        db_put(s, src, m.load);
        if (m.load > s->best_load) {
            s->best_load = m.load;
            s->best = src;
        }
        if (++s->replies < s->d)
            return;
        if (s->best < 0) {
            found_nothing(s);
            return;
        }
        db_remove(s, s->best); /* this load is now used */
        send_request(s, s->best);
        return;
    case REQUEST: {
        if (len != 0)
            break;
        etc_lb_count_request_received();
        db_put(s, src, 0);
        etc_tok t;
        if (etc_lb_take_oldest(&t)) {
            etc_lb_send_token(src, t, etc_lb_node(), 0, 1);
        } else {
            m.load = 0;
            etc_lb_send(src, NO_TOKEN, &m, sizeof m);
        }
        if (etc_lb_tokens() == 0)
            receiver_mode(s);
        return;
    }
    case NO_TOKEN:
        if (len != sizeof m)
            break;
        if (s->phase != REQUESTED)
            etc_lb_protocol_error(src, "a refusal answering no request");
        memcpy(&m, body, sizeof m);
        db_put(s, src, m.load);
        found_nothing(s);
        return;
    default:
        break;
    }
    etc_lb_bad_message(src, type, len);
}
