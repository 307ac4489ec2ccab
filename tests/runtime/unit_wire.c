/* unit_wire.c: the coalescing buffers of net/common/wire.h, and the growth of a
 * frame after it was sent (F5, net.h N13), against a writer that takes as many
 * bytes as the test says: everything, nothing (a full channel), or part of the
 * pending bytes. Every case records the messages it sent (type and body, as the
 * receiver must see them) and, at its end, parses what the writer took and
 * compares: a frame grown after some of it was written, or a wrong length
 * slid by the buffer, shows as a corrupt stream.
 *
 * Built with wire.c and frag.c themselves (tests/runtime/test_runtime_c.py);
 * defines the few core services they use. Prints `ok NAME` per case and
 * `done FAILURES`. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/common/wire.h"
#include "net/net.h"

/* ================================================= the core services wire.c uses */

const char etc_abi_plain = 1;
etc_rts_t etc_rts;

void *etc_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

void *etc_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        abort();
    return q;
}

void etc_vfatal(const char *fmt, va_list ap)
{
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    exit(1);
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
    etc_vfatal(fmt, ap);
}

void etc_deliver(int src, int type, const void *body, size_t len)
{
    (void)src;
    (void)type;
    (void)body;
    (void)len;
    etc_fatal("etc_deliver called by the sending side");
}

void etc_assert_fail(const char *file, int line, const char *what)
{
    etc_fatal("internal error: %s:%d: '%s' does not hold", file, line, what);
}

/* ================================================= the channel and what it carried */

#define WIRE_MAX (1u << 20)
#define MESSAGES_MAX 256

static struct {
    unsigned char wire[WIRE_MAX]; /* what the writer took, in order */
    size_t wired;
    long take;          /* the writer takes at most this many bytes a call (< 0: all) */
    int types[MESSAGES_MAX];
    unsigned char *bodies[MESSAGES_MAX];
    size_t lens[MESSAGES_MAX];
    int sent;           /* messages as the receiver must see them */
    int failures;
} ch;

static size_t writer(void *ctx, int dest, const unsigned char *p, size_t n)
{
    (void)ctx;
    (void)dest;
    size_t k = ch.take < 0 || (size_t)ch.take > n ? n : (size_t)ch.take;
    if (ch.wired + k > WIRE_MAX)
        etc_fatal("the test's wire is full");
    memcpy(ch.wire + ch.wired, p, k);
    ch.wired += k;
    if (ch.take > 0)
        ch.take -= (long)k;
    return k;
}

/* A layer that takes the buffer whole (mpi's MPI_Isend): its pending bytes go
 * on the wire, and it is left with none. */
static void taker(void *ctx, int dest, etc_wire_buf *b)
{
    size_t n = etc_wire_pending(b);
    writer(ctx, dest, b->buf + b->off, n);
    b->off = b->len = 0;
}

static void forget(void)
{
    for (int i = 0; i < ch.sent; i++)
        free(ch.bodies[i]);
    ch.sent = 0;
}

static void reset(etc_coalesce *c)
{
    forget();
    ch.wired = 0;
    ch.take = -1;
    etc_coalesce_init(c, 2, 1u << 16, 1u << 18, writer, NULL);
}

/* A message the receiver must see. */
static void record(int type, const void *body, size_t len)
{
    if (ch.sent == MESSAGES_MAX)
        etc_fatal("too many messages");
    ch.types[ch.sent] = type;
    ch.lens[ch.sent] = len;
    ch.bodies[ch.sent] = etc_xmalloc(len);
    memcpy(ch.bodies[ch.sent], body, len);
    ch.sent++;
}

static void done(etc_coalesce *c)
{
    for (int d = 0; d < c->n; d++)
        etc_wire_free(&c->out[d]);
    free(c->out);
    free(c->dirty);
    free(c->listed);
}

/* The body every message gets: 16 bytes of key (k, k), then pattern bytes. */
static unsigned char pattern(int msg, size_t i)
{
    return (unsigned char)(msg * 29 + (int)i * 7 + (int)(i >> 8));
}

static void key_of(int msg, uint64_t key[2])
{
    key[0] = (uint64_t)msg * 0x9E3779B97F4A7C15u;
    key[1] = (uint64_t)msg;
}

/* Sends message `msg` of `type` with `n` pattern bytes after its key. */
static void send_message(etc_coalesce *c, int msg, int type, size_t n)
{
    uint64_t key[2];
    key_of(msg, key);
    unsigned char body[4096];
    for (size_t i = 0; i < n; i++)
        body[i] = pattern(msg, i);
    etc_coalesce_send(c, 1, type, key, sizeof key, body, n);
    unsigned char whole[sizeof key + sizeof body];
    memcpy(whole, key, sizeof key);
    memcpy(whole + sizeof key, body, n);
    record(type, whole, sizeof key + n);
}

/* Tries to grow the last message sent (`msg`, of `type`) by n pattern bytes,
 * with its key (or another): returns what etc_coalesce_extend did. */
static int grow(etc_coalesce *c, int msg, int type, size_t n, int right_key)
{
    uint64_t key[2];
    key_of(msg, key);
    if (!right_key)
        key[1] ^= 0x100;
    size_t had = ch.lens[ch.sent - 1] - sizeof key;
    unsigned char more[4096];
    for (size_t i = 0; i < n; i++)
        more[i] = pattern(msg, had + i);
    if (!etc_coalesce_extend(c, 1, type, key, more, n))
        return 0;
    unsigned char *b = etc_xrealloc(ch.bodies[ch.sent - 1], ch.lens[ch.sent - 1] + n);
    memcpy(b + ch.lens[ch.sent - 1], more, n);
    ch.bodies[ch.sent - 1] = b;
    ch.lens[ch.sent - 1] += n;
    return 1;
}

static void fail(const char *name, const char *why)
{
    printf("FAIL %s: %s\n", name, why);
    ch.failures++;
}

/* Flushes everything and compares the stream with the messages sent. */
static void check(etc_coalesce *c, const char *name, int want_frames)
{
    ch.take = -1;
    etc_coalesce_flush_all(c);
    if (etc_wire_pending(&c->out[1]))
        return fail(name, "bytes still pending after a flush that took all");
    etc_wire_buf in = {.buf = ch.wire, .len = ch.wired, .cap = ch.wired};
    etc_wire_hdr h;
    const unsigned char *body;
    int k = 0, r;
    while ((r = etc_wire_next(&in, 1u << 18, &h, &body)) == 1) {
        if (k == ch.sent)
            return fail(name, "more frames than messages");
        if (h.type != ch.types[k] || h.flags || h.len != ch.lens[k] ||
            memcmp(body, ch.bodies[k], h.len) != 0) {
            char why[128];
            snprintf(why, sizeof why, "frame %d: type %u, %u bytes (sent: type %d, %zu bytes)",
                     k, h.type, h.len, ch.types[k], ch.lens[k]);
            return fail(name, why);
        }
        k++;
    }
    if (r != 0 || etc_wire_pending(&in))
        return fail(name, "the stream ends in the middle of a frame");
    if (k != ch.sent || k != want_frames)
        return fail(name, "fewer frames than messages");
    printf("ok %s\n", name);
}

/* ================================================= the cases */

/* F2: a flush visits the destinations that have bytes waiting, not every node
 * of the run, and keeps those whose channel is full for the next one. */
enum { MANY = 64 };
static int visits[MANY];
static etc_coalesce *sending_while_written; /* the writer sends to 7 on its first call */

static size_t counting_writer(void *ctx, int dest, const unsigned char *p, size_t n)
{
    (void)ctx;
    (void)p;
    visits[dest]++;
    if (sending_while_written) {
        etc_coalesce *c = sending_while_written;
        sending_while_written = NULL;
        etc_coalesce_send(c, 7, 5, "late", 4, NULL, 0); /* as a handler run by a write might */
    }
    if (ch.take == 0)
        return 0;
    return n;
}

static void counting_taker(void *ctx, int dest, etc_wire_buf *b)
{
    (void)ctx;
    visits[dest]++;
    b->off = b->len = 0;
}

static int visited(void)
{
    int v = 0;
    for (int d = 0; d < MANY; d++)
        v += visits[d];
    memset(visits, 0, sizeof visits);
    return v;
}

static void many_destinations(void)
{
    int failures = ch.failures;
    etc_coalesce c = {0};
    etc_coalesce_init(&c, MANY, 1u << 16, 1u << 18, counting_writer, NULL);
    ch.take = -1;
    etc_coalesce_send(&c, 40, 5, "ab", 2, NULL, 0);
    etc_coalesce_send(&c, 3, 5, "cd", 2, NULL, 0);
    etc_coalesce_send(&c, 40, 5, "ef", 2, NULL, 0); /* listed once */
    etc_coalesce_flush_all(&c);
    if (visited() != 2 || c.pending || c.ndirty)
        fail("many", "a flush did not visit exactly the two destinations with bytes");
    etc_coalesce_flush_all(&c);
    if (visited() != 0)
        fail("many", "a flush with nothing pending wrote");
    ch.take = 0; /* a full channel: the bytes wait, and the destination stays listed */
    etc_coalesce_send(&c, 9, 5, "gh", 2, NULL, 0);
    etc_coalesce_flush_all(&c);
    if (visited() != 1 || !c.pending || !etc_wire_pending(&c.out[9]))
        fail("many", "a destination whose channel was full was forgotten");
    ch.take = -1;
    sending_while_written = &c;
    etc_coalesce_flush_all(&c);
    if (visits[9] != 1 || visits[7] != 1 || visited() != 2 || c.pending ||
        etc_wire_pending(&c.out[7]) || etc_wire_pending(&c.out[9]))
        fail("many", "a message sent while a flush wrote was not written by that flush");
    etc_coalesce_send(&c, 9, 5, "ij", 2, NULL, 0);
    etc_coalesce_drop(&c, 9); /* dropped: listed, nothing to write */
    etc_coalesce_flush_all(&c);
    if (visited() != 0 || c.pending || c.ndirty)
        fail("many", "a dropped destination was written or stayed listed");
    done(&c);
    /* a layer that takes whole buffers (mpi): etc_coalesce_take_all hands over
     * the listed ones, and the list empties */
    etc_coalesce_init(&c, MANY, 1u << 16, 1u << 18, counting_writer, NULL);
    etc_coalesce_send(&c, 63, 5, "kl", 2, NULL, 0);
    etc_coalesce_send(&c, 0, 5, "mn", 2, NULL, 0);
    etc_coalesce_take_all(&c, counting_taker);
    if (visited() != 2 || c.pending || c.ndirty || etc_wire_pending(&c.out[0]) ||
        etc_wire_pending(&c.out[63]) || c.out[0].last)
        fail("many", "take_all did not hand over exactly the two buffers with bytes");
    etc_coalesce_take_all(&c, counting_taker);
    if (visited() != 0)
        fail("many", "take_all with nothing pending took a buffer");
    if (ch.failures == failures)
        printf("ok many\n");
    done(&c);
}

int main(void)
{
    etc_coalesce c = {0};

    reset(&c); /* a frame grows while nothing of it is written */
    send_message(&c, 1, 5, 8);
    int grown = grow(&c, 1, 5, 16, 1) && grow(&c, 1, 5, 3, 1) && grow(&c, 1, 5, 40, 1);
    if (!grown)
        fail("grows", "refused while the frame was whole in the buffer");
    check(&c, "grows", 1);
    done(&c);

    reset(&c); /* only the last frame, of the same type and key, without flags */
    send_message(&c, 1, 5, 8);
    if (grow(&c, 1, 6, 8, 1))
        fail("refuses", "grew a frame of another type");
    if (grow(&c, 1, 5, 8, 0))
        fail("refuses", "grew a frame whose body begins with another key");
    send_message(&c, 2, 6, 8);
    if (grow(&c, 1, 5, 8, 1))
        fail("refuses", "grew a frame that is not the last one");
    uint64_t key[2];
    memcpy(key, "flagged!flagged!", sizeof key);
    etc_piece pc = {key, sizeof key};
    etc_coalesce_put(&c, 1, 5, 2, &pc, 1, sizeof key); /* a fragment: flags */
    if (etc_coalesce_extend(&c, 1, 5, key, "x", 1))
        fail("refuses", "grew a frame with flags");
    etc_coalesce_drop(&c, 1);
    forget(); /* dropped: the receiver sees none of them */
    pc = (etc_piece){key, 15};
    etc_coalesce_put(&c, 1, 5, 0, &pc, 1, 15); /* too short to begin with a key */
    record(5, key, 15);
    if (etc_coalesce_extend(&c, 1, 5, key, "x", 1))
        fail("refuses", "grew a frame whose body is shorter than a key");
    send_message(&c, 3, 5, 2);
    if (etc_coalesce_extend(&c, 0, 5, key, "x", 1))
        fail("refuses", "grew a frame of another destination");
    check(&c, "refuses", 2);
    done(&c);

    reset(&c); /* a frame of the layer's own after a message is the last one */
    send_message(&c, 20, 5, 8);
    unsigned char own[16 + 8];
    key_of(20, key);
    memcpy(own, key, sizeof key);
    for (size_t i = 0; i < 8; i++)
        own[16 + i] = pattern(20, i);
    pc = (etc_piece){own, sizeof own};
    etc_coalesce_put(&c, 1, 5, 0, &pc, 1, sizeof own);
    record(5, own, sizeof own);
    if (!grow(&c, 20, 5, 8, 1)) /* (it begins as the message did: it may grow) */
        fail("own frame", "refused to grow the last frame");
    check(&c, "own frame", 2);
    done(&c);

    reset(&c); /* up to ETC_WIRE_EXTEND_MAX bytes of body */
    send_message(&c, 4, 5, 0);
    while (grow(&c, 4, 5, 100, 1))
        ;
    if (ch.lens[0] > ETC_WIRE_EXTEND_MAX || ch.lens[0] + 100 <= ETC_WIRE_EXTEND_MAX)
        fail("limit", "stopped at the wrong size");
    send_message(&c, 5, 5, 100); /* what did not fit begins a new one */
    check(&c, "limit", 2);
    done(&c);

    reset(&c); /* a flush that took all: nothing left to grow */
    send_message(&c, 6, 5, 8);
    etc_coalesce_flush(&c, 1);
    if (grow(&c, 6, 5, 8, 1))
        fail("written", "grew a frame already written");
    send_message(&c, 7, 5, 8);
    check(&c, "written", 2);
    done(&c);

    reset(&c); /* a full channel took part of the last frame: it may not grow */
    send_message(&c, 8, 5, 8);
    send_message(&c, 9, 5, 8);
    ch.take = (long)(sizeof(etc_wire_hdr) + 16 + 8 + 5); /* the first frame, 5 bytes more */
    etc_coalesce_flush(&c, 1);
    if (grow(&c, 9, 5, 8, 1))
        fail("partly written", "grew a frame whose head was written");
    check(&c, "partly written", 2);
    done(&c);

    reset(&c); /* growing past the flush threshold writes the buffer: what of the
                * frame a full channel took, it may not grow by any more */
    c.flush_at = 64;
    send_message(&c, 30, 5, 8); /* 32 bytes: under the threshold */
    ch.take = 40;               /* the frame's 32 and 8 of what it grew by */
    if (!grow(&c, 30, 5, 40, 1))
        fail("flushed", "refused a frame none of which was written");
    if (ch.wired != 40)
        fail("flushed", "growing past the threshold did not write the buffer");
    if (grow(&c, 30, 5, 8, 1))
        fail("flushed", "grew a frame the flush had partly written");
    check(&c, "flushed", 1);
    done(&c);

    reset(&c); /* ... but it may when only frames before it were written, and again
                * after the buffer slid what was pending to its front */
    send_message(&c, 10, 5, 8);
    send_message(&c, 11, 5, 8);
    ch.take = (long)(sizeof(etc_wire_hdr) + 16 + 8); /* exactly the first frame */
    etc_coalesce_flush(&c, 1);
    ch.take = 0; /* then a full channel: the buffer must make room */
    if (!grow(&c, 11, 5, 8, 1))
        fail("slides", "refused a frame none of which was written");
    etc_wire_buf *w = &c.out[1];
    int last = 12;
    while (w->cap - w->len >= 1000) /* fill the buffer up to its end */
        send_message(&c, ++last, 5, 900);
    size_t off_before = w->off;
    if (!grow(&c, last, 5, 1000, 1)) /* no room at the end: the pending bytes slide */
        fail("slides", "refused to grow the last frame where the buffer had no room");
    if (w->off != 0 || off_before == 0)
        fail("slides", "the buffer did not slide (the case tests nothing)");
    if (!grow(&c, last, 5, 24, 1))
        fail("slides", "refused the last frame after the slide");
    check(&c, "slides", ch.sent);
    done(&c);

    reset(&c); /* a layer that takes the buffer whole (mpi): nothing left to grow */
    c.take = taker;
    send_message(&c, 100, 5, 8);
    if (!grow(&c, 100, 5, 8, 1))
        fail("taken", "refused a frame still in the buffer");
    etc_coalesce_flush(&c, 1);
    if (grow(&c, 100, 5, 8, 1))
        fail("taken", "grew a frame the layer had taken");
    send_message(&c, 101, 5, 8);
    check(&c, "taken", 2);
    done(&c);

    many_destinations();

    forget();
    printf("done %d\n", ch.failures);
    return ch.failures != 0;
}
