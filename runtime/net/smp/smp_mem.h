/* smp_mem.h: node memory that every smp node can read and write directly.
 *
 * smp_share.c maps, before the nodes are forked, one shared window per node
 * for the program's static data (each node then moves its window over its own
 * .data/.bss, so its globals stay its own at the same address) and one shared
 * heap slice per node, at the same address in every process. smp_heap.c is the
 * allocator of a node's slice: malloc() and the rest of the family, overriding
 * glibc's in smp programs, allocate there once the node has started. A block
 * move whose remote end lies in such memory is then one memcpy.
 */
#ifndef ETC_SMP_MEM_H
#define ETC_SMP_MEM_H

#include <stddef.h>

/* The shared heap is an allocator of its own, which AddressSanitizer's (it
 * must see every block) rules out: sanitizer builds keep everything private
 * and leave malloc to glibc. */
#if defined(__SANITIZE_ADDRESS__)
#define ETC_SMP_SHARE_BUILD 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ETC_SMP_SHARE_BUILD 0
#endif
#endif
#ifndef ETC_SMP_SHARE_BUILD
#define ETC_SMP_SHARE_BUILD 1
#endif

/* ------------------------------------------------ smp_heap.c: the allocator */

/* Makes [lo, lo + len) this process's heap slice: later allocations come from
 * it (len 0: none; glibc's malloc serves everything, as before the fork). */
void etc_smp_heap_attach(void *lo, size_t len);

/* Memory only this process touches (the layer's overflow queues and message
 * reassembly): glibc's, not the slice's, whose shared pages cost more to
 * fault in. NULL when there is none. */
void *etc_smp_private_alloc(size_t n);
void etc_smp_private_free(void *p);

/* fork() inside a node, around it: the parent's heap is locked across the
 * fork; the child (its static data already private) keeps a private copy of
 * the slice's used part and allocates from glibc from then on. */
void etc_smp_heap_fork_prepare(void);
void etc_smp_heap_fork_parent(void);
void etc_smp_heap_detach_child(void);

/* --------------------------------------- smp_share.c: the shared windows */

/* In the supervisor, before the fork: maps the windows and slices for n nodes
 * (or nothing, when `enabled` is 0 or the memory cannot be had). */
void etc_smp_share_reserve(int n, int enabled);

/* In node `me`, first thing after the fork: moves its windows into place. */
void etc_smp_share_attach(int me);

/* Where this process can reach [addr, addr + n) of node `node` with plain
 * loads and stores, or NULL (not shared memory, or the node is not ready). */
void *etc_smp_share_find(int node, const void *addr, size_t n);

/* Copies the nonzero pages of [from, from + len) to `to` (zero already); both
 * page aligned. Used to fill a window and to take a private copy. */
void etc_smp_copy_pages(void *to, const void *from, size_t len);

/* Replaces [addr, addr + len) (page aligned) by a private copy of itself. */
int etc_smp_privatize(void *addr, size_t len);

#endif
