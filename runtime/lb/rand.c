/* rand.c: the Rand balancer (thesis 3.2) and the six versions section 3.3
 * builds by leaving its features out, as one table: one mechanism
 * (rand_core.c), a policy per row. A new version is one more row.
 *
 * The features (etc_lb_rand_policy, rand_core.h):
 *   receiver       an idle node requests a token;
 *   probes         ... from the richest of d = N/10 + 1 random nodes, found
 *                  with load probes;
 *   info           a load database, fed by probes, requests and the loads
 *                  piggy-backed on tokens;
 *   info_requests  without probes, the request goes to the richest fresh node
 *                  of the database;
 *   sender         a node whose deque reaches the threshold max(5, 2d) sends
 *                  its oldest token away;
 *   info_sender    ... to the poorest fresh node of the database.
 * A node without the feature picks a random node instead. The sender mode is
 * the only user of the boundary hook: versions without it leave it NULL, so
 * that their runs keep the scheduler's one-word boundary test.
 */
#include "lb/rand_core.h"

#define RAND_BALANCER(ident, text, what, recv, prb, inf, inf_req, snd, inf_snd)              \
    const etc_lb_ops etc_lb_##ident = {                                                     \
        .name = text,                                                                       \
        .summary = what,                                                                    \
        .init = etc_lb_rand_core_init,                                                      \
        .idle = etc_lb_rand_core_idle,                                                      \
        .boundary = (snd) ? etc_lb_rand_core_boundary : NULL,                               \
        .token = etc_lb_rand_core_token,                                                    \
        .message = etc_lb_rand_core_message,                                                \
        .config = &(const etc_lb_rand_policy){.receiver = (recv), .probes = (prb),          \
                                              .info = (inf), .info_requests = (inf_req),    \
                                              .sender = (snd), .info_sender = (inf_snd)},   \
    }

/* A row: the ops' identifier (etc_lb_<ident>), name, summary, then the
 * features receiver, probes, info, info_requests, sender, info_sender. */

/* Rand (3.2): every feature. */
RAND_BALANCER(rand, "rand",
              "hybrid: d random load probes, a load database, a sender threshold",
              1, 1, 1, 1, 1, 1);

/* Rand-Rcv-Info (3.3.1): Rand without its sender component: tokens move only
 * in answer to requests, with Rand's probes and database. */
RAND_BALANCER(rand_rcv_info, "rand-rcv-info",
              "receiver-initiated Rand: probes and the load database, no sender mode",
              1, 1, 1, 1, 0, 0);

/* Rand-Rcv (3.3.1): simple random work stealing. */
RAND_BALANCER(rand_rcv, "rand-rcv",
              "random work stealing: requests to random nodes, no load information",
              1, 0, 0, 0, 0, 0);

/* Rand-Snd-Info (3.3.2): Rand without its receiver component and without
 * probes: pushes at the threshold to the poorest node of the database (fed by
 * piggy-backed loads), or a random node; idle nodes wait for work. */
RAND_BALANCER(rand_snd_info, "rand-snd-info",
              "sender-initiated Rand: threshold pushes to the poorest known node",
              0, 0, 1, 0, 1, 1);

/* Rand-Hybrid-Noinfo (3.3.3): Rand without its load database: probes for
 * requests, pushes to random nodes. */
RAND_BALANCER(rand_hybrid_noinfo, "rand-hybrid-noinfo",
              "hybrid Rand without the load database: probes, random pushes",
              1, 1, 0, 0, 1, 0);

/* Rand-Hybrid (3.3.3): Rand-Rcv with a sender component; requests and pushes
 * to random nodes, no probes, no load information. */
RAND_BALANCER(rand_hybrid, "rand-hybrid",
              "naive hybrid: random requests and random pushes, no load information",
              1, 0, 0, 0, 1, 0);

/* Rand-Hybrid-Piggyback (3.3.3): Rand-Hybrid plus a database fed only by
 * balancing messages and piggy-backed loads (no probes), consulted for the
 * destination of a token transfer (sender mode); requests still go to random
 * nodes, as in Rand-Hybrid (the thesis names only "token transfer" among the
 * two choices Rand-Hybrid makes at random). */
RAND_BALANCER(rand_hybrid_piggyback, "rand-hybrid-piggyback",
              "naive hybrid whose pushes use piggy-backed load information",
              1, 0, 1, 0, 1, 1);
