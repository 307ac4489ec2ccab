/* wire.h: frames, and per-destination buffers that coalesce them (what the
 * message-passing layers share: tcp's byte streams; mpi's sends).
 *
 * A frame is an etc_wire_hdr and `len` bytes of body (docs/protocols.md, F1).
 * Small messages to one destination are appended to its buffer and written
 * together at the next flush, so a burst of fine-grain messages costs one
 * system call (or one send) instead of one each (F2); the last frame to a
 * destination may grow while none of it is written (F5, net.h N13).
 */
#ifndef ETC_NET_COMMON_WIRE_H
#define ETC_NET_COMMON_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "etc.h"

typedef struct etc_wire_hdr {
    uint32_t len;   /* bytes of body that follow */
    uint16_t type;  /* a message type (net.h N9), or one of the layer's own */
    uint16_t flags; /* ETC_FRAG_* (frag.h), 0 for a whole message */
} etc_wire_hdr;

/* A body given in pieces, sent one after another (no copy to join them). */
typedef struct etc_piece {
    const void *p;
    size_t n;
} etc_piece;

/* A growable byte buffer: bytes [off, len) are pending. A coalescing buffer
 * also knows where its last frame starts, while none of it is written (F5). */
typedef struct etc_wire_buf {
    unsigned char *buf;
    size_t off, len, cap;
    size_t last; /* 1 + the offset of that frame's header; 0: no such frame */
} etc_wire_buf;

static inline size_t etc_wire_pending(const etc_wire_buf *b)
{
    return b->len - b->off;
}

/* Room for `more` bytes at the end (pending bytes may move to the front). */
void etc_wire_reserve(etc_wire_buf *b, size_t more);
/* Appends a frame: header, then the pieces (`len` bytes in all). */
void etc_wire_put_frame(etc_wire_buf *b, int type, int flags, const etc_piece *pc, int npc,
                        size_t len);
/* The first n pending bytes are done with (written, or parsed). */
void etc_wire_consume(etc_wire_buf *b, size_t n);
void etc_wire_free(etc_wire_buf *b);

/* Parses the next frame from a buffer of received bytes: 1 with *h and *body
 * set (the body stays valid until the buffer changes; it is consumed), 0 when
 * the frame is not all there yet, -1 when its header says more than
 * `max_len` bytes of body (the sender is broken or hostile). Inline: it runs
 * once per message. */
static inline int etc_wire_next(etc_wire_buf *in, size_t max_len, etc_wire_hdr *h,
                                const unsigned char **body)
{
    if (etc_wire_pending(in) < sizeof *h)
        return 0;
    memcpy(h, in->buf + in->off, sizeof *h);
    if (h->len > max_len)
        return -1;
    if (etc_wire_pending(in) - sizeof *h < h->len)
        return 0;
    *body = in->buf + in->off + sizeof *h;
    /* consumed now, but not moved: the bytes stay until the buffer next grows */
    in->off += sizeof *h + h->len;
    return 1;
}

/* ---- per-destination coalescing */

/* Writes bytes to `dest`; returns how many it took (0 .. n: fewer when the
 * channel is full for now). A writer that finds `dest` gone either ends the
 * run or returns n to drop the bytes (a peer that already said goodbye). */
typedef size_t (*etc_wire_writer)(void *ctx, int dest, const unsigned char *p, size_t n);

/* Or takes dest's whole buffer (its bytes [off, len) are whole frames), leaving
 * *b with nothing pending: for a layer whose sends read the buffer after they
 * return (mpi's MPI_Isend), so the bytes are sent without another copy. */
typedef void (*etc_wire_taker)(void *ctx, int dest, etc_wire_buf *b);

typedef struct etc_coalesce {
    etc_wire_buf *out; /* per destination */
    int n;
    int pending;       /* some destination may have bytes waiting: ndirty > 0 */
    /* F2: the destinations that may have bytes waiting, each listed once, so
     * that a flush visits those and not every node of the run */
    int *dirty, ndirty;
    unsigned char *listed; /* per destination: it is in dirty */
    size_t flush_at;   /* etc_coalesce_send writes a buffer once this much waits */
    size_t max_body;   /* bodies above this are fragmented (frag.h) */
    etc_wire_writer write;
    etc_wire_taker take; /* NULL, or used instead of write (set after init) */
    void *ctx;
} etc_coalesce;

void etc_coalesce_init(etc_coalesce *c, int n, size_t flush_at, size_t max_body,
                       etc_wire_writer write, void *ctx);

/* dest has bytes waiting in its buffer (a layer that puts bytes there itself
 * says so): the next flush_all visits it. */
static inline void etc_coalesce_mark(etc_coalesce *c, int dest)
{
    if (!c->listed[dest]) {
        c->listed[dest] = 1;
        c->dirty[c->ndirty++] = dest;
    }
    c->pending = 1;
}
/* Appends one frame of the layer's own (flags as given, never fragmented). */
void etc_coalesce_put(etc_coalesce *c, int dest, int type, int flags, const etc_piece *pc,
                      int npc, size_t len);
/* Writes what dest's writer takes now. */
void etc_coalesce_flush(etc_coalesce *c, int dest);
/* etc_coalesce_send of a message above max_body: as fragments (frag.h). */
void etc_coalesce_send_fragments(etc_coalesce *c, int dest, int type, const void *a,
                                 size_t alen, const void *b, size_t blen);

/* F5: a frame grows by extension to at most this many bytes of body, so that
 * one delivery does not queue more calls than a node runs between two polls. */
#define ETC_WIRE_EXTEND_MAX 2048u

/* Appends the message a|b for dest (fragmented above max_body); writes dest's
 * buffer at once when flush_at bytes wait. Inline: it runs once per message. */
static inline void etc_coalesce_send(etc_coalesce *c, int dest, int type, const void *a,
                                     size_t alen, const void *b, size_t blen)
{
    size_t len = alen + blen;
    if (len > c->max_body) {
        etc_coalesce_send_fragments(c, dest, type, a, alen, b, blen);
        return;
    }
    etc_wire_buf *w = &c->out[dest];
    etc_wire_hdr h = {(uint32_t)len, (uint16_t)type, 0};
    if (w->cap - w->len < sizeof h + len)
        etc_wire_reserve(w, sizeof h + len);
    unsigned char *p = w->buf + w->len;
    w->last = w->len + 1;
    memcpy(p, &h, sizeof h);
    etc_copy_small(p + sizeof h, a, alen);
    etc_copy_small(p + sizeof h + alen, b, blen);
    w->len += sizeof h + len;
    etc_coalesce_mark(c, dest);
    if (w->len - w->off >= c->flush_at)
        etc_coalesce_flush(c, dest);
}

/* F5 (net.h N13): appends n bytes to the body of dest's last frame if none of
 * it is written yet, it has this type and no flags, its body begins with the
 * 16 bytes of key and it stays within ETC_WIRE_EXTEND_MAX: 1 if so, 0 (nothing
 * done) if not. Inline: it runs once per message. */
static inline int etc_coalesce_extend(etc_coalesce *c, int dest, int type, const uint64_t key[2],
                                      const void *more, size_t n)
{
    etc_wire_buf *w = &c->out[dest];
    if (!w->last)
        return 0;
    unsigned char *p = w->buf + w->last - 1;
    /* the header's type and flags (0) as one word, then its length */
    const etc_wire_hdr want = {0, (uint16_t)type, 0};
    uint32_t len, kind, kind_want;
    memcpy(&kind, p + offsetof(etc_wire_hdr, type), sizeof kind);
    memcpy(&kind_want, (const unsigned char *)&want + offsetof(etc_wire_hdr, type), sizeof kind);
    memcpy(&len, p, sizeof len);
    if (kind != kind_want || len < 2 * sizeof *key || len + n > ETC_WIRE_EXTEND_MAX)
        return 0;
    uint64_t k[2];
    memcpy(k, p + sizeof(etc_wire_hdr), sizeof k);
    if (k[0] != key[0] || k[1] != key[1])
        return 0;
    if (w->cap - w->len < n) {
        etc_wire_reserve(w, n); /* (it may slide the pending bytes, and `last`) */
        p = w->buf + w->last - 1;
    }
    len += (uint32_t)n;
    memcpy(p, &len, sizeof len);
    etc_copy_small(w->buf + w->len, more, n);
    w->len += n;
    if (w->len - w->off >= c->flush_at)
        etc_coalesce_flush(c, dest);
    return 1;
}

/* The same for every destination with bytes waiting; clears `pending` once
 * nothing waits. */
void etc_coalesce_flush_all(etc_coalesce *c);

/* etc_coalesce_flush_all for a layer that takes whole buffers, with its taker
 * named here so that it is compiled in: this runs between a message and its
 * answer (mpi). A taker sends nothing itself, so the list empties. */
static inline void etc_coalesce_take_all(etc_coalesce *c, etc_wire_taker take)
{
    if (!c->pending)
        return;
    for (int i = 0; i < c->ndirty; i++) {
        int d = c->dirty[i];
        etc_wire_buf *b = &c->out[d];
        if (etc_wire_pending(b))
            take(c->ctx, d, b);
        b->last = 0; /* what it took is the sender's now (F5) */
        c->listed[d] = 0;
    }
    c->ndirty = 0;
    c->pending = 0;
}
/* Forgets what waits for dest (it is gone, and that is expected). */
void etc_coalesce_drop(etc_coalesce *c, int dest);

#endif
