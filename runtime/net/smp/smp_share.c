/* smp_share.c: every node's static data and heap, mapped in every node.
 *
 * Forking keeps each node's globals private at the same address, which is
 * what distributed-memory semantics need, but it also means another node can
 * only reach them through the kernel (process_vm_readv: one copy, page by
 * page, about a quarter of memcpy's speed here). So before forking, the
 * supervisor maps shared memory for each node k:
 *   - a window for each writable segment of the executable (.data, .bss; not
 *     the RELRO part). Node k copies its segment into its window and moves the
 *     window over the segment (mremap), so its globals live in memory the
 *     others see at the window's address;
 *   - a heap slice, at the same address in every process, from which node k's
 *     malloc() allocates (smp_heap.c).
 * A block move whose remote end lies in either is then a plain memcpy. The
 * rest (the stack, memory from before the fork, a full slice) still goes
 * through process_vm_* or messages. Nothing is a named object: the memory
 * goes away with the last process of the run, and only what a node uses of
 * its own goes into its core dump.
 *
 * A fork() inside a node gives the child private copies again, so it cannot
 * write into the node (pthread_atfork).
 */
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "net/smp/smp_mem.h"

#define PAGE ((uintptr_t)4096)
#define MAX_SEGS 4
#define MAX_WINDOWS 1024
#define SLICE_MAX ((size_t)64 << 30) /* per node, of address space only */
#define SLICE_MIN ((size_t)256 << 20)
#define SPACE_MAX ((size_t)16 << 40)

typedef struct {
    char *lo;
    size_t len;
} seg;

/* The shared memory of the run, as this process maps it. */
static struct {
    int n;
    int nseg;
    seg segs[MAX_SEGS];            /* the executable's writable data */
    char *window[MAX_WINDOWS][MAX_SEGS]; /* node k's segments, as mapped here */
    _Atomic int *ready;            /* n flags: node k's windows hold its data */
    char *heap;                    /* n slices */
    size_t slice;
} shared;

static uintptr_t page_up(uintptr_t a)
{
    return (a + PAGE - 1) & ~(PAGE - 1);
}

static int zero_page(const void *p)
{
    const uint64_t *w = p;
    for (size_t i = 0; i < PAGE / 8; i += 8)
        if (w[i] | w[i + 1] | w[i + 2] | w[i + 3] | w[i + 4] | w[i + 5] | w[i + 6] | w[i + 7])
            return 0;
    return 1;
}

void etc_smp_copy_pages(void *to, const void *from, size_t len)
{
    /* A large .bss is mostly pages never written; reading them maps the zero
     * page, and skipping them keeps the copy from allocating it all. */
    for (size_t off = 0; off < len; off += PAGE)
        if (!zero_page((const char *)from + off))
            memcpy((char *)to + off, (const char *)from + off, PAGE);
}

/* Moves the shared mapping `from` over [to, to + len): the bytes at `to` are
 * copied in first, so nothing changes for this process but what backs them.
 * Signals are held off: a handler's write in between would be lost. */
static int move_over(char *from, char *to, size_t len)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    etc_smp_copy_pages(from, to, len);
    void *r = mremap(from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return r == MAP_FAILED ? -1 : 0;
}

int etc_smp_privatize(void *addr, size_t len)
{
    char *tmp = mmap(NULL, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (tmp == MAP_FAILED)
        return -1;
    if (move_over(tmp, addr, len) != 0) {
        munmap(tmp, len);
        return -1;
    }
    return 0;
}

/* The executable's writable segments, less what RELRO makes read-only. */
static int find_segments(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    uintptr_t relro_end = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_RELRO)
            relro_end = page_up(info->dlpi_addr + ph->p_vaddr + ph->p_memsz);
    }
    for (int i = 0; i < info->dlpi_phnum && shared.nseg < MAX_SEGS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        uintptr_t hi = page_up(lo + ph->p_memsz);
        if (relro_end > lo && relro_end <= hi)
            lo = relro_end;
        lo = page_up(lo);
        if (hi > lo)
            shared.segs[shared.nseg++] = (seg){(char *)lo, hi - lo};
    }
    return 1; /* the first object is the executable: stop */
}

static void *map_shared(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void etc_smp_share_reserve(int n, int enabled)
{
    if (!ETC_SMP_SHARE_BUILD || !enabled || n < 2 || n > MAX_WINDOWS)
        return;
    shared.ready = map_shared(page_up((size_t)n * sizeof *shared.ready));
    if (!shared.ready)
        return;
    shared.n = n;
    dl_iterate_phdr(find_segments, NULL);
    for (int s = 0; s < shared.nseg; s++)
        for (int k = 0; k < n; k++)
            if (!(shared.window[k][s] = map_shared(shared.segs[s].len)))
                shared.nseg = 0; /* no windows at all; the heap may still be had */
    /* Address space only (NORESERVE, untouched pages cost nothing); halve
     * until the kernel agrees, or do without. */
    size_t slice = SPACE_MAX / (size_t)n;
    if (slice > SLICE_MAX)
        slice = SLICE_MAX;
    slice &= ~(size_t)(PAGE - 1);
    for (; slice >= SLICE_MIN; slice /= 2)
        if ((shared.heap = map_shared(slice * (size_t)n)))
            break;
    shared.slice = shared.heap ? slice : 0;
    /* Out of core dumps: other nodes' memory is not this node's, and a dump
     * would write every untouched page as zeros. What a node uses of its own
     * is made dumpable again (attach, smp_heap.c). */
    if (shared.heap)
        madvise(shared.heap, shared.slice * (size_t)n, MADV_DONTDUMP);
    for (int s = 0; s < shared.nseg; s++)
        for (int k = 0; k < n; k++)
            madvise(shared.window[k][s], shared.segs[s].len, MADV_DONTDUMP);
}

static void fork_child(void)
{
    /* Static data first: until it is private, every write here (the heap's
     * own state included) would land in the parent node. */
    for (int s = 0; s < shared.nseg; s++)
        if (etc_smp_privatize(shared.segs[s].lo, shared.segs[s].len) != 0)
            abort();
    etc_smp_heap_detach_child();
}

void etc_smp_share_attach(int me)
{
    if (!shared.n)
        return;
    int ok = shared.nseg > 0;
    for (int s = 0; s < shared.nseg; s++) {
        if (move_over(shared.window[me][s], shared.segs[s].lo, shared.segs[s].len) != 0) {
            ok = 0; /* as before: this node's globals stay private */
            break;
        }
        madvise(shared.segs[s].lo, shared.segs[s].len, MADV_DODUMP); /* its own globals */
    }
    if (shared.heap)
        etc_smp_heap_attach(shared.heap + (size_t)me * shared.slice, shared.slice);
    pthread_atfork(etc_smp_heap_fork_prepare, etc_smp_heap_fork_parent, fork_child);
    if (ok)
        atomic_store_explicit(&shared.ready[me], 1, memory_order_release);
}

void *etc_smp_share_find(int node, const void *addr, size_t n)
{
    uintptr_t a = (uintptr_t)addr;
    if (!shared.n || node < 0 || node >= shared.n || a + n < a)
        return NULL;
    if (shared.heap) {
        uintptr_t lo = (uintptr_t)shared.heap + (size_t)node * shared.slice;
        if (a >= lo && a + n <= lo + shared.slice)
            return (void *)addr;
    }
    for (int s = 0; s < shared.nseg; s++) {
        uintptr_t lo = (uintptr_t)shared.segs[s].lo;
        if (a >= lo && a + n <= lo + shared.segs[s].len) {
            if (!atomic_load_explicit(&shared.ready[node], memory_order_acquire))
                return NULL;
            return shared.window[node][s] + (a - lo);
        }
    }
    return NULL;
}
