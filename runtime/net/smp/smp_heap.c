/* smp_heap.c: the allocator of a node's shared heap slice (see smp_mem.h).
 *
 * smp programs replace glibc's malloc family through ELF symbol interposition,
 * as the glibc manual's "Replacing malloc" describes. Until a node attaches its
 * slice (and always in the supervisor, in one-node runs, under ETC_SMP_SHARED=0
 * and when a slice is full) every call goes to glibc's own __libc_* functions;
 * free() and realloc() tell the two kinds of block apart by address.
 *
 * Inside the slice every block has a 16-byte header: its size (a multiple of
 * 16, bit 0 set while in use) and the size of the block before it, so a freed
 * block merges with free neighbours at once (boundary tags, as in dlmalloc).
 * Free blocks wait in bins: one per size up to 1 KiB, then four per power of
 * two, with a bitmap of the nonempty ones; a request takes an exact fit or
 * splits the first block of a bigger bin. Fresh blocks are cut from the
 * slice's top; a freed block that reaches the top lowers it. Big freed blocks
 * and a top that falls far give their pages back to the kernel (MADV_REMOVE:
 * the slice is shared memory, which MADV_DONTNEED would not free).
 *
 * Freed blocks of up to 1 KiB first go to a short exact-size quick list
 * (still marked in use, not merged), so the common free-then-malloc of one
 * size costs a push and a pop, as glibc's tcache does.
 *
 * A lock makes it safe for user threads; it is skipped while the process has
 * only one (glibc's __libc_single_threaded), which a node is unless its user
 * code starts threads.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h> /* memalign, pvalloc, malloc_usable_size */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>

#include "net/net.h"
#include "net/smp/smp_mem.h"

#if ETC_SMP_SHARE_BUILD

/* glibc's allocator, under the names it exports for this purpose */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

#define HDR 16
#define MIN_BLOCK ((size_t)32) /* a header and a free block's two links */
#define USED ((size_t)1)
#define ALIGNED ((size_t)2) /* a header in front of an aligned pointer: offset back */
#define NBINS 192
#define PAGE ((size_t)4096)
#define PUNCH_MIN ((size_t)1 << 20) /* freed blocks this big give their pages back */
#define TRIM_MIN ((size_t)1 << 20)  /* so does the top when it falls this much */
#define QUICK_MAX ((size_t)1024) /* block sizes up to this get a quick list */
#define QUICK_CAP 64             /* blocks one quick list holds; more are merged */

typedef struct hdr {
    size_t prev; /* size of the block before (0: the first) */
    size_t size; /* of this block, header included; | USED, or offset | ALIGNED */
} hdr;

typedef struct fblk { /* a free block, in the list of its bin */
    hdr h;
    struct fblk *next, *back;
} fblk;

/* This process's heap: its slice, bins and quick lists. */
static struct {
    _Atomic int lock;
    int active;     /* 1: new blocks come from the slice, freed pages go back to the kernel */
    char *lo, *hi;  /* the slice */
    char *top;      /* blocks lie in [lo, top) */
    char *clean;    /* everything at or above is known zero */
    size_t last;    /* size of the block just below top */
    char *dump_to;  /* [lo, dump_to) goes into core dumps, the rest does not */
    fblk *bin[NBINS];
    uint64_t nonempty[NBINS / 64];
    void *quick[QUICK_MAX / 16 + 1]; /* by block size / 16; linked through the payload */
    int quick_len[QUICK_MAX / 16 + 1];
    int quick_total;    int fork_locked;
    size_t (*libc_usable)(void *);
} heap;

/* Returns whether it took the lock (not while single-threaded: nobody to
 * exclude, and a thread can only be started by the one running now). */
static int lock(void)
{
    if (__libc_single_threaded)
        return 0;
    while (atomic_exchange_explicit(&heap.lock, 1, memory_order_acquire))
        while (atomic_load_explicit(&heap.lock, memory_order_relaxed))
            ;
    return 1;
}

static void unlock(int held)
{
    if (held)
        atomic_store_explicit(&heap.lock, 0, memory_order_release);
}

static int mine(const void *p)
{
    return heap.lo && (const char *)p >= heap.lo && (const char *)p < heap.hi;
}

static size_t bsize(const hdr *h)
{
    return h->size & ~(USED | ALIGNED);
}

/* The block after h, whatever its tag says (tell_next sets it). */
static hdr *block_after(hdr *h)
{
    char *n = (char *)h + bsize(h);
    return n < heap.top ? (hdr *)n : NULL;
}

/* The boundary tags: a block's size, and the next block's copy of it in its
 * `prev` (the last block's is heap.last). The debug build checks both links
 * of every block it steps across. */
static hdr *next_of(hdr *h)
{
    hdr *n = block_after(h);
    ETC_ASSERT((char *)h + bsize(h) <= heap.top && (n ? n->prev : heap.last) == bsize(h));
    return n;
}

static hdr *prev_of(hdr *h)
{
    hdr *p = h->prev ? (hdr *)((char *)h - h->prev) : NULL;
    ETC_ASSERT(p ? (char *)p >= heap.lo && bsize(p) == h->prev : (char *)h == heap.lo);
    return p;
}

/* Sets the size of the block after h to what h is now. */
static void tell_next(hdr *h)
{
    hdr *n = block_after(h);
    if (n)
        n->prev = bsize(h);
    else
        heap.last = bsize(h);
}

/* The bin of a block size (a multiple of 16): exact sizes up to 1 KiB, then
 * four bins per power of two. */
static int bin_of(size_t s)
{
    if (s <= 1024)
        return (int)(s >> 4);
    int lg = 63 - __builtin_clzll((unsigned long long)s); /* s in [2^lg, 2^(lg+1)) */
    return 65 + (lg - 10) * 4 + (int)((s >> (lg - 2)) & 3);
}

static void punch(char *from, char *to)
{
    char *a = (char *)(((uintptr_t)from + PAGE - 1) & ~(uintptr_t)(PAGE - 1));
    char *b = (char *)((uintptr_t)to & ~(uintptr_t)(PAGE - 1));
    if (heap.active && b > a) /* not in a forked child: its copy is private memory */
        madvise(a, (size_t)(b - a), MADV_REMOVE);
}

static void unlink_free(fblk *f)
{
    int b = bin_of(bsize(&f->h));
    if (f->back)
        f->back->next = f->next;
    else
        heap.bin[b] = f->next;
    if (f->next)
        f->next->back = f->back;
    if (!heap.bin[b])
        heap.nonempty[b / 64] &= ~((uint64_t)1 << (b % 64));
}

static void insert_free(fblk *f)
{
    int b = bin_of(bsize(&f->h));
    f->back = NULL;
    f->next = heap.bin[b];
    if (f->next)
        f->next->back = f;
    heap.bin[b] = f;
    heap.nonempty[b / 64] |= (uint64_t)1 << (b % 64);
}

/* The first nonempty bin from b on, or -1. */
static int bin_from(int b)
{
    for (int w = b / 64; w < NBINS / 64; w++) {
        uint64_t m = heap.nonempty[w];
        if (w == b / 64)
            m &= ~(uint64_t)0 << (b % 64);
        if (m)
            return w * 64 + __builtin_ctzll(m);
    }
    return -1;
}

static char *page_up(char *a)
{
    return (char *)(((uintptr_t)a + PAGE - 1) & ~(uintptr_t)(PAGE - 1));
}

/* Frees h: it merges with free neighbours, then joins the top or a bin.
 *
 * Pages go back to the kernel as glibc gives them back (its trim of the top
 * and its munmap of big blocks), not at every free: a freed block of 1 MiB or
 * more gives back its own pages, and the top, when it falls by 1 MiB or more,
 * gives back everything above it. Punching the pages of every growing free
 * span made a queue of small messages fault its memory in again and again
 * (pipelined remote reads 3.6x slower than with glibc's malloc). */
static void release(hdr *h)
{
    ETC_ASSERT((char *)h >= heap.lo && (char *)h + bsize(h) <= heap.top);
    char *own_lo = (char *)h, *own_hi = (char *)h + bsize(h);
    size_t s = bsize(h);
    hdr *n = next_of(h);
    if (n && !(n->size & USED)) {
        unlink_free((fblk *)n);
        s += bsize(n);
    }
    hdr *p = prev_of(h);
    if (p && !(p->size & USED)) {
        unlink_free((fblk *)p);
        s += bsize(p);
        h = p;
    }
    h->size = s;
    char *body = (char *)h + sizeof(fblk); /* a free block keeps its header and links */
    if ((char *)h + s == heap.top) { /* give it back to the top */
        char *old = heap.top;
        heap.top = (char *)h;
        heap.last = h->prev;
        if (heap.active && (size_t)(old - heap.top) >= TRIM_MIN) {
            /* on to where memory is known zero */
            punch(body, page_up(old > heap.clean ? old : heap.clean));
            heap.clean = page_up(body);
        }
        return;
    }
    tell_next(h);
    insert_free((fblk *)h);
    if ((size_t)(own_hi - own_lo) >= PUNCH_MIN)
        punch(own_lo > body ? own_lo : body, own_hi);
}

/* Cuts h (used, of size have) down to s, freeing the rest if it can be a block. */
static void trim(hdr *h, size_t s)
{
    size_t have = bsize(h);
    if (have - s < MIN_BLOCK)
        return;
    h->size = s | USED;
    hdr *rest = (hdr *)((char *)h + s);
    rest->prev = s;
    rest->size = (have - s) | USED;
    tell_next(rest);
    release(rest);
}

/* The slice is mapped MADV_DONTDUMP (a core dump would otherwise write every
 * page of it, zeros included, into a crash handler's pipe); the part in use is
 * made dumpable again as the top rises, 1 MiB at a time. */
static void raise_top(char *top)
{
    heap.top = top;
    if (heap.clean < top)
        heap.clean = top;
    if (top > heap.dump_to) {
        uintptr_t step = (uintptr_t)1 << 20;
        char *to = (char *)(((uintptr_t)top + step - 1) & ~(step - 1));
        if (to > heap.hi)
            to = heap.hi;
        madvise(heap.dump_to, (size_t)(to - heap.dump_to), MADV_DODUMP);
        heap.dump_to = to;
    }
}

/* A fresh block of size s from the top, or NULL when the slice is full. */
static hdr *cut(size_t s)
{
    if ((size_t)(heap.hi - heap.top) < s)
        return NULL;
    hdr *h = (hdr *)heap.top;
    h->prev = heap.last;
    h->size = s | USED;
    heap.last = s;
    raise_top(heap.top + s);
    return h;
}

/* A free block of at least s bytes, taken out of its bin, or NULL: first fit in
 * s's own bin, else any block of the next nonempty bin (all big enough). */
static hdr *find_free(size_t s)
{
    int b = bin_of(s);
    if (s > 1024) {
        for (fblk *f = heap.bin[b]; f; f = f->next)
            if (bsize(&f->h) >= s) {
                unlink_free(f);
                return &f->h;
            }
        b++;
    }
    b = b < NBINS ? bin_from(b) : -1;
    if (b < 0)
        return NULL;
    fblk *f = heap.bin[b];
    unlink_free(f);
    return &f->h;
}

static void flush_quick(void)
{
    for (size_t c = 0; c <= QUICK_MAX / 16; c++) {
        while (heap.quick[c]) {
            void *p = heap.quick[c];
            memcpy(&heap.quick[c], p, sizeof p);
            release((hdr *)((char *)p - HDR));
        }
        heap.quick_len[c] = 0;
    }
    heap.quick_total = 0;
}

/* A block for n bytes from the slice, or NULL (the caller falls back to glibc).
 * *fresh: the block came from untouched memory (zero). */
static void *slice_alloc(size_t n, int *fresh)
{
    if (n > (size_t)(heap.hi - heap.lo))
        return NULL;
    size_t s = (n + HDR + 15) & ~(size_t)15;
    if (s < MIN_BLOCK)
        s = MIN_BLOCK;
    if (s <= QUICK_MAX && heap.quick[s / 16]) {
        void *p = heap.quick[s / 16];
        memcpy(&heap.quick[s / 16], p, sizeof p);
        heap.quick_len[s / 16]--;
        heap.quick_total--;
        *fresh = 0;
        return p;
    }
    char *clean = heap.clean;
    hdr *h = find_free(s);
    if (!h && heap.quick_total) {
        /* Blocks held in quick lists are not merged: before the slice grows,
         * merge them (as glibc consolidates its fastbins) and look again. */
        flush_quick();
        h = find_free(s);
    }
    if (h) {
        h->size |= USED;
        trim(h, s);
        *fresh = 0;
        return (char *)h + HDR;
    }
    if (!(h = cut(s)))
        return NULL;
    *fresh = (char *)h >= clean;
    return (char *)h + HDR;
}

/* The block a pointer from this allocator belongs to. */
static hdr *block_of(void *p)
{
    hdr *h = (hdr *)((char *)p - HDR);
    if (h->size & ALIGNED)
        h = (hdr *)((char *)h - (h->size & ~ALIGNED));
    return h;
}

/* Frees the block of p: onto its quick list, or merged into the free space. */
static void slice_free(void *p)
{
    hdr *h = block_of(p);
    ETC_ASSERT(h->size & USED); /* not freed twice */
    size_t s = bsize(h);
    if (s <= QUICK_MAX && heap.quick_len[s / 16] < QUICK_CAP) {
        void *payload = (char *)h + HDR;
        memcpy(payload, &heap.quick[s / 16], sizeof payload);
        heap.quick[s / 16] = payload;
        heap.quick_len[s / 16]++;
        heap.quick_total++;
        return;
    }
    release(h);
}

/* Bytes usable at p, a pointer into the slice. */
static size_t slice_usable(void *p)
{
    hdr *h = block_of(p);
    return (size_t)((char *)h + bsize(h) - (char *)p);
}

/* ---------------------------------------------------------------- the family */

void *malloc(size_t n)
{
    if (heap.active) {
        int fresh;
        int held = lock();
        void *p = slice_alloc(n, &fresh);
        unlock(held);
        if (p)
            return p;
    }
    return __libc_malloc(n);
}

void free(void *p)
{
    if (!p)
        return;
    if (!mine(p)) {
        __libc_free(p);
        return;
    }
    int held = lock();
    slice_free(p);
    unlock(held);
}

void *calloc(size_t count, size_t size)
{
    if (heap.active) {
        size_t n;
        if (__builtin_mul_overflow(count, size, &n)) {
            errno = ENOMEM;
            return NULL;
        }
        int fresh;
        int held = lock();
        void *p = slice_alloc(n, &fresh);
        unlock(held);
        if (p) {
            if (!fresh)
                memset(p, 0, n);
            return p;
        }
    }
    return __libc_calloc(count, size);
}

/* Resizes the block of p in place where that is cheap: it grows into a free
 * block after it or, being the last block, into the top; it gives back a tail
 * it no longer needs. Returns the bytes now usable at p. */
static size_t resize_in_place(void *p, size_t n)
{
    hdr *h = (hdr *)((char *)p - HDR);
    if ((h->size & ALIGNED) || n > (size_t)(heap.hi - heap.lo))
        return slice_usable(p);
    size_t s = (n + HDR + 15) & ~(size_t)15;
    if (s < MIN_BLOCK)
        s = MIN_BLOCK;
    if (s > bsize(h) && heap.active) {
        hdr *nx = next_of(h);
        if (nx && !(nx->size & USED) && bsize(h) + bsize(nx) >= s) {
            unlink_free((fblk *)nx);
            h->size = (bsize(h) + bsize(nx)) | USED;
            tell_next(h);
        } else if (!nx && (size_t)(heap.hi - (char *)h) >= s) {
            heap.last = s;
            h->size = s | USED;
            raise_top((char *)h + s);
        }
    }
    if (s <= bsize(h))
        trim(h, s);
    return slice_usable(p);
}

void *realloc(void *p, size_t n)
{
    if (!p)
        return malloc(n);
    if (!mine(p))
        return __libc_realloc(p, n);
    if (n == 0) {
        free(p);
        return NULL;
    }
    int held = lock();
    size_t have = resize_in_place(p, n);
    unlock(held);
    if (n <= have)
        return p;
    void *q = malloc(n);
    if (!q)
        return NULL;
    memcpy(q, p, have);
    free(p);
    return q;
}

void *memalign(size_t align, size_t n)
{
    if (align <= HDR)
        return malloc(n);
    if (align & (align - 1)) {
        errno = EINVAL;
        return NULL;
    }
    if (heap.active && n <= (size_t)(heap.hi - heap.lo) && align <= (size_t)(heap.hi - heap.lo)) {
        int fresh;
        int held = lock();
        char *p = slice_alloc(n + align, &fresh);
        unlock(held);
        if (p) {
            char *q = (char *)(((uintptr_t)p + HDR + align - 1) & ~(uintptr_t)(align - 1));
            if ((uintptr_t)p % align == 0)
                return p;
            hdr *fake = (hdr *)(q - HDR);
            fake->prev = 0;
            fake->size = (size_t)(q - p) | ALIGNED;
            return q;
        }
    }
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    void *p = memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
    return memalign(align, n);
}

void *valloc(size_t n)
{
    return memalign(PAGE, n);
}

void *pvalloc(size_t n)
{
    return memalign(PAGE, (n + PAGE - 1) & ~(PAGE - 1));
}

size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    if (mine(p)) {
        int held = lock();
        size_t n = slice_usable(p);
        unlock(held);
        return n;
    }
    if (!heap.libc_usable)
        heap.libc_usable = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
    return heap.libc_usable ? heap.libc_usable(p) : 0;
}

void *etc_smp_private_alloc(size_t n)
{
    return __libc_malloc(n ? n : 1);
}

void etc_smp_private_free(void *p)
{
    __libc_free(p);
}

/* ---------------------------------------------------------------- the slice */

void etc_smp_heap_fork_prepare(void)
{
    if (heap.lo)
        heap.fork_locked = lock();
}

void etc_smp_heap_fork_parent(void)
{
    if (heap.lo)
        unlock(heap.fork_locked);
}

void etc_smp_heap_attach(void *lo, size_t len)
{
    if (!len)
        return;
    if (len > ((size_t)1 << 40))
        len = (size_t)1 << 40; /* the bins reach up to 2^41 bytes */
    heap.libc_usable = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
    heap.lo = heap.top = heap.clean = heap.dump_to = lo;
    heap.hi = (char *)lo + len;
    heap.last = 0;
    heap.active = 1;
}

void etc_smp_heap_detach_child(void)
{
    if (!heap.lo)
        return;
    /* The slice is the parent node's memory: keep what is ours as a private
     * copy, allocate new blocks from glibc. */
    size_t used = ((size_t)(heap.top - heap.lo) + PAGE - 1) & ~(PAGE - 1);
    if (used && etc_smp_privatize(heap.lo, used) != 0)
        abort(); /* cannot go on without corrupting the parent node */
    heap.active = 0;
    unlock(heap.fork_locked); /* taken by etc_smp_heap_fork_prepare() before the fork */
}

#else /* sanitizer builds: nothing is shared, glibc's malloc serves all */

void *etc_smp_private_alloc(size_t n)
{
    return malloc(n ? n : 1);
}

void etc_smp_private_free(void *p)
{
    free(p);
}

void etc_smp_heap_attach(void *lo, size_t len)
{
    (void)lo;
    (void)len;
}

void etc_smp_heap_fork_prepare(void)
{
}

void etc_smp_heap_fork_parent(void)
{
}

void etc_smp_heap_detach_child(void)
{
}

#endif
