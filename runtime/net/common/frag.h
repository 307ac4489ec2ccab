/* frag.h: fragmentation and reassembly of messages bigger than a layer's
 * frame (net.h N4; docs/protocols.md, F3).
 *
 * A message of `whole` bytes above the frame size travels as consecutive
 * fragments of one channel, each with ETC_FRAG_PART: the first also has
 * ETC_FRAG_FIRST and starts with the uint64_t `whole`, the last has
 * ETC_FRAG_LAST. A channel keeps order (N1) and a sender never interleaves
 * another message of the same channel, so the receiver needs one reassembly
 * buffer per source.
 */
#ifndef ETC_NET_COMMON_FRAG_H
#define ETC_NET_COMMON_FRAG_H

#include <stddef.h>

#include "net/common/wire.h"

#define ETC_FRAG_FIRST 1
#define ETC_FRAG_PART 2
#define ETC_FRAG_LAST 4
#define ETC_FRAG_FLAGS (ETC_FRAG_FIRST | ETC_FRAG_PART | ETC_FRAG_LAST)

/* Sends one fragment (a record, a frame) of `len` bytes in pieces. */
typedef void (*etc_frag_emit)(void *ctx, int dest, int type, int flags, const etc_piece *pc,
                              int npc, size_t len);

/* Splits the message a|b into fragments of at most `max` bytes (max > 8). */
void etc_frag_send(int dest, int type, const void *a, size_t alen, const void *b, size_t blen,
                   size_t max, etc_frag_emit emit, void *ctx);

/* Where a layer's reassembly buffers come from (NULL: etc_xmalloc/free). */
typedef struct etc_frag_mem {
    void *(*alloc)(size_t n);
    void (*release)(void *p);
} etc_frag_mem;

/* One source's message being reassembled. */
typedef struct etc_frag_in {
    unsigned char *buf;
    size_t len, have;
    int type;
} etc_frag_in;

/* Takes one record or frame from `src`: a whole message (flags 0) is
 * delivered at once (etc_deliver), a fragment is added to `in` and the
 * message delivered with its last one. Returns 1 if a message was delivered,
 * 0 if not yet, -1 if the fragment does not fit (unknown flags, a PART without
 * a FIRST, more bytes than announced, another type): the caller reports it. */
int etc_frag_receive(etc_frag_in *in, const etc_frag_mem *mem, int src, int type, int flags,
                     const void *body, size_t len);

#endif
