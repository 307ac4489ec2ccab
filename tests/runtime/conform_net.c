/* conform_net.c: the conformance test of the network layer interface
 * (runtime/net/net.h), run on every layer by tests/runtime/test_conformance.py.
 *
 * This program is a stand-in core: it defines the core services net.h lets a
 * layer use and nothing else, so linking it with a layer alone
 * (libetc_net_<target>.a) also checks that the layer reaches for no other
 * core symbol. Started like any program of its target (etcrun -n N), every
 * node runs these phases, each ended by a barrier through node 0:
 *   1 order     every node sends every other node 3000 messages of 0-100
 *               bytes, in one piece or two, with an empty one after every
 *               hundredth, polling now and then (N1, N5);
 *   2 extend    every node sends every other node 20000 pieces of 1-200
 *               bytes (2 MB): each joins the message before it through
 *               etc_net_extend where the layer lets it (N13), or begins a new
 *               one; a message of another type, a flush or a poll now and
 *               then; an extension right after another type's message, or
 *               with another key, must be refused; node 0 prints how many
 *               pieces joined a message (tcp, mpi: most; seq, smp: none);
 *   3 big       messages of the layer's max_message, one byte more, three
 *               times it and 1 MiB, with small ones between (N4), some of the
 *               highest type (N9); a layer may receive a big one in place
 *               (N11: tcp does, the others never; node 0 prints how many);
 *   4 put       every node puts blocks of 1 byte to 1 MiB (around mpi's
 *               rendezvous threshold, P10) into both neighbours' memory with
 *               etc_net_put (N12), three rounds, overwriting its source as
 *               soon as each call returns, with small messages between; each
 *               block's message must find all its bytes in place and come in
 *               order with the others; where the layer returns -1 the bytes
 *               travel as a message instead (node 0 prints how many blocks
 *               the layer took: tcp, mpi most, seq and smp none);
 *   5 burst     every node sends its successor 100000 messages without a
 *               poll, then only makes the core's boundary test (N6) and calls
 *               etc_net_boundary when it fails -- as a node busy with threads
 *               does -- until its successor confirms, from inside a handler,
 *               that all arrived (N2, N3, N5);
 *   6 boundary  node 1, with nothing in flight to it, finds its boundary word
 *               equal to the key; node 0 sends it one message; the word moves,
 *               etc_net_boundary delivers the message, and the word equals the
 *               key again (N6);
 *   7 finish    every node but 0 sends node 0 30000 messages and a last one,
 *               prints a line, and calls etc_net_finish at once (N7, N10);
 *               node 0 checks everything arrived, prints the summary and a
 *               last line without a newline, and finishes.
 * Every message carries its sender and a sequence number per pair, and its
 * bytes follow a pattern: any loss, duplicate, reordering or corruption is a
 * failure, reported as `etc: error: node K: conformance: ...` through
 * etc_fatal, which ends the run through etc_net_abort (N8).
 *
 * Usage: conform_net [abort]. With `abort`, node N-1 fails on purpose once
 * every node is up, while the others wait: the run must end at once with
 * that one error and a non-zero status.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "etc.h"
#include "net/net.h"

/* ================================================= the stand-in core */

const char etc_abi_plain = 1;
etc_rts_t etc_rts;
uint64_t etc_net_key;

double etc_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void etc_vfatal(const char *fmt, va_list ap)
{
    fflush(stdout);
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "etc: error: node %d: %s\n", etc_rts.node_id, msg);
    fflush(stderr);
    etc_net_abort();
}

void etc_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    etc_vfatal(fmt, ap);
}

void etc_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "etc: error: %s\n", msg);
    exit(2);
}

void etc_output_failed(int fd, int err)
{
    etc_fatal("cannot write to fd %d: %s", fd, strerror(err));
}

void etc_flush_output_checked(void)
{
    if (fflush(stdout) == EOF || fflush(stderr) == EOF)
        etc_output_failed(1, errno);
}

void *etc_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        etc_fatal("out of memory (asked for %zu bytes)", n);
    return p;
}

void *etc_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        etc_fatal("out of memory (asked for %zu bytes)", n);
    return q;
}

void etc_assert_fail(const char *file, int line, const char *what)
{
    etc_fatal("internal error: %s:%d: '%s' does not hold", file, line, what);
}

void etc_describe_nodes(void (*const *ran)(void *), int n, char *buf, size_t cap)
{
    (void)ran;
    snprintf(buf, cap, "%d nodes", n);
}

int etc_usable_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void etc_describe_running(void (*ran)(void *), char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", ran ? "in a thread" : "idle");
}

/* ================================================= the test */

#define TIMEOUT 60.0
#define ORDER_ROUNDS 3000
#define BURST 100000
#define FINAL_BURST 30000
#define EXTEND_PIECES 20000

enum { T_DATA = 1, T_EMPTY = 2, T_CTRL = 3, T_PUT = 4, T_GROW = 5, T_TOP = ETC_NET_TYPES - 1 };
enum { C_DONE = 1, C_GO, C_READY, C_PING, C_CONFIRM, C_FINAL };
enum { P_START, P_ORDER, P_EXTEND, P_BIG, P_PUT, P_BURST, P_BOUNDARY, P_FINISH, PHASES };

/* Every message but T_EMPTY starts with this; `payload` pattern bytes follow. */
typedef struct {
    uint32_t src, seq; /* seq: per ordered pair, over every message of the run */
    uint32_t phase, what; /* what: C_* for T_CTRL; 1 for data announcing an empty one next */
} msg_hdr;

static struct {
    int me, n;
    uint32_t *seq_out, *seq_in; /* per node */
    int *empty_due;             /* per node: an empty message must come next */
    unsigned char **placing;    /* per node: the message being received in place (N11) */
    size_t *placing_len;
    long placed;                /* messages received in place */
    long joined;                /* pieces that joined a message (N13) */
    long puts;                  /* blocks etc_net_put took (N12) */
    uint64_t *got;              /* [phase * n + src]: data messages received */
    int done[PHASES];           /* node 0: DONE messages per phase */
    int go;                     /* the last phase node 0 said GO for */
    int ready, pings, confirmed, finals;
    _Atomic uint64_t *word;
} cf;

static void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    etc_fatal("conformance: %s", msg);
}

static unsigned char pattern(uint32_t src, uint32_t seq, size_t i)
{
    return (unsigned char)(seq * 31u + (uint32_t)i * 7u + src * 13u + (uint32_t)(i >> 8));
}

/* Sends a message with `payload` pattern bytes, in one piece or two. */
static void send_msg(int dest, int type, int phase, int what, size_t payload, int two_pieces)
{
    msg_hdr h = {(uint32_t)cf.me, cf.seq_out[dest]++, (uint32_t)phase, (uint32_t)what};
    size_t len = sizeof h + payload;
    unsigned char *buf = etc_xmalloc(len);
    memcpy(buf, &h, sizeof h);
    for (size_t i = 0; i < payload; i++)
        buf[sizeof h + i] = pattern(h.src, h.seq, i);
    if (two_pieces)
        etc_net_send(dest, type, buf, sizeof h, buf + sizeof h, payload);
    else
        etc_net_send(dest, type, buf, len, NULL, 0);
    free(buf);
}

/* Phase put: the blocks' sizes, and where they land on the receiver: one area
 * per round and neighbour (0: from the predecessor, 1: from the successor), one
 * place per size (the same addresses on every node: the test is linked -no-pie). */
#define PUT_ROUNDS 3
static const size_t put_sizes[] = {1, 4097, 65535, 65536, 65537, 262145, (1u << 20) + 5};
#define PUT_SIZES (sizeof put_sizes / sizeof put_sizes[0])
#define PUT_TOTAL 1511432u /* the sum of put_sizes (checked at start) */
static unsigned char put_area[PUT_ROUNDS][2][PUT_TOTAL];

/* T_PUT's body after its msg_hdr: which area and size the bytes went to. */
typedef struct {
    uint32_t round, area, size_index;
} put_msg;

static size_t put_offset(size_t size_index)
{
    size_t off = 0;
    for (size_t k = 0; k < size_index; k++)
        off += put_sizes[k];
    return off;
}

/* Puts a block of pattern bytes into dest's area `area` (or sends them as a
 * message where the layer has no such path), then overwrites the source. */
static void put_block(int dest, uint32_t round, uint32_t area, size_t size_index,
                      unsigned char *src)
{
    msg_hdr h = {(uint32_t)cf.me, cf.seq_out[dest]++, P_PUT, 0};
    size_t n = put_sizes[size_index];
    for (size_t i = 0; i < n; i++)
        src[i] = pattern(h.src, h.seq, i);
    unsigned char m[sizeof h + sizeof(put_msg)];
    put_msg pm = {round, area, (uint32_t)size_index};
    memcpy(m, &h, sizeof h);
    memcpy(m + sizeof h, &pm, sizeof pm);
    if (etc_net_put(dest, &put_area[round][area][put_offset(size_index)], src, n, T_PUT, m,
                    sizeof m) == 0)
        cf.puts++;
    else
        etc_net_send(dest, T_DATA, &h, sizeof h, src, n);
    memset(src, 0xA5, n); /* N12: the source may change once the call returns */
}

static void send_ctrl(int dest, int what, int phase)
{
    send_msg(dest, T_CTRL, phase, what, 0, 0);
}

static uint64_t *got(int phase, int src)
{
    return &cf.got[(size_t)phase * (size_t)cf.n + (size_t)src];
}

void etc_deliver(int src, int type, const void *body, size_t len)
{
    if (src < 0 || src >= cf.n || src == cf.me)
        fail("a message from node %d, which is not another node of %d", src, cf.n);
    if (type == T_EMPTY) {
        if (len != 0 || !cf.empty_due[src])
            fail("an empty message (%zu bytes) from node %d out of its place", len, src);
        cf.empty_due[src] = 0;
        return;
    }
    if (type != T_DATA && type != T_CTRL && type != T_TOP && type != T_PUT && type != T_GROW)
        fail("a message of type %d from node %d, which nobody sent", type, src);
    msg_hdr h;
    if (len < sizeof h)
        fail("a message of %zu bytes from node %d, shorter than any sent", len, src);
    memcpy(&h, body, sizeof h);
    if (cf.empty_due[src])
        fail("message %u from node %d came before the empty one sent ahead of it", h.seq, src);
    if (h.src != (uint32_t)src)
        fail("a message from node %u delivered as from node %d", h.src, src);
    if (h.seq != cf.seq_in[src])
        fail("message %u from node %d arrived when %u was next (lost, duplicated or out "
             "of order)", h.seq, src, cf.seq_in[src]);
    cf.seq_in[src]++;
    const unsigned char *p = (const unsigned char *)body + sizeof h;
    size_t n = len - sizeof h;
    if (type == T_PUT) { /* N12: its bytes are in place when it is delivered */
        put_msg pm;
        if (n != sizeof pm)
            fail("a put's message of %zu bytes from node %d", len, src);
        memcpy(&pm, p, sizeof pm);
        if (pm.round >= PUT_ROUNDS || pm.area > 1 || pm.size_index >= PUT_SIZES)
            fail("a put's message from node %d names round %u, area %u, size %u", src,
                 pm.round, pm.area, pm.size_index);
        p = &put_area[pm.round][pm.area][put_offset(pm.size_index)];
        n = put_sizes[pm.size_index];
    }
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern(h.src, h.seq, i))
            fail("message %u from node %d (%zu bytes) is corrupt at byte %zu", h.seq, src, len,
                 i);
    if (h.phase >= PHASES)
        fail("message %u from node %d names phase %u", h.seq, src, h.phase);
    if (type == T_GROW) { /* N13: what counts is every byte, in order, once */
        if (h.phase != P_EXTEND)
            fail("a grown message %u from node %d in phase %u", h.seq, src, h.phase);
        *got(P_EXTEND, src) += n;
        return;
    }
    if (type != T_CTRL) {
        (*got((int)h.phase, src))++;
        cf.empty_due[src] = h.what == 1;
        if (h.phase == P_BURST && *got(P_BURST, src) == BURST)
            send_ctrl(src, C_CONFIRM, P_BURST); /* N5: a handler may send */
        return;
    }
    switch (h.what) {
    case C_DONE:
        cf.done[h.phase]++;
        break;
    case C_GO:
        cf.go = (int)h.phase;
        break;
    case C_READY:
        cf.ready++;
        break;
    case C_PING:
        cf.pings++;
        break;
    case C_CONFIRM:
        cf.confirmed++;
        break;
    case C_FINAL:
        cf.finals++;
        break;
    default:
        fail("a control message %u from node %d", h.what, src);
    }
}

/* N11: a layer may receive the rest of a big data message in place: here into a
 * buffer of its own, whose head the stand-in core fills in; the message is
 * checked as any other once the layer says it is all there. */
void *etc_deliver_place(int src, int type, const void *head, size_t have, size_t len,
                        size_t *at)
{
    if (src < 0 || src >= cf.n || src == cf.me)
        fail("a message to place from node %d, which is not another node of %d", src, cf.n);
    if (type != T_DATA || have < sizeof(msg_hdr) || len < have)
        return NULL;
    if (cf.placing[src])
        fail("node %d's next message placed before the one placed ahead of it was "
             "delivered", src);
    unsigned char *buf = etc_xmalloc(len);
    memcpy(buf, head, sizeof(msg_hdr));
    cf.placing[src] = buf;
    cf.placing_len[src] = len;
    *at = sizeof(msg_hdr);
    return buf + sizeof(msg_hdr);
}

void etc_deliver_placed(int src, int type, const void *head, size_t at, size_t len)
{
    if (src < 0 || src >= cf.n || src == cf.me || !cf.placing[src])
        fail("a placed message from node %d that was not placed", src);
    unsigned char *buf = cf.placing[src];
    if (at != sizeof(msg_hdr) || len != cf.placing_len[src] || memcmp(buf, head, at) != 0)
        fail("a placed message from node %d delivered with another head or length", src);
    cf.placing[src] = NULL;
    cf.placed++;
    etc_deliver(src, type, buf, len);
    free(buf);
}

/* Polls and waits, as an idle node does, until cond() holds. */
static void idle_until(int (*cond)(int), int arg, const char *what)
{
    double deadline = etc_time() + TIMEOUT;
    while (!cond(arg)) {
        if (etc_net_poll() == 0)
            etc_net_wait(0.01);
        if (etc_time() > deadline)
            fail("%s: nothing more arrived for %.0f s", what, TIMEOUT);
    }
}

/* Only the core's boundary test and call, as a node busy with threads makes
 * them, until cond() holds (N3, N6). */
static void busy_until(int (*cond)(int), int arg, const char *what)
{
    double deadline = etc_time() + TIMEOUT;
    for (unsigned k = 1; !cond(arg); k++) {
        if (!cf.word || atomic_load_explicit(cf.word, memory_order_relaxed) != etc_net_key)
            etc_net_boundary();
        if (k % 4096 == 0 && etc_time() > deadline)
            fail("%s: nothing more arrived at thread boundaries for %.0f s", what, TIMEOUT);
    }
}

static int all_got(int phase, uint64_t count)
{
    for (int k = 0; k < cf.n; k++)
        if (k != cf.me && *got(phase, k) != count)
            return 0;
    return 1;
}

static int all_done(int phase)
{
    return cf.done[phase] == cf.n - 1;
}

static int go_for(int phase)
{
    return cf.go >= phase;
}

static void barrier(int phase)
{
    if (cf.me != 0) {
        send_ctrl(0, C_DONE, phase);
        idle_until(go_for, phase, "waiting for node 0 to end the phase");
        return;
    }
    idle_until(all_done, phase, "waiting for the other nodes to end the phase");
    for (int k = 1; k < cf.n; k++)
        send_ctrl(k, C_GO, phase);
    cf.go = phase;
}

static int order_done(int unused)
{
    (void)unused;
    return all_got(P_ORDER, ORDER_ROUNDS);
}

static void phase_order(void)
{
    int sent = 0;
    for (int r = 0; r < ORDER_ROUNDS; r++) {
        for (int i = 1; i < cf.n; i++) {
            int dest = (cf.me + i) % cf.n;
            int empty_next = r % 100 == 99;
            send_msg(dest, T_DATA, P_ORDER, empty_next, (size_t)(r % 101), r % 3 == 1);
            if (empty_next)
                etc_net_send(dest, T_EMPTY, NULL, 0, NULL, 0);
            if (++sent % 64 == 0)
                etc_net_poll();
        }
    }
    idle_until(order_done, 0, "order: waiting for every message");
}

/* Phase extend: the pieces sent to each other node, 1-200 bytes each. */
static size_t extend_piece(int k)
{
    return (size_t)(k * 37 % 200) + 1;
}

/* What each other node counts: the pieces' bytes, and one for each message of
 * another type sent between them. */
static uint64_t extend_total(void)
{
    uint64_t total = 0;
    for (int k = 0; k < EXTEND_PIECES; k++)
        total += extend_piece(k) + (k % 97 == 96);
    return total;
}

static int extend_done(int unused)
{
    (void)unused;
    return all_got(P_EXTEND, extend_total());
}

/* N13: the message a piece may join has the header (the key) and the pattern
 * bytes sent so far; the piece holds the pattern's next bytes, so a message
 * grown by any number of pieces reads as one sent whole. */
static void phase_extend(void)
{
    int *open = calloc((size_t)cf.n, sizeof *open); /* per node: a message to join */
    msg_hdr *key = calloc((size_t)cf.n, sizeof *key);
    size_t *at = calloc((size_t)cf.n, sizeof *at); /* its pattern bytes so far */
    if (!open || !key || !at)
        fail("out of memory");
    unsigned char piece[200];
    int sent = 0;
    for (int k = 0; k < EXTEND_PIECES; k++) {
        for (int i = 1; i < cf.n; i++) {
            int dest = (cf.me + i) % cf.n;
            size_t n = extend_piece(k);
            uint64_t words[2];
            memcpy(words, &key[dest], sizeof words);
            if (open[dest]) {
                uint64_t wrong[2] = {words[0], words[1] ^ 1};
                if (etc_net_extend(dest, T_GROW, wrong, piece, n))
                    fail("extend: a piece joined a message whose body begins otherwise");
                for (size_t j = 0; j < n; j++)
                    piece[j] = pattern(key[dest].src, key[dest].seq, at[dest] + j);
            }
            if (open[dest] && etc_net_extend(dest, T_GROW, words, piece, n)) {
                at[dest] += n;
                cf.joined++;
            } else {
                key[dest] = (msg_hdr){(uint32_t)cf.me, cf.seq_out[dest]++, P_EXTEND, 0};
                for (size_t j = 0; j < n; j++)
                    piece[j] = pattern(key[dest].src, key[dest].seq, j);
                etc_net_send(dest, T_GROW, &key[dest], sizeof key[dest], piece, n);
                open[dest] = 1;
                at[dest] = n;
            }
            if (k % 97 == 96) { /* another message: the next piece may not join */
                send_msg(dest, T_DATA, P_EXTEND, 0, 8, 0);
                memcpy(words, &key[dest], sizeof words);
                if (etc_net_extend(dest, T_GROW, words, piece, 1))
                    fail("extend: a piece joined a message sent before the last one");
                open[dest] = 0;
            }
            /* flushes now and then, polls seldom: channels fill up, and a
             * message may be partly written when the next piece comes */
            if (++sent % 509 == 0)
                etc_net_flush();
            if (sent % 4099 == 0)
                etc_net_poll();
        }
    }
    free(open);
    free(key);
    free(at);
    idle_until(extend_done, 0, "extend: waiting for every piece");
}

static size_t big_sizes[4];

static int big_done(int unused)
{
    (void)unused;
    return all_got(P_BIG, 2 * (sizeof big_sizes / sizeof big_sizes[0]));
}

static void phase_big(void)
{
    size_t max = etc_net_max_message();
    big_sizes[0] = max - sizeof(msg_hdr);
    big_sizes[1] = max + 1 - sizeof(msg_hdr);
    big_sizes[2] = 3 * max + 17;
    big_sizes[3] = (1u << 20) + 5;
    for (int i = 1; i < cf.n; i++) {
        int dest = (cf.me + i) % cf.n;
        for (size_t s = 0; s < sizeof big_sizes / sizeof big_sizes[0]; s++) {
            send_msg(dest, s == 2 ? T_TOP : T_DATA, P_BIG, 0, big_sizes[s], (int)s % 2);
            send_msg(dest, T_TOP, P_BIG, 0, s, 0); /* a small one between */
        }
    }
    idle_until(big_done, 0, "big: waiting for every message");
}

static int put_done(int unused)
{
    (void)unused;
    int prev = (cf.me + cf.n - 1) % cf.n, next = (cf.me + 1) % cf.n;
    /* from each: a block and, from the predecessor, a small message per size */
    uint64_t from_prev = 2 * PUT_ROUNDS * PUT_SIZES, from_next = PUT_ROUNDS * PUT_SIZES;
    if (prev == next)
        return *got(P_PUT, prev) == from_prev + from_next;
    return *got(P_PUT, prev) == from_prev && *got(P_PUT, next) == from_next;
}

static void phase_put(void)
{
    int prev = (cf.me + cf.n - 1) % cf.n, next = (cf.me + 1) % cf.n;
    unsigned char *src = etc_xmalloc(put_sizes[PUT_SIZES - 1]);
    for (int r = 0; r < PUT_ROUNDS; r++) {
        for (size_t s = 0; s < PUT_SIZES; s++) {
            put_block(next, (uint32_t)r, 0, s, src); /* I am next's predecessor */
            send_msg(next, T_TOP, P_PUT, 0, s, 0);   /* a small one between */
            put_block(prev, (uint32_t)r, 1, s, src);
        }
    }
    free(src);
    idle_until(put_done, 0, "put: waiting for every block");
}

static int burst_done(int unused)
{
    (void)unused;
    int prev = (cf.me + cf.n - 1) % cf.n;
    return cf.confirmed == 1 && *got(P_BURST, prev) == BURST;
}

static void phase_burst(void)
{
    int next = (cf.me + 1) % cf.n;
    for (int k = 0; k < BURST; k++)
        send_msg(next, T_DATA, P_BURST, 0, 8, 0);
    busy_until(burst_done, 0, "burst: waiting for the burst and its confirmation");
}

static int pinged(int unused)
{
    (void)unused;
    return cf.pings == 1;
}

static int node1_ready(int unused)
{
    (void)unused;
    return cf.ready == 1;
}

static int word_is_key(void)
{
    return !cf.word || atomic_load_explicit(cf.word, memory_order_acquire) == etc_net_key;
}

static void phase_boundary(void)
{
    if (cf.me == 1) {
        etc_net_poll(); /* nothing is in flight to this node now, nothing queued */
        if (!word_is_key())
            fail("boundary: the boundary word differs from the key with nothing to do");
        send_ctrl(0, C_READY, P_BOUNDARY);
        etc_net_flush();
        busy_until(pinged, 0, "boundary: waiting for node 0's message");
        if (!word_is_key())
            fail("boundary: the word differs from the key after the boundary call");
    } else if (cf.me == 0) {
        idle_until(node1_ready, 0, "boundary: waiting for node 1");
        send_ctrl(1, C_PING, P_BOUNDARY);
        etc_net_flush();
    }
}

static int finals_done(int unused)
{
    (void)unused;
    return cf.finals == cf.n - 1 && all_got(P_FINISH, FINAL_BURST);
}

static int env_nodes(void)
{
    const char *s = getenv("ETC_NODES");
    return s && *s ? atoi(s) : 0;
}

int main(int argc, char **argv)
{
    int aborting = argc > 1 && strcmp(argv[1], "abort") == 0;
    etc_net_start(env_nodes(), &cf.me, &cf.n);
    etc_rts.node_id = cf.me;
    etc_rts.num_nodes = cf.n;
    etc_rts.gtag = ETC_GTAG(cf.me);
    cf.seq_out = calloc((size_t)cf.n, sizeof *cf.seq_out);
    cf.seq_in = calloc((size_t)cf.n, sizeof *cf.seq_in);
    cf.empty_due = calloc((size_t)cf.n, sizeof *cf.empty_due);
    cf.got = calloc((size_t)cf.n * PHASES, sizeof *cf.got);
    cf.placing = calloc((size_t)cf.n, sizeof *cf.placing);
    cf.placing_len = calloc((size_t)cf.n, sizeof *cf.placing_len);
    if (!cf.seq_out || !cf.seq_in || !cf.empty_due || !cf.got || !cf.placing ||
        !cf.placing_len)
        fail("out of memory");
    cf.go = -1;
    cf.word = etc_net_boundary_word();
    if (etc_net_boundary_word() != cf.word)
        fail("etc_net_boundary_word() changed between two calls");
    if (put_offset(PUT_SIZES) > PUT_TOTAL)
        fail("PUT_TOTAL is smaller than the sum of the put sizes");
    if (etc_net_max_message() < 2 * sizeof(msg_hdr))
        fail("etc_net_max_message() is %zu bytes", etc_net_max_message());

    barrier(P_START);
    if (aborting) {
        if (cf.me == cf.n - 1)
            fail("node %d ends the run on purpose", cf.me);
        for (;;) { /* until the layer ends this node */
            etc_net_poll();
            etc_net_wait(-1);
        }
    }
    if (cf.n > 1) {
        phase_order();
        barrier(P_ORDER);
        phase_extend();
        barrier(P_EXTEND);
        phase_big();
        barrier(P_BIG);
        phase_put();
        barrier(P_PUT);
        phase_burst();
        barrier(P_BURST);
        phase_boundary();
        barrier(P_BOUNDARY);
    }
    if (cf.me != 0) {
        for (int k = 0; k < FINAL_BURST; k++)
            send_msg(0, T_DATA, P_FINISH, 0, 8, 0);
        printf("conform: node %d of %d finishing\n", cf.me, cf.n);
        send_ctrl(0, C_FINAL, P_FINISH);
        etc_net_finish(); /* N7: with all of it still queued */
    }
    idle_until(finals_done, 0, "finish: waiting for the others' last messages");
    printf("conform: node 0 received %ld messages in place\n", cf.placed);
    printf("conform: node 0 joined %ld pieces to messages\n", cf.joined);
    printf("conform: node 0 put %ld blocks through the layer\n", cf.puts);
    printf("conform: %s, %d node%s, max message %zu: order, extend, big, put, burst, boundary, "
           "finish: ok\n",
           etc_net_name, cf.n, cf.n == 1 ? "" : "s", etc_net_max_message());
    printf("conform: the end"); /* no newline: the layer must still write it (N7, N10) */
    etc_net_finish();
}
