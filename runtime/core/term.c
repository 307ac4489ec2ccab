/* term.c: termination by quiescence across nodes (reference section 3;
 * docs/protocols.md, rules W1-W6).
 *
 * The run is over when no node has a ready thread or a token and no work
 * message is in flight. Every node counts the work messages it has sent and
 * received (core message types up to ETC_M_LAST_WORK; balancer requests and
 * these probes never create work and are not counted). Node 0, when idle,
 * runs waves: it asks every node for (idle, sent, received). The run is over
 * after two consecutive waves in which every node was idle, the sums of sent
 * and received were equal, and neither sum changed between the waves
 * (Mattern's four-counter method with idle flags): counters only grow, so
 * equal sums mean no node received anything between its two answers, so no
 * node was woken, so at the moment between the waves every node was idle and
 * nothing was in flight.
 *
 * A node that answers "busy" tells node 0 when it next becomes idle, so waves
 * run only when they can succeed; a wave that finds every node idle but the
 * sums unequal (a message in flight) is repeated shortly after. */
#include <string.h>

#include "core/rts.h"

typedef struct {
    uint32_t wave;
    uint32_t idle;
    uint64_t sent, recv;
} msg_state;

typedef struct {
    uint32_t wave;
} msg_probe;

#define RETRY_SECONDS 20e-6
/* Node 0 starts a wave only after it has been idle this long: fine-grain programs
 * are idle for short moments all the time (waiting for a remote answer), and a
 * wave per moment would double their messages. The end of a run is seen this
 * much later. */
#define WAVE_DELAY_SECONDS 200e-6

static etc_term *term_state(void)
{
    return &etc_rts.priv->term;
}

static int really_idle(void)
{
    return term_state()->idle && !etc_work_here();
}

/* A node that answered a probe "busy" tells node 0 once it is idle, so that
 * node 0 runs its next wave only when it can succeed. */
static void report_idle_if_asked(etc_term *t)
{
    if (t->answered_busy && really_idle()) {
        t->answered_busy = 0;
        etc_send(0, ETC_M_TERM_IDLE, NULL, 0, NULL, 0);
    }
}

void etc_term_enter_idle(void)
{
    etc_term *t = term_state();
    t->idle = 1;
    if (etc_rts.node_id != 0) {
        report_idle_if_asked(t);
    } else {
        t->want_wave = 1;
        t->delay_from_step = 1; /* no clock read here: a node enters idle per message */
    }
}

void etc_term_leave_idle(void)
{
    term_state()->idle = 0;
}

/* W3 */
static void start_wave(void)
{
    etc_term *t = term_state();
    t->wave++;
    t->wave_running = 1;
    t->want_wave = 0;
    t->replies = 0;
    t->all_idle = 1;
    t->sum_sent = t->said_sent = t->sent;
    t->sum_recv = t->said_recv = t->recv;
    msg_probe m = {t->wave};
    for (int k = 1; k < etc_rts.num_nodes; k++)
        etc_send(k, ETC_M_TERM_PROBE, &m, sizeof m, NULL, 0);
}

/* W4, W5 */
static void end_wave(void)
{
    etc_term *t = term_state();
    ETC_ASSERT(t->wave_running && t->replies == etc_rts.num_nodes - 1);
    t->wave_running = 0;
    int ok = t->all_idle && t->sum_sent == t->sum_recv;
    if (ok && t->prev_ok && t->sum_sent == t->prev_sent && t->sum_recv == t->prev_recv) {
        /* W4: node 0 was idle at both waves and nothing reached it since */
        ETC_ASSERT(!etc_work_here() && t->sent == t->said_sent && t->recv == t->said_recv);
        for (int k = 1; k < etc_rts.num_nodes; k++)
            etc_send(k, ETC_M_TERM_EXIT, NULL, 0, NULL, 0);
        t->over = 1;
        return;
    }
    t->prev_ok = ok;
    t->prev_sent = t->sum_sent;
    t->prev_recv = t->sum_recv;
    if (ok) {
        t->want_wave = 1; /* confirm with a second wave at once */
    } else if (t->all_idle) {
        t->want_wave = 1; /* a message is in flight: look again shortly */
        t->next_wave = etc_time() + RETRY_SECONDS;
    }
    /* else: the busy nodes will say when they are idle */
}

/* How long node 0 may block before a wave is due (< 0: until a message). */
double etc_term_wait_hint(void)
{
    etc_term *t = term_state();
    if (etc_rts.node_id != 0 || !t->want_wave || t->wave_running)
        return -1.0;
    if (t->delay_from_step)
        return WAVE_DELAY_SECONDS;
    if (t->next_wave <= 0)
        return 0.0;
    double d = t->next_wave - etc_step_time();
    return d > 0 ? d : 0.0;
}

/* Every idle step. Other nodes report idleness here too, not only when they
 * enter idle(): work may also leave without running (a balancer may give the
 * last token away while the node is in its idle loop), and then node 0 would
 * wait for ever. Node 0 starts a wave when one is wanted. */
void etc_term_idle_step(void)
{
    etc_term *t = term_state();
    if (etc_rts.node_id != 0) {
        report_idle_if_asked(t);
        return;
    }
    if (t->over || t->wave_running || !t->want_wave)
        return;
    if (!really_idle())
        return;
    if (t->delay_from_step) {
        t->delay_from_step = 0;
        t->next_wave = etc_step_time() + WAVE_DELAY_SECONDS;
        return;
    }
    if (t->next_wave > 0) {
        if (etc_step_time() < t->next_wave)
            return;
        t->next_wave = 0;
    }
    start_wave();
}

void etc_term_message(int src, int type, const void *body, size_t len)
{
    etc_term *t = term_state();
    switch (type) {
    case ETC_M_TERM_PROBE: {
        msg_probe p;
        if (len != sizeof p)
            break;
        memcpy(&p, body, sizeof p);
        msg_state s = {p.wave, (uint32_t)really_idle(), t->sent, t->recv};
        if (!s.idle)
            t->answered_busy = 1;
        t->said_sent = t->sent;
        t->said_recv = t->recv;
        etc_send(src, ETC_M_TERM_STATE, &s, sizeof s, NULL, 0);
        return;
    }
    case ETC_M_TERM_STATE: {
        msg_state s;
        if (len != sizeof s || etc_rts.node_id != 0)
            break;
        memcpy(&s, body, sizeof s);
        if (!t->wave_running || s.wave != t->wave)
            return; /* an answer to an abandoned wave */
        ETC_ASSERT(t->replies < etc_rts.num_nodes - 1);
        t->all_idle &= (int)s.idle;
        t->sum_sent += s.sent;
        t->sum_recv += s.recv;
        if (++t->replies == etc_rts.num_nodes - 1)
            end_wave();
        return;
    }
    case ETC_M_TERM_IDLE:
        if (etc_rts.node_id != 0)
            break;
        t->want_wave = 1;
        if (t->next_wave <= 0)
            t->next_wave = etc_time() + WAVE_DELAY_SECONDS;
        return;
    case ETC_M_TERM_EXIT:
        /* W4: the detector saw this node idle, with these counts, at two waves
         * in a row with nothing in flight: no work can have reached it since */
        ETC_ASSERT(!etc_work_here() && t->sent == t->said_sent && t->recv == t->said_recv);
        t->over = 1;
        return;
    default:
        break;
    }
    etc_fatal("malformed termination message (type %d, %zu bytes) from node %d", type, len, src);
}
