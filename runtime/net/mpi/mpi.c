/* mpi.c: the MPI network layer: a node is an MPI rank (node = rank), started
 * by etcrun's launcher (etcpre/launch/mpi.py: mpirun, mpiexec or ETC_MPIRUN)
 * or directly by `mpirun -n N ./prog` or `srun -n N ./prog`.
 *
 * Messages (docs/protocols.md P1-P10) are the frames of net/common/wire.h,
 * coalesced per destination exactly as on tcp (F2) and fragmented above 256
 * KiB (F3); a destination's buffer is handed whole to MPI_Isend (no copy) and
 * comes back to a pool when the send completes. Every node keeps a ring of
 * persistent receives posted from any source on its own duplicate of
 * MPI_COMM_WORLD, each big enough for the largest buffer a sender hands over,
 * and handles them in the order they were posted: MPI matches a source's
 * messages to receives in posting order, so per-pair order holds (N1).
 * A block of 64 KiB or more goes by rendezvous (P10): a header frame in order
 * with the others, the data by an MPI_Isend of its own, which the receiver
 * matches with a receive straight into the destination address; from the
 * source itself when the receiver is ready soon enough, else from a copy.
 * Thread boundaries flush and poll time-gated as tcp does (F4); an idle node
 * spins a little, then sleeps in growing steps (P4), so oversubscribed ranks
 * do not take the CPU from the busy ones. MPI is initialised with
 * MPI_THREAD_SINGLE: a node is one thread.
 *
 * Faults (P6, P7): a fatal error calls MPI_Abort after printing it; a crash is
 * reported by the node (core/crash.c) and the MPI launcher ends the others; a
 * node that calls exit() during the run says so and aborts; a node killed from
 * outside is reported by etcrun's launcher from what the MPI launcher says
 * (under MPICH's, with the ranks' lifelines, P9).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>
#if defined(__SANITIZE_ADDRESS__) /* gcc's; clang's is __has_feature */
#define MPI_LAYER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MPI_LAYER_ASAN 1
#endif
#endif
#ifdef MPI_LAYER_ASAN
#include <sanitizer/lsan_interface.h>
/* What the MPI library allocates for itself at MPI_Init and keeps, in modules
 * it unloads at MPI_Finalize, is not the program's leak. */
#define LSAN_OFF() __lsan_disable()
#define LSAN_ON() __lsan_enable()
/* ... nor what its own threads allocate and keep (named once its modules stay
 * loaded: OMPI_MCA_mca_base_component_disable_dlclose below) */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libmpi.so\nleak:libopen-pal.so\nleak:libopen-rte.so\nleak:libpmix.so\n"
           "leak:mca_\nleak:libhwloc.so\nleak:libevent\nleak:libmpich.so\n";
}
/* Frames of the MPI library's threads lack frame pointers: the fast unwinder
 * stops in an unnamed module there, and no suppression can match that. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0";
}
#else
#define LSAN_OFF() ((void)0)
#define LSAN_ON() ((void)0)
#endif

#include "net/common/frag.h"
#include "net/common/gate.h"
#include "net/common/wire.h"
#include "etc.h"
#include "net/net.h"

ETC_NET_LAYER("mpi");

#define TAG 1                    /* every frame buffer travels with this tag */
#define FIRST_DATA_TAG 2         /* P10: a rendezvous's data has a tag of its own, from here */
#define MAX_MESSAGE (256u << 10) /* P1: the largest frame body; bigger are fragmented */
#define FLUSH_AT (64u << 10)     /* F2: hand a destination's buffer over at this size */
/* P1: the most a buffer can hold when handed over: just under FLUSH_AT, then
 * one more frame of the largest body, and the empty frame that ends it */
#define CHUNK (FLUSH_AT + MAX_MESSAGE + 2 * sizeof(etc_wire_hdr))
#define RECVS 8                  /* P2: receives kept posted */
#define POOL 16                  /* spare send buffers kept */
#define NET_BYE 0xFFFFu          /* P5: "I am done": nothing more comes from me */
#define NET_PUT 0xFFFEu          /* P10: a rendezvous's header; its data follows by tag */
#define PUT_MIN (64u << 10)      /* P10: blocks from this size go by rendezvous */
#define PUT_WAIT 10e-6           /* P10: a sender waits for "ready" this long, plus ... */
#define COPY_RATE 20e9           /* ... the time of a copy at this many bytes a second */
#define COPIES 4                 /* spare rendezvous copies kept ... */
#define COPY_KEEP (16u << 20)    /* ... of at most this size */
#define POLL_INTERVAL 20e-6      /* F4: at thread boundaries, poll at most this often */
#define SLEEP_MIN 20e-6          /* P4: an idle node's first sleep ... */
#define SLEEP_MAX 1e-3           /* ... doubling up to this */
#define SLEEP_MAX_FACTOR 64      /* both times the ranks per CPU, at most this */
#define SPIN_SECONDS 50e-6       /* P4: how long an idle node spins first */
#define FINISH_SECONDS 30.0      /* P5: the longest a node waits for the others' goodbyes */
#define AWAIT_SLEEP_MAX 4e-3     /* P4: a start-up collective's longest sleep, at most */
#define ABORT_PAUSE 0.1          /* P6: a failing rank's wait before MPI_Abort */

typedef struct {
    MPI_Request req;
    MPI_Status st;
    int done; /* completed (found by a wait), not handled yet */
    unsigned char *buf;
} recv_slot;

/* What a request of mpi.tx is, and what b holds then. */
typedef enum {
    SENT_FRAMES, /* a send of frames: b is the buffer */
    SENT_COPY,   /* P10: a send of a block from its copy: b is the copy */
    SENT_SIGNAL  /* P10: a "ready" sent: b is empty */
} sent_what;

typedef struct {
    MPI_Request req;
    MPI_Request ready; /* SENT_COPY: its "ready" awaited (MPI_REQUEST_NULL once in) */
    etc_wire_buf b;
    sent_what what;
} send_slot;

/* P10: a rendezvous's header frame, followed by the message to deliver once
 * the data is in place. */
typedef struct {
    uint64_t dst, n; /* where the data goes on the receiver, and its length */
    int32_t tag;     /* the data's tag */
    uint16_t type;   /* the message's type */
    uint16_t unused;
} put_hdr;

static struct {
    int me, n;
    MPI_Comm comm;
    int running;   /* started, not yet finishing or aborting: an exit() is a fault */
    int finishing; /* P5: what arrives now is dropped */
    int polling;   /* N5: no nested poll */
    int more;      /* a poll stopped after a buffer: the next boundary polls again */
    int byes;      /* goodbyes received while finishing */
    int *bye;      /* per node: it said goodbye (sends to it are dropped) */
    int oversubscribed;
    double sleep_min, sleep_max; /* P4: SLEEP_MIN and SLEEP_MAX times the ranks per CPU */
    double sleep_growth;         /* P4: each sleep step this many times the last */
    recv_slot rx[RECVS];
    int rx_head;   /* the oldest posted receive: the next to handle */
    int rx_unposted; /* the slots just before rx_head, handled, not yet posted again */
    send_slot *tx;
    int ntx, tx_cap;
    etc_wire_buf pool[POOL];
    int npool;
    etc_wire_buf copies[COPIES]; /* P10: spare buffers for copies of blocks */
    int ncopies;
    int puts_out;  /* P10: copies of blocks held: their send or their "ready" pending */
    int puts_moving; /* ... of which the receiver is taking (its "ready" came) */
    int *put_tag;  /* per destination: the tag of its last rendezvous */
    int tag_span;  /* P10: data tags are FIRST_DATA_TAG + [0, span), "ready" tags span more */
    etc_frag_in *frag; /* per source */
    etc_coalesce out;
    etc_gate gate;
} mpi;

/* ---------------------------------------------------------------- errors */

static void check(int rc, const char *what, int node)
{
    if (rc == MPI_SUCCESS)
        return;
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, text, &len);
    if (node >= 0)
        etc_fatal("%s (node %d) failed: %s", what, node, text);
    etc_fatal("%s failed: %s", what, text);
}

static void bad_frame(int k, const char *why)
{
    etc_fatal("bad frame from node %d: %s", k, why);
}

/* ---------------------------------------------------------------- sending */

static __attribute__((noinline)) void grow_send_slots(void)
{
    mpi.tx_cap = mpi.tx_cap ? 2 * mpi.tx_cap : 16;
    mpi.tx = etc_xrealloc(mpi.tx, (size_t)mpi.tx_cap * sizeof *mpi.tx);
}

/* A request to test in reap_sends: a slot of mpi.tx, holding `what`. */
static inline send_slot *new_send_slot(sent_what what)
{
    if (mpi.ntx == mpi.tx_cap)
        grow_send_slots();
    send_slot *s = &mpi.tx[mpi.ntx++];
    s->ready = MPI_REQUEST_NULL;
    s->what = what;
    return s;
}

/* The coalescing buffers' taker (F2, P1): dest's buffer, ended by an empty
 * frame, goes to MPI_Isend as it is; an empty one from the pool takes its
 * place. (It runs between a message and its answer: every instruction here is
 * in a round trip's time.) */
static inline void take_buffer(void *ctx, int dest, etc_wire_buf *b)
{
    (void)ctx;
    if (b->cap - b->len < sizeof(etc_wire_hdr))
        etc_wire_reserve(b, sizeof(etc_wire_hdr));
    memset(b->buf + b->len, 0, sizeof(etc_wire_hdr));
    b->len += sizeof(etc_wire_hdr);
    size_t len = etc_wire_pending(b);
    if (len > CHUNK)
        etc_fatal("internal error: a send buffer of %zu bytes for node %d (at most %zu)", len,
                  dest, (size_t)CHUNK);
    send_slot *s = new_send_slot(SENT_FRAMES);
    s->b = *b;
    check(MPI_Isend(b->buf + b->off, (int)len, MPI_BYTE, dest, TAG, mpi.comm, &s->req),
          "MPI_Isend", dest);
    if (mpi.npool) {
        *b = mpi.pool[--mpi.npool]; /* (emptied when it came back: F5) */
    } else {
        *b = (etc_wire_buf){0};
    }
}

/* Completed sends give their buffers back (a block's copy once its "ready" has
 * come too: no receive of ours is left behind); returns how many are still out. */
static int reap_sends(void)
{
    int j = 0, moving = 0;
    for (int i = 0; i < mpi.ntx; i++) {
        send_slot *s = &mpi.tx[i];
        int done = 0, came = 1;
        check(MPI_Test(&s->req, &done, MPI_STATUS_IGNORE), "MPI_Test of a send", -1);
        if (s->what == SENT_COPY && s->ready != MPI_REQUEST_NULL)
            check(MPI_Test(&s->ready, &came, MPI_STATUS_IGNORE), "MPI_Test of a ready", -1);
        if (!done || !came) {
            moving += s->what == SENT_COPY && came;
            mpi.tx[j++] = *s;
            continue;
        }
        etc_wire_buf b = mpi.tx[i].b;
        if (mpi.tx[i].what == SENT_SIGNAL)
            continue;
        if (mpi.tx[i].what == SENT_COPY) {
            mpi.puts_out--;
            if (mpi.ncopies < COPIES && b.cap <= COPY_KEEP)
                mpi.copies[mpi.ncopies++] = b;
            else
                etc_wire_free(&b);
        } else if (mpi.npool < POOL && b.cap <= 2 * CHUNK) {
            b.off = b.len = b.last = 0;
            mpi.pool[mpi.npool++] = b;
        } else {
            etc_wire_free(&b);
        }
    }
    mpi.ntx = j;
    mpi.puts_moving = moving;
    return j;
}

static void flush_all(void)
{
    etc_coalesce_take_all(&mpi.out, take_buffer);
}

void etc_net_send(int dest, int type, const void *a, size_t alen, const void *b, size_t blen)
{
    if (mpi.bye[dest])
        return; /* it finished: only balancer chatter can still be addressed to it */
    etc_coalesce_send(&mpi.out, dest, type, a, alen, b, blen);
}

int etc_net_extend(int dest, int type, const uint64_t key[2], const void *more, size_t n)
{
    if (mpi.bye[dest])
        return 0; /* (then send drops it) */
    return etc_coalesce_extend(&mpi.out, dest, type, key, more, n);
}

void etc_net_flush(void)
{
    flush_all();
}

/* P4: the ranks on this host against its CPUs, not one rank's binding */
int etc_net_oversubscribed(void)
{
    return mpi.oversubscribed;
}

/* P11: no launcher of ours can ask a rank what it runs */
int etc_net_nodes_say_interrupts(void)
{
    return 1;
}

size_t etc_net_max_message(void)
{
    return MAX_MESSAGE;
}

/* P10: a spare copy buffer of at least n bytes (its pages already touched
 * when it was used before), or a new one. */
static etc_wire_buf copy_buffer(size_t n)
{
    for (int i = 0; i < mpi.ncopies; i++) {
        if (mpi.copies[i].cap < n)
            continue;
        etc_wire_buf b = mpi.copies[i];
        mpi.copies[i] = mpi.copies[--mpi.ncopies];
        return b;
    }
    if (mpi.ncopies) /* none big enough: grow the last one */
        etc_wire_free(&mpi.copies[--mpi.ncopies]);
    return (etc_wire_buf){.buf = etc_xmalloc(n), .cap = n};
}

static char no_bytes[1]; /* the buffer of "ready", which has none */

/* P10: a block by rendezvous. The header goes with the destination's other
 * frames (N1), at once; the data goes by an MPI_Isend with a tag of its own,
 * which the receiver matches with a receive straight into the destination,
 * then says "ready". From `src` itself when "ready" comes within about the
 * time of a copy (the program may change `src` once this returns, so the send
 * must be over by then); else from a copy, so that a receiver busy in a long
 * thread, or two nodes putting to each other, never hold the sender longer. */
int etc_net_put(int dest, void *remote_dst, const void *src, size_t n, int type, const void *a,
                size_t alen)
{
    if (n < PUT_MIN || n > INT_MAX || alen > MAX_MESSAGE - sizeof(put_hdr))
        return -1;
    if (mpi.bye[dest])
        return 0; /* as etc_net_send */
    int last = mpi.put_tag[dest];
    int tag = last >= FIRST_DATA_TAG && last < FIRST_DATA_TAG + mpi.tag_span - 1
                  ? last + 1
                  : FIRST_DATA_TAG;
    mpi.put_tag[dest] = tag;
    MPI_Request ready;
    check(MPI_Irecv(no_bytes, 0, MPI_BYTE, dest, tag + mpi.tag_span, mpi.comm, &ready),
          "MPI_Irecv of a ready", dest);
    put_hdr h = {(uint64_t)(uintptr_t)remote_dst, n, tag, (uint16_t)type, 0};
    etc_piece pc[2] = {{&h, sizeof h}, {a, alen}};
    etc_coalesce_put(&mpi.out, dest, NET_PUT, 0, pc, 2, sizeof h + alen);
    etc_coalesce_flush(&mpi.out, dest);
    double give_up = etc_time() + PUT_WAIT + (double)n / COPY_RATE;
    int go = 0;
    for (;;) {
        check(MPI_Test(&ready, &go, MPI_STATUS_IGNORE), "MPI_Test of a ready", dest);
        if (go || etc_time() >= give_up)
            break;
        if (mpi.oversubscribed)
            sched_yield();
    }
    if (go) { /* the receiver waits for the data in its receive: this is short */
        MPI_Request data;
        check(MPI_Isend(src, (int)n, MPI_BYTE, dest, tag, mpi.comm, &data), "MPI_Isend", dest);
        for (int done = 0; !done;) {
            check(MPI_Test(&data, &done, MPI_STATUS_IGNORE), "MPI_Test of a block", dest);
            if (!done && mpi.oversubscribed)
                sched_yield();
        }
        return 0;
    }
    send_slot *s = new_send_slot(SENT_COPY);
    s->ready = ready; /* it comes when the receiver gets to the header */
    s->b = copy_buffer(n);
    memcpy(s->b.buf, src, n);
    check(MPI_Isend(s->b.buf, (int)n, MPI_BYTE, dest, tag, mpi.comm, &s->req), "MPI_Isend",
          dest);
    mpi.puts_out++;
    return 0;
}

int etc_net_read_remote(int node, void *local_dst, const void *remote_src, size_t n)
{
    (void)node;
    (void)local_dst;
    (void)remote_src;
    (void)n;
    return -1; /* P3: no single-copy path; blocks go by rendezvous (etc_net_put) */
}

int etc_net_write_remote(int node, void *remote_dst, const void *local_src, size_t n)
{
    (void)node;
    (void)remote_dst;
    (void)local_src;
    (void)n;
    return -1;
}

/* ---------------------------------------------------------------- receiving */

static void post(recv_slot *r)
{
    r->done = 0;
    check(MPI_Start(&r->req), "MPI_Start of a receive", -1);
}

/* P2: handled slots are posted again in the order they were handled (so the
 * ring stays in posting order), at the next poll or wait rather than at once:
 * a node answers a message before it pays for the new receive. */
static void repost(void)
{
    for (; mpi.rx_unposted > 0; mpi.rx_unposted--)
        post(&mpi.rx[(mpi.rx_head - mpi.rx_unposted + RECVS) % RECVS]);
}

/* Whether the oldest posted receive has completed (P2: only it may be handled
 * next, whatever the later ones hold). */
static int head_done(void)
{
    if (mpi.rx_unposted == RECVS)
        repost(); /* the head is one of them */
    recv_slot *r = &mpi.rx[mpi.rx_head];
    if (!r->done) {
        int flag = 0;
        check(MPI_Test(&r->req, &flag, &r->st), "MPI_Test of a receive", -1);
        r->done = flag;
    }
    return r->done;
}

/* P10: receives a rendezvous's data from node k straight into dst (into a
 * scratch buffer while finishing: it must still be matched), says "ready",
 * and waits for it: the frames after the header and the message it carries
 * wait behind it (N1); the sender sends the data once "ready" arrives, or
 * already has from a copy. */
static void receive_put(int k, const put_hdr *h)
{
    void *scratch = mpi.finishing ? etc_xmalloc((size_t)h->n) : NULL;
    MPI_Request req;
    check(MPI_Irecv(scratch ? scratch : (void *)(uintptr_t)h->dst, (int)h->n, MPI_BYTE, k,
                    h->tag, mpi.comm, &req),
          "MPI_Irecv of a block", k);
    send_slot *said = new_send_slot(SENT_SIGNAL);
    said->b = (etc_wire_buf){0};
    check(MPI_Isend(no_bytes, 0, MPI_BYTE, k, h->tag + mpi.tag_span, mpi.comm, &said->req),
          "MPI_Isend of a ready", k);
    int done = 0;
    MPI_Status st;
    for (;;) {
        check(MPI_Test(&req, &done, &st), "MPI_Test of a block", k);
        if (done)
            break;
        if (mpi.oversubscribed)
            sched_yield(); /* the sender may need this CPU to send */
    }
    free(scratch);
    int got = 0;
    MPI_Get_count(&st, MPI_BYTE, &got);
    if ((uint64_t)got != h->n)
        bad_frame(k, "a block shorter than its header says");
}

/* Delivers every frame of one received buffer from node k, up to the empty
 * frame that ends it (P1); `st` is its receive's status. The whole message
 * comes first: it is the frame of every round trip. */
static int deliver_buffer(int k, const unsigned char *buf, const MPI_Status *st)
{
    etc_frag_in *fr = &mpi.frag[k];
    size_t off = 0;
    int count = 0;
    for (;;) {
        etc_wire_hdr h;
        if (CHUNK - off < sizeof h)
            bad_frame(k, "no end"); /* (within CHUNK: the sender is broken) */
        memcpy(&h, buf + off, sizeof h);
        const unsigned char *body = buf + off + sizeof h;
        if (h.len > MAX_MESSAGE)
            bad_frame(k, "oversized");
        off += sizeof h + h.len;
        if (off > CHUNK)
            bad_frame(k, "no end");
        if (h.type - 1u < ETC_NET_TYPES - 1u && !h.flags && !fr->buf && !mpi.finishing) {
            etc_deliver(k, h.type, body, h.len);
            count++;
            continue;
        }
        if (h.type == 0 && h.len == 0 && !h.flags)
            break;
        if (h.type == NET_BYE && h.len == 0) {
            if (!mpi.bye[k]) {
                mpi.bye[k] = 1;
                mpi.byes++;
            }
            continue;
        }
        if (h.type == NET_PUT) {
            put_hdr ph;
            if (h.len < sizeof ph)
                bad_frame(k, "a rendezvous header too short");
            memcpy(&ph, body, sizeof ph);
            if (ph.n > INT_MAX || ph.tag < FIRST_DATA_TAG ||
                ph.tag >= FIRST_DATA_TAG + mpi.tag_span || ph.type == 0 ||
                ph.type >= ETC_NET_TYPES || fr->buf)
                bad_frame(k, "a malformed rendezvous header");
            receive_put(k, &ph);
            if (mpi.finishing)
                continue; /* N7 */
            etc_deliver(k, ph.type, body + sizeof ph, h.len - sizeof ph);
            count++;
            continue;
        }
        if (h.type == 0 || h.type >= ETC_NET_TYPES)
            bad_frame(k, "unknown type");
        if (mpi.finishing)
            continue; /* N7 */
        int got = etc_frag_receive(fr, NULL, k, h.type, h.flags, body, h.len);
        if (got < 0)
            bad_frame(k, "a fragment out of sequence");
        count += got;
    }
#ifdef ETC_DEBUG
    int len = 0;
    MPI_Get_count(st, MPI_BYTE, &len);
    ETC_ASSERT((size_t)len == off); /* the end frame is the buffer's end */
#else
    (void)st;
#endif
    return count;
}

/* Handles completed receives in posting order, reposting each later. An idle
 * node (`busy` 0) stops after the first buffer that delivers something, without
 * testing the next (a call into MPI's progress): the work it enabled, and the
 * reply, go first; `more` makes the next thread boundary drain the rest. */
static int drain(int busy)
{
    int count = 0;
    while ((busy || !count) && head_done()) {
        recv_slot *r = &mpi.rx[mpi.rx_head];
        int src = r->st.MPI_SOURCE;
        if (src < 0 || src >= mpi.n || src == mpi.me)
            etc_fatal("a message from an unexpected source (%d)", src);
        /* first: a handler may poll (which returns at once, N5) or wait */
        mpi.rx_head = mpi.rx_head == RECVS - 1 ? 0 : mpi.rx_head + 1;
        mpi.rx_unposted++;
        count += deliver_buffer(src, r->buf, &r->st);
    }
    mpi.more = !busy && count > 0;
    return count;
}

static int poll_layer(int busy)
{
    if (mpi.n == 1 || mpi.polling)
        return 0;
    mpi.polling = 1;
    flush_all();
    repost();
    if (mpi.ntx)
        reap_sends(); /* before the receives: not between a message and its reply */
    int count = drain(busy);
    flush_all();
    mpi.polling = 0;
    return count;
}

int etc_net_poll(void)
{
    return poll_layer(0);
}

/* F4: a poll costs calls into MPI, so at thread boundaries it happens at most
 * every POLL_INTERVAL (or at once when the last one left buffers waiting);
 * output is flushed at every boundary that has some. */
void etc_net_boundary(void)
{
    if (mpi.out.pending)
        flush_all();
    if (mpi.more || etc_gate_due(&mpi.gate))
        poll_layer(1); /* a busy node: everything that has come */
}

_Atomic uint64_t *etc_net_boundary_word(void)
{
    return NULL; /* the boundary logic (flush, time-gated poll) is in the call */
}

static struct timespec timespec_of(double s)
{
    return (struct timespec){(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
}

static void sleep_for(double s)
{
    struct timespec ts = timespec_of(s);
    nanosleep(&ts, NULL);
}

/* P4: spin (not when oversubscribed), then sleep in doubling steps, until a
 * receive completes or the time is up. MPI has no wait that sleeps. While the
 * receiver takes a block from its copy (P10) the steps stay short, and when the
 * copy is done with (sent, its "ready" in) they start again from the spin: the
 * receiver's answer is likely on its way, and one that found this node deep in a
 * sleep would make the receiver late for the next block's "ready" too, so that
 * each block after it went by copy. */
void etc_net_wait(double seconds)
{
    if (mpi.n == 1 || mpi.polling)
        return; /* N5: not from inside a handler */
    flush_all();
    repost();
    double now = etc_time(), end = seconds < 0 ? -1 : now + seconds;
    double spin_end = now + (mpi.oversubscribed ? 0 : SPIN_SECONDS);
    double step = mpi.sleep_min;
    for (;;) {
        if (head_done())
            return;
        int puts_before = mpi.puts_out;
        if (mpi.ntx)
            reap_sends();
        now = etc_time();
        if (mpi.puts_out < puts_before) { /* P10: a copy done with: sent, ready in */
            spin_end = now + (mpi.oversubscribed ? 0 : SPIN_SECONDS);
            step = mpi.sleep_min;
        }
        if (end >= 0 && now >= end)
            return;
        if (now < spin_end)
            continue;
        double s = mpi.puts_moving ? SLEEP_MIN : step; /* P10: the receiver may need us */
        if (end >= 0 && end - now < s)
            s = end - now;
        sleep_for(s); /* (under a copy being taken the step grows unused: its end resets it) */
        step *= mpi.sleep_growth;
        if (step > mpi.sleep_max)
            step = mpi.sleep_max;
    }
}

/* ---------------------------------------------------------------- the end */

static void release_receives(void)
{
    for (int i = 0; i < RECVS; i++) {
        recv_slot *r = &mpi.rx[i];
        if (!r->done) {
            MPI_Cancel(&r->req);
            MPI_Wait(&r->req, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&r->req);
    }
}

/* P5: goodbyes to every node, then receive (and drop) until every node's
 * goodbye and our own sends are done, so that no send stays unmatched. */
static void end_last_lines(void);

void etc_net_finish(void)
{
    end_last_lines();
    etc_flush_output_checked();
    mpi.running = 0;
    mpi.finishing = 1;
    if (mpi.n > 1) {
        for (int k = 0; k < mpi.n; k++)
            if (k != mpi.me)
                etc_coalesce_put(&mpi.out, k, NET_BYE, 0, NULL, 0, 0);
        flush_all();
        double deadline = etc_time() + FINISH_SECONDS, step = SLEEP_MIN;
        while (mpi.byes < mpi.n - 1 || reap_sends() > 0) {
            if (etc_time() > deadline) {
                fprintf(stderr, "etc: warning: node %d: the other nodes did not say goodbye "
                                "within %g s\n", mpi.me, FINISH_SECONDS);
                break;
            }
            repost();
            if (drain(1))
                continue;
            if (head_done())
                continue;
            sleep_for(step);
            if (step < SLEEP_MAX)
                step *= 2;
        }
        release_receives();
    }
    LSAN_OFF();
    MPI_Comm_free(&mpi.comm);
    MPI_Finalize();
    LSAN_ON();
    exit(0);
}

/* N8, P6: the fatal error is printed; MPI ends every rank, with status 1 (a
 * failure of the run, docs/language.md). MPI_Abort ends them at once, and
 * MPICH's launcher then drops what the rank wrote just before: a pause lets the
 * rank's own report through. */
void etc_net_abort(void)
{
    fflush(stdout);
    fflush(stderr);
    mpi.running = 0;
    struct timespec left = timespec_of(ABORT_PAUSE);
    while (mpi.n > 1 && nanosleep(&left, &left) != 0 && errno == EINTR)
        ; /* a profiling build's timer signal must not cut it short */
    MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1); /* not reached */
}

void etc_net_fatal_signal(void)
{
    mpi.running = 0; /* the signal ends the process; the MPI launcher ends the others */
}

/* MPI may not be called from a signal handler: output a long thread left
 * waits for its end (P4) */
void etc_net_urged(void)
{
}

/* P7: exit() in a node while the run goes on ends the run, saying so. */
static void on_exit_check(int status, void *arg)
{
    (void)arg;
    if (!mpi.running)
        return;
    mpi.running = 0;
    fflush(stdout);
    fprintf(stderr, "etc: error: node %d: exited with status %d while the run was going on (a "
                    "node must not call exit(); MAIN ends with END_FUNCTION() or RETURN())\n",
            mpi.me, status);
    etc_net_abort();
}

/* ---------------------------------------------------------------- output */

/* N10, P8: with ETC_TAG_OUTPUT each line starts with "[K] ", written with one
 * write() so the launcher's relay never splits it. */
typedef struct {
    int fd;
    char *buf;
    size_t len, cap;
} tagged;
static tagged tagged_out[2];

static void tagged_emit(tagged *t, const char *p, size_t n)
{
    char prefix[24];
    int pl = snprintf(prefix, sizeof prefix, "[%d] ", mpi.me);
    char *line = malloc((size_t)pl + n);
    if (!line)
        return;
    memcpy(line, prefix, (size_t)pl);
    memcpy(line + pl, p, n);
    size_t left = (size_t)pl + n;
    const char *q = line;
    while (left) {
        ssize_t w = write(t->fd, q, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        q += w;
        left -= (size_t)w;
    }
    free(line);
}

static ssize_t tagged_write(void *cookie, const char *data, size_t n)
{
    tagged *t = cookie;
    if (t->len + n > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + n)
            cap *= 2;
        char *nb = realloc(t->buf, cap);
        if (!nb)
            return -1;
        t->buf = nb;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, data, n);
    t->len += n;
    size_t start = 0;
    for (size_t i = 0; i < t->len; i++) {
        if (t->buf[i] != '\n')
            continue;
        tagged_emit(t, t->buf + start, i + 1 - start);
        start = i + 1;
    }
    memmove(t->buf, t->buf + start, t->len - start);
    t->len -= start;
    return (ssize_t)n;
}

static void tagged_drain(void)
{
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < 2; i++)
        if (tagged_out[i].len) {
            tagged_emit(&tagged_out[i], tagged_out[i].buf, tagged_out[i].len);
            tagged_out[i].len = 0;
        }
}

/* N10, P8: a last line without its newline gets one, so that the MPI launcher
 * does not glue it to another rank's line. stdout is line-buffered (and the
 * tagged streams keep what has no newline yet), so what is pending is such a line. */
static void end_last_lines(void)
{
    FILE *streams[2] = {stdout, stderr};
    for (int i = 0; i < 2; i++)
        if (__fpending(streams[i]) > 0 || tagged_out[i].len > 0)
            fputc('\n', streams[i]);
}

static void setup_tagging(void)
{
    const char *tag = getenv("ETC_TAG_OUTPUT");
    if (!tag || !*tag || strcmp(tag, "0") == 0)
        return;
    cookie_io_functions_t io = {.read = NULL, .write = tagged_write, .seek = NULL, .close = NULL};
    FILE *f[2];
    for (int i = 0; i < 2; i++) {
        tagged_out[i].fd = i + 1;
        f[i] = fopencookie(&tagged_out[i], "w", io);
        if (!f[i])
            etc_fatal("cannot set up the tagged output");
        setvbuf(f[i], NULL, _IOLBF, 1 << 16);
    }
    fflush(stdout);
    fflush(stderr);
    stdout = f[0];
    stderr = f[1];
    atexit(tagged_drain);
}

/* ---------------------------------------------------------------- start-up */

/* P9: Hydra's account of a rank that died does not say which rank failed.
 * Under it etcrun gives each rank of its host a FIFO, which the rank holds open
 * (never writing) while it lives: its end closes it as it closes the rank's
 * pipes to Hydra, before Hydra stops any other rank. A byte written says it is
 * held: a rank that ended before it held its own is not taken for one that
 * lived. (Not there, or nobody reading: nothing to hold.) */
static void hold_lifeline(void)
{
    const char *dir = getenv("ETC_MPI_LIFELINES");
    char path[PATH_MAX];
    if (!dir || !*dir)
        return;
    int n = snprintf(path, sizeof path, "%s/%d", dir, mpi.me);
    if (n <= 0 || (size_t)n >= sizeof path)
        return;
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC); /* held until the end */
    if (fd >= 0 && write(fd, "+", 1) != 1) {
        close(fd); /* not said held: etcrun will not rely on it */
    }
}

/* P4: more ranks on this machine than it has CPUs (all of them, not this
 * rank's affinity: the MPI launcher may bind each rank to one core). Open MPI's
 * and MPICH's launchers say how many ranks they started here; else ask MPI (a
 * collective: slow when many ranks share a CPU). */
static int ranks_here(void)
{
    static const char *const said[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof said / sizeof *said; i++) {
        const char *v = getenv(said[i]);
        char *end;
        long here = v ? strtol(v, &end, 10) : 0;
        if (v && *v && !*end && here >= 1 && here <= mpi.n)
            return (int)here;
    }
    /* on MPI_COMM_WORLD (ours comes later): its errors end the run in MPI */
    MPI_Comm local;
    int here = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &here);
    MPI_Comm_free(&local);
    return here;
}

/* P4: how idle waits are paced, from the ranks per CPU on this host. */
static void pace_idle_waits(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1)
        cpus = 1;
    int here = ranks_here();
    long per_cpu = (here + cpus - 1) / cpus;
    mpi.oversubscribed = here > cpus;
    /* every idle rank wakes at every step of its sleep: with many ranks a CPU,
     * short steps add up to a busy CPU, and a rank waits its turn for a CPU
     * longer than the steps anyway */
    double factor = (double)(per_cpu > SLEEP_MAX_FACTOR ? SLEEP_MAX_FACTOR : per_cpu);
    mpi.sleep_min = SLEEP_MIN * factor;
    mpi.sleep_max = SLEEP_MAX * factor;
    mpi.sleep_growth = 2;
    if (mpi.oversubscribed) {
        /* each message restarts the steps from the shortest, and a wake-up that
         * finds one is dearer than an empty one: fewer, longer steps */
        mpi.sleep_max *= 2;
        mpi.sleep_growth = 4;
    }
}

/* P4: waits for a start-up collective as an idle node waits. MPICH's blocking
 * collectives spin: with more ranks than CPUs, ranks still starting would wait
 * for a CPU behind ranks that spin. */
static void await_collective(MPI_Request *req, const char *what)
{
    double spin_end = etc_time() + (mpi.oversubscribed ? 0 : SPIN_SECONDS);
    double step = mpi.sleep_min;
    double longest = mpi.sleep_max < AWAIT_SLEEP_MAX ? mpi.sleep_max : AWAIT_SLEEP_MAX;
    for (;;) {
        int done = 0;
        check(MPI_Test(req, &done, MPI_STATUS_IGNORE), what, -1);
        if (done)
            return;
        if (etc_time() < spin_end)
            continue;
        sleep_for(step);
        step *= mpi.sleep_growth;
        if (step > longest)
            step = longest;
    }
}

void etc_net_start(int want, int *node_id, int *num_nodes)
{
    etc_gate_begin(&mpi.gate);
    /* Open MPI's own handlers for SIGSEGV and the like would print a backtrace
     * after the core's report (core/crash.c): not unless the user asks */
    setenv("OMPI_MCA_opal_signal", "", 0);
#ifdef MPI_LAYER_ASAN
    setenv("OMPI_MCA_mca_base_component_disable_dlclose", "1", 0);
#endif
    int provided = 0;
    LSAN_OFF();
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided);
    LSAN_ON();
    if (rc != MPI_SUCCESS)
        etc_die("MPI_Init_thread failed");
    (void)provided; /* every library offers SINGLE */
    /* P8: MPICH's MPI_Init makes stdout unbuffered; a line must stay one write,
     * and a last line without its newline must stay pending to be ended. (A
     * buffer of our own: without one, glibc keeps the unbuffered stream's byte.) */
    static char stdout_buffer[1 << 16];
    fflush(stdout);
    setvbuf(stdout, stdout_buffer, _IOLBF, sizeof stdout_buffer);
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi.me);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi.n);
    hold_lifeline();
    pace_idle_waits();
    /* P2: a communicator of our own, so that nothing else's messages mix with
     * ours; errors come back to us and are reported as fatal errors */
    LSAN_OFF();
    MPI_Request dup;
    check(MPI_Comm_idup(MPI_COMM_WORLD, &mpi.comm, &dup), "MPI_Comm_idup", -1);
    await_collective(&dup, "MPI_Comm_idup");
    LSAN_ON();
    MPI_Comm_set_errhandler(mpi.comm, MPI_ERRORS_RETURN);
    if (want > 0 && want != mpi.n) {
        if (mpi.me == 0)
            fprintf(stderr, "etc: error: ETC_NODES=%d but MPI started %d rank%s (run mpi "
                            "programs with etcrun -n N, or mpirun -n N without ETC_NODES)\n",
                    want, mpi.n, mpi.n == 1 ? "" : "s");
        fflush(stderr);
        MPI_Finalize();
        exit(2);
    }
    if (mpi.n > ETC_MAX_NODES) {
        if (mpi.me == 0)
            fprintf(stderr, "etc: error: %d MPI ranks; a run has at most %d nodes\n", mpi.n,
                    ETC_MAX_NODES);
        fflush(stderr);
        MPI_Finalize();
        exit(2);
    }
    mpi.bye = calloc((size_t)mpi.n, sizeof *mpi.bye);
    mpi.frag = calloc((size_t)mpi.n, sizeof *mpi.frag);
    mpi.put_tag = calloc((size_t)mpi.n, sizeof *mpi.put_tag);
    int *tag_ub = NULL, has_ub = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &has_ub);
    int ub = has_ub && tag_ub && *tag_ub > 32767 ? *tag_ub : 32767; /* 32767: MPI's least */
    mpi.tag_span = (ub - FIRST_DATA_TAG + 1) / 2;
    if (!mpi.bye || !mpi.frag || !mpi.put_tag)
        etc_die("out of memory");
    etc_coalesce_init(&mpi.out, mpi.n, FLUSH_AT, MAX_MESSAGE, NULL, NULL);
    mpi.out.take = take_buffer;
    if (mpi.n > 1)
        for (int i = 0; i < RECVS; i++) {
            mpi.rx[i].buf = etc_xmalloc(CHUNK);
            check(MPI_Recv_init(mpi.rx[i].buf, (int)CHUNK, MPI_BYTE, MPI_ANY_SOURCE, TAG,
                                mpi.comm, &mpi.rx[i].req), "MPI_Recv_init", -1);
            post(&mpi.rx[i]);
        }
    setup_tagging();
    on_exit(on_exit_check, NULL);
    mpi.running = 1;
    /* every rank is up before MAIN starts computing (as smp's R9) */
    MPI_Request all_up;
    check(MPI_Ibarrier(mpi.comm, &all_up), "MPI_Ibarrier", -1);
    await_collective(&all_up, "MPI_Ibarrier");
    etc_gate_ready(&mpi.gate, POLL_INTERVAL);
    *node_id = mpi.me;
    *num_nodes = mpi.n;
}
