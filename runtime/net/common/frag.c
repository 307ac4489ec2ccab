/* frag.c: fragmentation and reassembly of big messages (frag.h). */
#include <stdlib.h>
#include <string.h>

#include "net/common/frag.h"
#include "net/net.h"

void etc_frag_send(int dest, int type, const void *a, size_t alen, const void *b, size_t blen,
                   size_t max, etc_frag_emit emit, void *ctx)
{
    uint64_t whole = alen + blen;
    size_t len = (size_t)whole, off = 0;
    int first = 1;
    ETC_ASSERT(max > sizeof whole);
    while (off < len) {
        etc_piece pc[3];
        int np = 0;
        size_t room = max - (first ? sizeof whole : 0);
        size_t k = len - off < room ? len - off : room;
        size_t body = k;
        if (first) {
            pc[np++] = (etc_piece){&whole, sizeof whole};
            body += sizeof whole;
        }
        /* the bytes [off, off + k) of a|b: from a, then from b */
        size_t from = off, left = k;
        if (from < alen) {
            size_t t = alen - from < left ? alen - from : left;
            pc[np++] = (etc_piece){(const char *)a + from, t};
            from += t;
            left -= t;
        }
        if (left)
            pc[np++] = (etc_piece){(const char *)b + (from - alen), left};
        off += k;
        int flags = ETC_FRAG_PART | (first ? ETC_FRAG_FIRST : 0) | (off == len ? ETC_FRAG_LAST : 0);
        ETC_ASSERT(body <= max);
        emit(ctx, dest, type, flags, pc, np, body);
        first = 0;
    }
}

int etc_frag_receive(etc_frag_in *in, const etc_frag_mem *mem, int src, int type, int flags,
                     const void *body, size_t len)
{
    if (flags == 0) {
        if (in->buf)
            return -1; /* a whole message inside a fragmented one */
        etc_deliver(src, type, body, len);
        return 1;
    }
    if ((flags & ~ETC_FRAG_FLAGS) || !(flags & ETC_FRAG_PART))
        return -1;
    const unsigned char *p = body;
    if (flags & ETC_FRAG_FIRST) {
        uint64_t whole;
        if (in->buf || len < sizeof whole)
            return -1;
        memcpy(&whole, p, sizeof whole);
        if (whole > SIZE_MAX / 2)
            return -1;
        in->buf = mem ? mem->alloc((size_t)whole) : etc_xmalloc((size_t)whole);
        if (!in->buf)
            etc_fatal("out of memory (a message of %llu bytes from node %d)",
                      (unsigned long long)whole, src);
        in->len = (size_t)whole;
        in->have = 0;
        in->type = type;
        p += sizeof whole;
        len -= sizeof whole;
    }
    if (!in->buf || in->type != type || len > in->len - in->have)
        return -1;
    memcpy(in->buf + in->have, p, len);
    in->have += len;
    if (!(flags & ETC_FRAG_LAST))
        return 0;
    if (in->have != in->len)
        return -1;
    unsigned char *whole_msg = in->buf;
    size_t whole_len = in->len;
    in->buf = NULL; /* first: the reassembly is over whatever the handler calls */
    etc_deliver(src, type, whole_msg, whole_len);
    if (mem)
        mem->release(whole_msg);
    else
        free(whole_msg);
    return 1;
}
