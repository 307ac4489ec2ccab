/* remote.c: operations that reach another node, and their message handlers.
 *
 * Every remote operation is an active message to the node that owns the
 * address it names (thesis 2.3.5-2.3.6): the handler runs there at its next
 * poll. Split-phase transfers signal their sync slot once the data is in
 * place; where the slot lives on a third node, the handler sends it a SYNC.
 * Block moves use the network layer's single-copy path where it has one, or
 * its rendezvous (etc_net_put: the bytes placed, then an empty PUT that
 * signals), and otherwise travel as PUT pieces, the last one carrying the
 * signal (messages between two nodes arrive in order). */
#include <string.h>

#include "core/rts.h"

typedef struct {
    uint64_t slot;
} msg_sync;

typedef struct {
    uint64_t slot;
    int64_t v;
} msg_incr;

typedef struct {
    uint64_t fp, ip;
} msg_spawn;

typedef struct {
    uint64_t dest, slot;
    uint64_t size;
    unsigned char bytes[8];
} msg_data;

typedef struct {
    uint64_t src, dest, slot;
    uint64_t size;
} msg_get;

typedef struct {
    uint64_t dest, slot, n;
} msg_put;

typedef struct {
    uint64_t src, dest, slot, n;
} msg_blkget;

typedef union {
    struct {
        uint64_t fn;
        uint32_t size, zero; /* the bytes of one call; then one or more calls (N13) */
    };
    uint64_t key[2]; /* what a call joining the message must begin with */
} msg_invoke;

/* Every parameter frame starts with the etc_ret of its start (etcpre's lowering);
 * an INVOKE's resumes nobody, so it is all zeros and the receiver writes it back
 * instead of reading it from the wire. The checking build's also names who
 * started the function, for its reports: sent whole. */
#ifdef ETC_CHECK
#define INVOKE_SENT_FROM ((size_t)0)
#else
#define INVOKE_SENT_FROM sizeof(etc_ret)
#endif

#define U64(p) ((uint64_t)(uintptr_t)(p))
#define PTR(u) ((void *)(uintptr_t)(u))

/* A GLOBAL pointer as another node must read it: an untagged (local) one is
 * this node's, so it gets this node's tag; NULL stays NULL ("no slot"). */
static uint64_t G64(const void *p)
{
    uintptr_t u = (uintptr_t)p;
    return u && !(u >> ETC_ADDR_BITS) ? (uint64_t)(u | etc_rts.gtag) : (uint64_t)u;
}

/* The handler table (below): a message type's handler, and whether the message
 * carries work. */
typedef void (*etc_handler)(int src, int type, const void *body, size_t len);
typedef struct {
    etc_handler fn;
    int work;
} handler_entry;
static const handler_entry *entry(int type);

void etc_send(int dest, int type, const void *a, size_t alen, const void *b, size_t blen)
{
    if (entry(type)->work)
        etc_term_work_sent(); /* W1 */
    if (dest < 0 || dest >= etc_rts.num_nodes) {
        char nodes[64];
        etc_fatal_in_thread("a GLOBAL address names node %d, which does not exist (%s)", dest,
                            etc_run_nodes(nodes, sizeof nodes));
    }
#ifdef ETC_CHECK
    etc_check_send(dest, type, a, alen, b, blen);
#elif defined(ETC_TRACE)
    etc_trace_send(dest, type, a, alen, b, blen);
#else
    etc_net_send(dest, type, a, alen, b, blen);
#endif
}

static void send_comm(int dest, int type, const void *a, size_t alen, const void *b,
                      size_t blen)
{
    ETC_PROF_ADD(remote_comms, 1);
    etc_send(dest, type, a, alen, b, blen);
}

/* Signals a slot named by a GLOBAL pointer, wherever it is. */
static void signal_slot(etc_slot *g)
{
    if (!g)
        return;
    if (etc_is_local(g)) {
        etc_slot *s = etc_addr(g);
#ifdef ETC_CHECK
        etc_check_signal(s, "a transfer's sync", "(runtime)", 0);
#endif
        etc_sync_local(s);
    } else {
        etc_rsync_remote(g);
    }
}

/* ---------------------------------------------------------------- senders */

void etc_rsync_remote(etc_slot *g)
{
    msg_sync m = {U64(etc_addr(g))};
    send_comm(etc_owner_of(g), ETC_M_SYNC, &m, sizeof m, NULL, 0);
}

void etc_incr_rsync_remote(etc_slot *g, int v)
{
    msg_incr m = {U64(etc_addr(g)), v};
    send_comm(etc_owner_of(g), ETC_M_INCR, &m, sizeof m, NULL, 0);
}

void etc_rspawn_remote(void *g, etc_thread ip)
{
    msg_spawn m = {U64(etc_addr(g)), U64(ip)};
    send_comm(etc_owner_of(g), ETC_M_SPAWN, &m, sizeof m, NULL, 0);
}

void etc_data_remote(void *dest, const void *value, size_t size, etc_slot *slot)
{
    if (etc_is_local(dest)) { /* the data is here; only the slot is remote */
        memcpy(etc_addr(dest), value, size);
        signal_slot(slot);
        return;
    }
    msg_data m = {U64(etc_addr(dest)), G64(slot), size, {0}};
    memcpy(m.bytes, value, size);
    send_comm(etc_owner_of(dest), ETC_M_DATA, &m, sizeof m, NULL, 0);
}

void etc_get_remote(const void *src, void *dest, size_t size, etc_slot *slot)
{
    if (etc_is_local(src)) {
        unsigned char v[8];
        memcpy(v, etc_addr(src), size);
        etc_data_remote(dest, v, size, slot);
        return;
    }
    msg_get m = {U64(etc_addr(src)), G64(dest), G64(slot), size};
    send_comm(etc_owner_of(src), ETC_M_GET, &m, sizeof m, NULL, 0);
}

void etc_invoke_remote(int node, etc_thread fn, void *pp, size_t size)
{
    if (node < 0 || node >= etc_rts.num_nodes) {
        char nodes[64];
        etc_fatal_in_thread("INVOKE: node %d does not exist (%s)", node,
                            etc_run_nodes(nodes, sizeof nodes));
    }
    ETC_ASSERT(size >= sizeof(etc_ret) && ((etc_ret *)pp)->ip == NULL && size <= UINT32_MAX);
    size_t sent = size - INVOKE_SENT_FROM;
    const char *call = (const char *)pp + INVOKE_SENT_FROM;
    msg_invoke m = {{U64(fn), (uint32_t)sent, 0}};
#if !defined(ETC_CHECK) && !defined(ETC_TRACE) /* (there each call names its caller) */
    /* N13: a call of the function the last message to `node` calls joins it, while
     * the layer still holds that message: pipelined INVOKEs travel as one */
    if (!sent || !etc_net_extend(node, ETC_M_INVOKE, m.key, call, sent))
#endif
        etc_send(node, ETC_M_INVOKE, &m, sizeof m, call, sent);
    etc_block_free(pp, size);
}

/* Bytes at local `src` to `dest` on another node, then signal `slot`. */
static void put_bytes(const void *src, void *dest, size_t n, etc_slot *slot)
{
    int owner = etc_owner_of(dest);
    if (n && etc_net_write_remote(owner, etc_addr(dest), src, n) == 0) {
        ETC_PROF_ADD(remote_comms, 1);
        signal_slot(slot);
        return;
    }
    uint64_t d = U64(etc_addr(dest));
#if !defined(ETC_CHECK) && !defined(ETC_TRACE) /* they prefix every body: PUT pieces there */
    /* a rendezvous (N12): the layer places the bytes, then delivers an empty
     * PUT that signals the slot (its bytes are in place) */
    msg_put done = {d, G64(slot), 0};
    if (n && owner >= 0 && owner < etc_rts.num_nodes && /* else the error of etc_send */
        etc_net_put(owner, etc_addr(dest), src, n, ETC_M_PUT, &done, sizeof done) == 0) {
        etc_term_work_sent(); /* W1: the PUT is delivered and counted there */
        ETC_PROF_ADD(remote_comms, 1);
        return;
    }
#endif
    /* pieces of equal size, at most what the layer sends whole: no small last
     * piece (1 MiB was four full pieces and 96 bytes), which a layer receiving
     * pieces in place (N11) would read into its buffer with the next move's
     * first bytes */
    size_t most = etc_net_max_message() - sizeof(msg_put);
    size_t pieces = n ? (n + most - 1) / most : 1;
    size_t piece = (n + pieces - 1) / pieces;
    const char *s = src;
    do {
        size_t k = n < piece ? n : piece;
        msg_put m = {d, k == n ? G64(slot) : 0, k};
        send_comm(owner, ETC_M_PUT, &m, sizeof m, s, k);
        s += k;
        d += k;
        n -= k;
    } while (n);
}

void etc_blkmov_sync(const void *src, void *dest, long n, etc_slot *slot)
{
    if (n < 0)
        etc_fatal("BLKMOV of a negative length (%ld bytes)", n);
    if (etc_is_local(src)) {
        if (etc_is_local(dest)) {
            memmove(etc_addr(dest), etc_addr(src), (size_t)n);
            signal_slot(slot);
        } else {
            put_bytes(etc_addr(src), dest, (size_t)n, slot);
        }
        return;
    }
    if (etc_is_local(dest) && n &&
        etc_net_read_remote(etc_owner_of(src), etc_addr(dest), etc_addr(src), (size_t)n) == 0) {
        ETC_PROF_ADD(remote_comms, 1);
        signal_slot(slot);
        return;
    }
    msg_blkget m = {U64(etc_addr(src)), G64(dest), G64(slot), (uint64_t)n};
    send_comm(etc_owner_of(src), ETC_M_BLKGET, &m, sizeof m, NULL, 0);
}

/* ---------------------------------------------------------------- handlers */

void etc_bad_message(int src, int type, size_t len)
{
    etc_fatal("malformed message (type %d, %zu bytes) from node %d", type, len, src);
}

static void handle_sync(int src, int type, const void *body, size_t len)
{
    msg_sync m;
    etc_take_message(&m, sizeof m, body, len, 1, src, type);
#ifdef ETC_CHECK
    etc_check_signal(PTR(m.slot), "RSYNC from another node", "(runtime)", 0);
#endif
    etc_sync_local(PTR(m.slot));
}

static void handle_incr(int src, int type, const void *body, size_t len)
{
    msg_incr m;
    etc_take_message(&m, sizeof m, body, len, 1, src, type);
#ifdef ETC_CHECK
    etc_check_signal(PTR(m.slot), "INCR_RSYNC from another node", "(runtime)", 0);
#endif
    etc_incr_sync_local(PTR(m.slot), (int)m.v);
}

static void handle_spawn(int src, int type, const void *body, size_t len)
{
    msg_spawn m;
    etc_take_message(&m, sizeof m, body, len, 1, src, type);
    etc_rq_push((etc_thread)PTR(m.ip), PTR(m.fp), 1);
}

static void handle_data(int src, int type, const void *body, size_t len)
{
    msg_data m;
    etc_take_message(&m, sizeof m, body, len, 1, src, type);
    if (m.size > sizeof m.bytes)
        etc_bad_message(src, type, len);
    memcpy(PTR(m.dest), m.bytes, m.size);
    signal_slot(PTR(m.slot));
}

static void handle_get(int src, int type, const void *body, size_t len)
{
    msg_get m;
    etc_take_message(&m, sizeof m, body, len, 1, src, type);
    if (m.size > 8)
        etc_bad_message(src, type, len);
    unsigned char v[8];
    memcpy(v, PTR(m.src), m.size);
    etc_data_remote(PTR(m.dest), v, m.size, PTR(m.slot));
}

static void handle_put(int src, int type, const void *body, size_t len)
{
    msg_put m;
    etc_take_message(&m, sizeof m, body, len, 0, src, type);
    if (m.n != len - sizeof m)
        etc_bad_message(src, type, len);
    memcpy(PTR(m.dest), (const char *)body + sizeof m, m.n);
    signal_slot(PTR(m.slot));
}

/* N11: a PUT's bytes go straight to its destination. Not in the checking and
 * tracing builds: their bodies start with the sender's origin, which
 * etc_deliver takes off, and the checking build checks the store. */
void *etc_deliver_place(int src, int type, const void *head, size_t have, size_t len,
                        size_t *at)
{
    (void)src;
#if defined(ETC_CHECK) || defined(ETC_TRACE)
    (void)type;
    (void)head;
    (void)have;
    (void)len;
    (void)at;
    return NULL;
#else
    msg_put m;
    if (type != ETC_M_PUT || have < sizeof m)
        return NULL;
    memcpy(&m, head, sizeof m);
    if (m.n != len - sizeof m)
        return NULL; /* malformed: delivered whole, handle_put reports it */
    *at = sizeof m;
    return PTR(m.dest);
#endif
}

void etc_deliver_placed(int src, int type, const void *head, size_t at, size_t len)
{
    msg_put m;
    if (type != ETC_M_PUT || at != sizeof m)
        etc_bad_message(src, type, len);
    memcpy(&m, head, sizeof m);
    ETC_PART_BEGIN(etc_prof_part_of_message(type));
    etc_term_work_received(); /* W1, as etc_deliver */
    signal_slot(PTR(m.slot));
    ETC_PART_END();
}

static void handle_blkget(int src, int type, const void *body, size_t len)
{
    msg_blkget m;
    etc_take_message(&m, sizeof m, body, len, 1, src, type);
    etc_blkmov_sync(PTR(m.src), PTR(m.dest), (long)m.n, PTR(m.slot));
}

static void handle_invoke(int src, int type, const void *body, size_t len)
{
    msg_invoke m;
    etc_take_message(&m, sizeof m, body, len, 0, src, type);
    size_t sent = m.size, all = len - sizeof m;
    if (m.zero || (sent ? all == 0 || all % sent != 0 : all != 0))
        etc_bad_message(src, type, len); /* (one call at least, whole calls only) */
    etc_thread fn = (etc_thread)PTR(m.fn);
    const char *call = (const char *)body + sizeof m;
    for (size_t k = sent ? all / sent : 1; k > 0; k--, call += sent) { /* N13 */
        char *pp = etc_frame_alloc(INVOKE_SENT_FROM + sent);
        if (INVOKE_SENT_FROM)
            *(etc_ret *)pp = (etc_ret){0};
        etc_copy_small(pp + INVOKE_SENT_FROM, call, sent);
        etc_rq_push(fn, pp, 0);
    }
}

static void handle_prof(int src, int type, const void *body, size_t len)
{
    (void)type;
    etc_prof_message(src, body, len);
}

static void handle_waiting(int src, int type, const void *body, size_t len)
{
    (void)type;
    etc_waiting_message(src, body, len);
}

static void handle_trace_clock(int src, int type, const void *body, size_t len)
{
#ifdef ETC_TRACE
    (void)type;
    etc_trace_clock_message(src, body, len);
#else
    (void)body;
    etc_bad_message(src, type, len); /* only the tracing build sends it */
#endif
}

/* The handler table (docs/protocols.md, M1): every message type, its handler,
 * and whether it carries work -- whether it may make its receiver busy, so
 * that termination detection counts it sent and received (W1). */
static const handler_entry handlers[ETC_NET_TYPES] = {
    [ETC_M_SYNC] = {handle_sync, 1},
    [ETC_M_INCR] = {handle_incr, 1},
    [ETC_M_SPAWN] = {handle_spawn, 1},
    [ETC_M_DATA] = {handle_data, 1},
    [ETC_M_GET] = {handle_get, 1},
    [ETC_M_PUT] = {handle_put, 1},
    [ETC_M_BLKGET] = {handle_blkget, 1},
    [ETC_M_INVOKE] = {handle_invoke, 1},
    [ETC_M_TOKEN] = {etc_balance_token_message, 1},
    [ETC_M_TERM_PROBE] = {etc_term_message, 0},
    [ETC_M_TERM_STATE] = {etc_term_message, 0},
    [ETC_M_TERM_IDLE] = {etc_term_message, 0},
    [ETC_M_TERM_EXIT] = {etc_term_message, 0},
    [ETC_M_PROF] = {handle_prof, 0},
    [ETC_M_WAITING] = {handle_waiting, 0},
    [ETC_M_TRACE_CLOCK] = {handle_trace_clock, 0},
    [ETC_M_ADAPT] = {etc_adapt_message, 0},
    [ETC_LB_MSG ... ETC_LB_MSG + ETC_LB_MSG_COUNT - 1] = {etc_balance_message, 0},
};

static const handler_entry no_handler = {NULL, 0};

static const handler_entry *entry(int type)
{
    return type > 0 && type < ETC_NET_TYPES ? &handlers[type] : &no_handler;
}

void etc_deliver(int src, int type, const void *body, size_t len)
{
    const handler_entry *h = entry(type);
    if (!h->fn)
        etc_bad_message(src, type, len);
#ifdef ETC_CHECK
    etc_origin outer;
    etc_check_receive(&outer, &body, &len, src, type);
#endif
#ifdef ETC_TRACE
    etc_trace_msg trace_outer; /* the handler acts for the thread that sent it */
    etc_trace_receive(&trace_outer, &body, &len, src, type);
#endif
    ETC_PART_BEGIN(etc_prof_part_of_message(type));
    if (h->work)
        etc_term_work_received(); /* W1 */
    h->fn(src, type, body, len);
    ETC_PART_END();
#ifdef ETC_TRACE
    etc_trace_received(&trace_outer, src, type);
#endif
#ifdef ETC_CHECK
    etc_check_received(&outer);
#endif
}
