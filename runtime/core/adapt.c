/* adapt.c: self-allocating nodes, ASAT for EARTH (ETC_ADAPT=1, etcrun --adapt;
 * docs/architecture.md "Self-allocating nodes", docs/protocols.md A1-A4).
 *
 * Severance's ASAT lets a thread of a job that notices, at a safe point, that
 * the machine runs more threads than it has processors put itself to sleep.
 * EARTH pins every activation to its node, so a node cannot leave a run; but
 * an idle node can stop competing for a CPU. Here, at idle steps (at most every
 * CHECK_AWAKE_SECONDS of idling) a node reads the machine's runnable tasks and,
 * when they exceed the CPUs the program may use by at least as many as there
 * are nodes from it to the last one, it becomes dormant: it stops asking the
 * balancer for work, tells every node (ADAPT), which then send it no
 * unsolicited token (etc_adapt_token_dest), and blocks between messages; it
 * still runs what arrives for its own activations. It reads the load again
 * every CHECK_DORMANT_SECONDS and wakes when the excess no longer covers it.
 * The highest-numbered nodes go first, and node 0 (MAIN's activation, the
 * termination detector) never does, so a run never loses all its nodes. */
#include <stdlib.h>
#include <string.h>

#include "core/rts.h"

/* An idle node reads the load at most this often: a read is a few system
 * calls, an idle step happens every few microseconds. */
#define CHECK_AWAKE_SECONDS 2e-3
/* A dormant node wakes this often to read the load (and only for that):
 * 64 dormant nodes cost a few thousand short wake-ups a second. */
#define CHECK_DORMANT_SECONDS 10e-3

typedef struct {
    uint32_t dormant;
} msg_adapt;

int etc_adapt_setting(void)
{
    const char *s = getenv("ETC_ADAPT");
    if (!s || !*s || strcmp(s, "0") == 0)
        return 0;
    if (strcmp(s, "1") == 0)
        return 1;
    etc_die("ETC_ADAPT='%s' is not 0 or 1", s);
}

void etc_adapt_init(int enabled)
{
    etc_adapt *a = &etc_rts.priv->adapt;
    a->enabled = etc_rts.num_nodes > 1 && enabled;
    if (!a->enabled)
        return;
    a->dormant_nodes = calloc((size_t)etc_rts.num_nodes, 1);
    if (!a->dormant_nodes)
        etc_fatal("out of memory (dormant nodes)");
    a->cpus = etc_usable_cpus();
}

/* A1: whether this node should be dormant at a machine load of `runnable`
 * tasks (this node among them: it is running while it reads). */
static int surplus_node(const etc_adapt *a, int runnable)
{
    if (etc_rts.node_id == 0 || runnable <= 0)
        return 0;
    int excess = runnable - a->cpus;
    return excess >= etc_rts.num_nodes - etc_rts.node_id;
}

static void announce(etc_adapt *a, int dormant)
{
    a->dormant = dormant;
    msg_adapt m = {(uint32_t)dormant};
    for (int k = 0; k < etc_rts.num_nodes; k++)
        if (k != etc_rts.node_id)
            etc_send(k, ETC_M_ADAPT, &m, sizeof m, NULL, 0);
}

double etc_adapt_idle_step(void)
{
    etc_adapt *a = &etc_rts.priv->adapt;
    if (!a->enabled)
        return -1.0;
    double now = etc_step_time();
    if (now >= a->next_check) {
        int dormant = surplus_node(a, etc_runnable_tasks());
        if (dormant != a->dormant)
            announce(a, dormant);
        a->next_check = now + (dormant ? CHECK_DORMANT_SECONDS : CHECK_AWAKE_SECONDS);
    }
    return a->next_check > now ? a->next_check - now : 0.0;
}

void etc_adapt_message(int src, int type, const void *body, size_t len)
{
    etc_adapt *a = &etc_rts.priv->adapt;
    msg_adapt m;
    etc_take_message(&m, sizeof m, body, len, 1, src, type);
    if (!a->enabled || src == 0 || m.dormant > 1) /* A1: node 0 never goes dormant */
        etc_bad_message(src, type, len);
    a->dormant_nodes[src] = (unsigned char)m.dormant;
}

int etc_adapt_token_dest(int dest, int reply)
{
    const etc_adapt *a = &etc_rts.priv->adapt;
    /* A2: an answer goes to the node that asked (its balancer waits for it) */
    if (!a->enabled || reply || !a->dormant_nodes[dest])
        return dest;
    int n = etc_rts.num_nodes;
    for (int k = (dest + 1) % n; k != dest; k = (k + 1) % n)
        if (k != etc_rts.node_id && !a->dormant_nodes[k])
            return k;
    return -1;
}
