/* check.c: the checking build (etcc -g, -DETC_CHECK). Silent misuse becomes an
 * `etc: error:` naming the threaded function and the .tc line (generated code
 * passes __FILE__/__LINE__, which its #line directives map to the .tc file):
 *   - a slot number out of range;
 *   - a direct dereference of a GLOBAL pointer owned by another node;
 *   - a frame used after END_FUNCTION/RETURN freed it (freed frames are kept
 *     in a quarantine for a while, so their memory is not reused at once);
 *   - a slot signalled more often than it can absorb (its count is already 0
 *     with nothing to reset it to), or before INIT_SYNC.
 * In the normal build none of this is compiled. */
#ifdef ETC_CHECK
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rts.h"

#define DEAD 0x44454144u /* "DEAD" */
#define QUARANTINE 4096

static const char *fname_of(const etc_frame_hdr *h)
{
    return h && h->fname ? h->fname : "?";
}

const char *etc_check_file;
int etc_check_line;

void etc_check_fail(const char *fname, const char *file, int line, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line <= 0 && etc_rts.priv->check_from_valid) /* signalled from another node */
        etc_fatal_in_thread("%s", msg);
    if (file && line > 0 && fname)
        etc_fatal("%s:%d: in threaded function '%s': %s", file, line, fname, msg);
    if (file && line > 0)
        etc_fatal("%s:%d: %s", file, line, msg);
    etc_fatal("in threaded function '%s': %s", fname ? fname : "?", msg);
}

long etc_check_slot(long index, int nslots, const char *fname, const char *file, int line)
{
    if (index < 0 || index >= nslots)
        etc_check_fail(fname, file, line, "sync slot %ld is out of range (SYNC_SLOTS[%d]: slots 0 to %d)",
                       index, nslots, nslots - 1);
    return index;
}

void *etc_check_deref(const void *g, const char *fname, const char *file, int line)
{
    if (!etc_is_local(g))
        etc_check_fail(fname, file, line,
                       "direct dereference of a GLOBAL pointer to node %d from node %d "
                       "(read or write remote data with GET_SYNC, DATA_SYNC or BLKMOV)",
                       etc_owner_of(g), etc_rts.node_id);
    if (etc_addr(g) == NULL)
        etc_check_fail(fname, file, line, "dereference of a null GLOBAL pointer");
    return etc_addr(g);
}

static etc_slot *slots_of(etc_frame_hdr *h)
{
    return (etc_slot *)(h + 1);
}

void etc_check_signal(const etc_slot *s, const char *what, const char *file, int line)
{
    if (!s)
        etc_check_fail(NULL, file, line, "%s of a null sync slot pointer", what);
    etc_frame_hdr *h = s->fp;
    if (!s->ip || !h)
        etc_check_fail(NULL, file, line, "%s of a sync slot that INIT_SYNC never initialised",
                       what);
    long k = (long)(s - slots_of(h));
    if (h->magic == DEAD)
        etc_check_fail(NULL, file, line,
                       "%s of sync slot %ld of '%s', whose frame END_FUNCTION/RETURN already "
                       "freed", what, k, fname_of(h));
    if (h->magic != ETC_FRAME_LIVE)
        etc_check_fail(NULL, file, line, "%s of something that is not a sync slot", what);
    int incr = strncmp(what, "INCR", 4) == 0; /* INCR_SYNC may re-arm a slot at 0 */
    if (s->cnt <= 0 && !incr)
        etc_check_fail(NULL, file, line,
                       "%s: sync slot %ld of '%s' signalled more times than it can absorb "
                       "(count %d, reset %d)", what, k, fname_of(h), s->cnt, s->rst);
}

void etc_frame_check_init(void *fp, const char *fname, int nslots)
{
    etc_frame_hdr *h = fp;
    etc_node_private *p = etc_rts.priv;
    h->magic = ETC_FRAME_LIVE;
    h->nslots = nslots;
    h->fname = fname;
    /* the slots follow the header: zeroed, so a signal before INIT_SYNC shows */
    memset(h + 1, 0, (size_t)nslots * sizeof(etc_slot));
    h->prev = NULL;
    h->next = p->check_live;
    if (p->check_live)
        p->check_live->prev = h;
    p->check_live = h;
}

void etc_check_frame_free(void *fp, size_t size)
{
    etc_frame_hdr *h = fp;
    etc_node_private *p = etc_rts.priv;
    if (h->magic == DEAD)
        etc_check_fail(fname_of(h), NULL, 0, "frame freed twice (END_FUNCTION/RETURN after the end)");
    h->magic = DEAD;
    if (h->prev)
        h->prev->next = h->next;
    else
        p->check_live = h->next;
    if (h->next)
        h->next->prev = h->prev;
    if (!p->check_quarantine) {
        p->check_quarantine = etc_xmalloc(QUARANTINE * sizeof *p->check_quarantine);
        p->check_quarantine_size = etc_xmalloc(QUARANTINE * sizeof *p->check_quarantine_size);
    }
    int i = p->check_quarantine_next;
    if (p->check_quarantine_n == QUARANTINE)
        etc_block_free(p->check_quarantine[i], p->check_quarantine_size[i]);
    else
        p->check_quarantine_n++;
    p->check_quarantine[i] = fp;
    p->check_quarantine_size[i] = size;
    p->check_quarantine_next = (i + 1) % QUARANTINE;
}

/* At the end of a run: the slots of the frames still alive, which were waiting
 * for signals that never came (the deadlock report, deadlock.c, prints them).
 * Fills at most `max` entries; returns how many slots wait in all. */
int etc_check_waiting_slots(etc_waiting_slot *out, int max)
{
    int total = 0;
    for (etc_frame_hdr *h = etc_rts.priv->check_live; h; h = h->next) {
        etc_slot *sl = slots_of(h);
        for (int k = 0; k < h->nslots; k++) {
            if (!sl[k].ip || sl[k].cnt <= 0)
                continue;
            if (total < max)
                out[total] = (etc_waiting_slot){
                    .fname = (uint64_t)(uintptr_t)fname_of(h),
                    .file = (uint64_t)(uintptr_t)sl[k].init_file,
                    .slot = k,
                    .cnt = sl[k].cnt,
                    .line = sl[k].init_line,
                    .node = etc_rts.node_id,
                };
            total++;
        }
    }
    return total;
}

void etc_check_dispatch(const etc_closure *c)
{
    if (!c->framed)
        return;
    const etc_frame_hdr *h = c->fp;
    if (h->magic == DEAD)
        etc_check_fail(fname_of(h), NULL, 0,
                       "a thread became ready after END_FUNCTION/RETURN freed its frame");
}
/* ---------------------------------------------------------------- origins */

static etc_origin here(void)
{
    etc_node_private *p = etc_rts.priv;
    if (p->check_from_valid)
        return p->check_from; /* a handler sending on: the first sender's */
    return (etc_origin){(uint64_t)(uintptr_t)etc_check_file, (uint64_t)(uintptr_t)etc_rts.running,
                        etc_check_line, etc_rts.node_id};
}

void etc_check_send(int dest, int type, const void *a, size_t alen, const void *b, size_t blen)
{
    etc_origin o = here();
    unsigned char small[256];
    unsigned char *buf = sizeof o + alen <= sizeof small ? small : etc_xmalloc(sizeof o + alen);
    memcpy(buf, &o, sizeof o);
    if (alen)
        memcpy(buf + sizeof o, a, alen);
    etc_net_send(dest, type, buf, sizeof o + alen, b, blen);
    if (buf != small)
        free(buf);
}

void etc_check_receive(etc_origin *outer, const void **body, size_t *len, int src, int type)
{
    etc_node_private *p = etc_rts.priv;
    etc_origin o;
    if (*len < sizeof o)
        etc_fatal("malformed message (type %d, %zu bytes) from node %d", type, *len, src);
    memcpy(&o, *body, sizeof o);
    *body = (const char *)*body + sizeof o;
    *len -= sizeof o;
    *outer = p->check_from_valid ? p->check_from : (etc_origin){0, 0, 0, -1};
    p->check_from = o;
    p->check_from_valid = 1;
}

void etc_check_received(const etc_origin *outer)
{
    etc_node_private *p = etc_rts.priv;
    p->check_from = *outer;
    p->check_from_valid = outer->node >= 0;
}
#endif
