/* wire.c: frames and per-destination coalescing buffers (wire.h). */
#include <stdlib.h>
#include <string.h>

#include "net/common/frag.h"
#include "net/common/wire.h"
#include "net/net.h"

void etc_wire_reserve(etc_wire_buf *b, size_t more)
{
    ETC_ASSERT(b->off <= b->len && b->len <= b->cap);
    if (b->off && b->off == b->len)
        b->off = b->len = b->last = 0;
    if (b->len + more <= b->cap)
        return;
    if (b->off) { /* slide what is pending to the front first */
        memmove(b->buf, b->buf + b->off, b->len - b->off);
        b->last = b->last > b->off ? b->last - b->off : 0;
        b->len -= b->off;
        b->off = 0;
        if (b->len + more <= b->cap)
            return;
    }
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < b->len + more)
        cap *= 2;
    b->buf = etc_xrealloc(b->buf, cap);
    b->cap = cap;
}

void etc_wire_put_frame(etc_wire_buf *b, int type, int flags, const etc_piece *pc, int npc,
                        size_t len)
{
    etc_wire_hdr h = {(uint32_t)len, (uint16_t)type, (uint16_t)flags};
    ETC_ASSERT(len <= UINT32_MAX);
    etc_wire_reserve(b, sizeof h + len);
    b->last = b->len + 1;
    memcpy(b->buf + b->len, &h, sizeof h);
    b->len += sizeof h;
    for (int i = 0; i < npc; i++) {
        if (pc[i].n)
            memcpy(b->buf + b->len, pc[i].p, pc[i].n);
        b->len += pc[i].n;
    }
    ETC_ASSERT(b->len <= b->cap);
}

void etc_wire_consume(etc_wire_buf *b, size_t n)
{
    ETC_ASSERT(n <= etc_wire_pending(b));
    b->off += n;
    if (b->last && b->last - 1 < b->off)
        b->last = 0; /* some of it is written: it may not grow (F5) */
    if (b->off == b->len)
        b->off = b->len = b->last = 0;
}

void etc_wire_free(etc_wire_buf *b)
{
    free(b->buf);
    *b = (etc_wire_buf){0};
}

/* ---------------------------------------------------------------- coalescing */

void etc_coalesce_init(etc_coalesce *c, int n, size_t flush_at, size_t max_body,
                       etc_wire_writer write, void *ctx)
{
    c->out = calloc((size_t)n, sizeof *c->out);
    c->dirty = calloc((size_t)n, sizeof *c->dirty);
    c->listed = calloc((size_t)n, sizeof *c->listed);
    if (!c->out || !c->dirty || !c->listed)
        etc_die("out of memory");
    c->n = n;
    c->pending = 0;
    c->ndirty = 0;
    c->flush_at = flush_at;
    c->max_body = max_body;
    c->write = write;
    c->take = NULL;
    c->ctx = ctx;
}

void etc_coalesce_put(etc_coalesce *c, int dest, int type, int flags, const etc_piece *pc,
                      int npc, size_t len)
{
    ETC_ASSERT(dest >= 0 && dest < c->n);
    etc_wire_put_frame(&c->out[dest], type, flags, pc, npc, len);
    etc_coalesce_mark(c, dest);
}

static void put_fragment(void *ctx, int dest, int type, int flags, const etc_piece *pc, int npc,
                         size_t len)
{
    etc_coalesce *c = ctx;
    etc_coalesce_put(c, dest, type, flags, pc, npc, len);
    if (etc_wire_pending(&c->out[dest]) >= c->flush_at)
        etc_coalesce_flush(c, dest);
}

void etc_coalesce_send_fragments(etc_coalesce *c, int dest, int type, const void *a,
                                 size_t alen, const void *b, size_t blen)
{
    etc_frag_send(dest, type, a, alen, b, blen, c->max_body, put_fragment, c);
}

void etc_coalesce_flush(etc_coalesce *c, int dest)
{
    etc_wire_buf *b = &c->out[dest];
    if (c->take) {
        if (etc_wire_pending(b))
            c->take(c->ctx, dest, b);
        ETC_ASSERT(etc_wire_pending(b) == 0);
        b->last = 0; /* what it took is the sender's now (F5) */
        return;
    }
    while (etc_wire_pending(b)) {
        size_t k = c->write(c->ctx, dest, b->buf + b->off, etc_wire_pending(b));
        ETC_ASSERT(k <= etc_wire_pending(b));
        if (k == 0)
            return;
        etc_wire_consume(b, k);
    }
}

void etc_coalesce_flush_all(etc_coalesce *c)
{
    if (!c->pending)
        return;
    /* (a writer may add to the list as it runs: ndirty is read each time, and
     * what is kept moves only to places already visited) */
    int keep = 0;
    for (int i = 0; i < c->ndirty; i++) {
        int d = c->dirty[i];
        ETC_ASSERT(d >= 0 && d < c->n && c->listed[d]);
        etc_coalesce_flush(c, d);
        if (etc_wire_pending(&c->out[d]))
            c->dirty[keep++] = d;
        else
            c->listed[d] = 0;
    }
    c->ndirty = keep;
    c->pending = keep != 0;
}

void etc_coalesce_drop(etc_coalesce *c, int dest)
{
    etc_wire_consume(&c->out[dest], etc_wire_pending(&c->out[dest]));
}
