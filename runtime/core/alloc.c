/* alloc.c: the memory of a node: free-list slow paths, queue growth.
 *
 * Frames and parameter frames come from per-size free lists (etc.h inline
 * fast paths); only an empty list reaches the slow path here, which carves
 * blocks one at a time from 64 KiB chunks (few malloc calls, no page touched
 * before it is used). */
#include <stdlib.h>
#include <string.h>

#include "core/rts.h"

etc_rts_t etc_rts;

#define CHUNK_BYTES 65536

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

/* Per size class, the unused end of its newest chunk. A refill hands out the
 * next block from there rather than threading the whole chunk onto the free
 * list: that would touch all 16 pages of a chunk at once, about 16 page faults
 * on the critical path of a node's first threads (a few us each, more for
 * the shared pages of smp nodes), for blocks most programs never use. */
static struct {
    char *next;
    size_t left;
} bump[ETC_FREE_CLASSES];

void *etc_alloc_slow(size_t size)
{
    size_t c = (size + ETC_FREE_GRAIN - 1) / ETC_FREE_GRAIN;
    if (c == 0)
        c = 1;
    if (c >= ETC_FREE_CLASSES)
        return etc_xmalloc(size);
    /* The chunks live as long as the node (frames are recycled, never returned). */
    size_t bytes = c * ETC_FREE_GRAIN;
    if (bump[c].left < bytes) {
        bump[c].next = etc_xmalloc(CHUNK_BYTES);
        bump[c].left = CHUNK_BYTES - CHUNK_BYTES % bytes;
    }
    void *b = bump[c].next;
    bump[c].next += bytes;
    bump[c].left -= bytes;
    return b;
}

void etc_free_slow(void *p, size_t size)
{
    (void)size;
    free(p);
}

/* Doubles a ring of `elem`-byte entries, its live part [head, tail) moved to the
 * front (the ready queue and the token deque are both such rings). */
static void ring_grow(void **buf, size_t *mask, size_t *head, size_t *tail, size_t elem)
{
    size_t n = *mask + 1, len = *tail - *head;
    ETC_ASSERT(len == n); /* only a full ring grows: never more live entries than room */
    char *nb = etc_xmalloc(2 * n * elem);
    for (size_t i = 0; i < len; i++)
        memcpy(nb + i * elem, (char *)*buf + ((*head + i) & *mask) * elem, elem);
    free(*buf);
    *buf = nb;
    *mask = 2 * n - 1;
    *head = 0;
    *tail = len;
}

void etc_rq_grow(void)
{
    etc_rq *q = &etc_rts.rq;
    ETC_PROF_ADD(rq_taken_before_grow, q->head); /* prof.c counts threads run by head */
    void *buf = q->buf;
    ring_grow(&buf, &q->mask, &q->head, &q->tail, sizeof *q->buf);
    q->buf = buf;
}

void etc_tq_grow(void)
{
    etc_tq *q = &etc_rts.tq;
    void *buf = q->buf;
    ring_grow(&buf, &q->mask, &q->head, &q->tail, sizeof *q->buf);
    q->buf = buf;
}

void etc_tq_push_head(etc_tok t)
{
    etc_tq *q = &etc_rts.tq;
    if (q->tail - q->head > q->mask)
        etc_tq_grow();
    q->buf[--q->head & q->mask] = t;
    ETC_ASSERT(q->tail - q->head <= q->mask + 1);
}

int etc_tq_pop_head(etc_tok *out)
{
    etc_tq *q = &etc_rts.tq;
    ETC_ASSERT(q->tail - q->head <= q->mask + 1); /* head never passes tail */
    if (q->head == q->tail)
        return 0;
    *out = q->buf[q->head++ & q->mask];
    return 1;
}

void etc_alloc_init(void)
{
    etc_rts.rq.mask = 255;
    etc_rts.rq.buf = etc_xmalloc(256 * sizeof *etc_rts.rq.buf);
    etc_rts.tq.mask = 255;
    etc_rts.tq.buf = etc_xmalloc(256 * sizeof *etc_rts.tq.buf);
}
