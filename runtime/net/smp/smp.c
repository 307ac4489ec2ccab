/* smp.c: the shared-memory network layer: N node processes on one machine.
 *
 * Nodes are processes forked from the program's own process, which stays
 * behind as the supervisor. Forking gives every node its own copy of the C
 * globals at the same address (distributed-memory semantics, exactly). The
 * supervisor reaps the nodes and
 * ends the run when one fails (a crash, exit() or abort() in user code, a
 * fatal runtime error) or on SIGINT/SIGTERM: every node is killed, nothing is
 * left behind (the shared memory is anonymous, so no /dev/shm entry exists).
 *
 * Messages travel through one single-producer single-consumer ring per
 * ordered pair of nodes in a MAP_SHARED region: no system call per message.
 * A full ring spills into a private overflow queue (a sender never blocks),
 * drained at the next poll, which keeps per-pair order. A busy node tests
 * one word at a thread boundary however many nodes there are: with two, the
 * head of the ring from the other; with more, its doorbell, a counter every
 * record written to it also bumps. Idle
 * nodes spin briefly and then sleep on a futex; a sender wakes a sleeping
 * receiver.
 * Block moves read or write the other node's memory once: a memcpy where it
 * lies in memory every node maps (its globals and its heap, smp_share.c), or
 * process_vm_readv/writev where the kernel allows it.
 *
 * docs/protocols.md describes the protocol (rules R1-R12); the code cites them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "etc.h"
#include "net/common/frag.h"
#include "net/net.h"
#include "net/smp/smp_mem.h"

ETC_NET_LAYER("smp");

#define SMP_MAX_NODES 1024
#define LINE 64

/* R2: a ring's two counters, each written by one side only. */
typedef struct {
    _Alignas(LINE) _Atomic uint64_t head; /* written by the producer */
    _Alignas(LINE) _Atomic uint64_t tail; /* written by the consumer */
} ring_ctl;

/* The start of the shared control region (R1). */
typedef struct {
    _Alignas(LINE) pthread_mutex_t out_lock; /* whole lines of output */
    _Atomic uint32_t started;                /* nodes past etc_net_start */
} run_hdr;

typedef struct {
    _Alignas(LINE) _Atomic uint64_t bell; /* bumped by every record written to us */
    _Atomic uint32_t futex;               /* bumped by a waker */
    _Atomic int32_t sleeping;
    _Atomic int32_t finished; /* ended normally */
    _Atomic int32_t reported; /* printed its own fatal error */
    _Atomic int32_t pid;
} node_ctl;

/* A record in a ring: header, body, padding to 8 bytes (R3). */
typedef struct {
    uint32_t len;
    uint16_t type;
    uint16_t flags;
} rec_hdr;

#define REC_PAD 0xFFFF /* skip to the start of the ring; flags are ETC_FRAG_* */

typedef struct ovf {
    struct ovf *next;
    int type, flags;
    size_t len;
    unsigned char body[];
} ovf;

typedef etc_piece piece;

/* This node's side of the layer. */
static struct {
    int me, n;
    size_t rbytes;     /* bytes of one ring */
    size_t max_record; /* largest body written in one record */
    run_hdr *hdr;
    node_ctl *ctl;     /* n entries */
    ring_ctl *rings;   /* n * n entries, [src * n + dest] */
    unsigned char *data;
    uint64_t *out_head, *out_tail; /* producer's view, per destination */
    uint64_t *in_tail;             /* consumer's view, per source */
    _Atomic uint64_t *watch;       /* the word that moves when a record comes:
                                      the other's ring head (2 nodes), else
                                      our doorbell (node_ctl.bell) ... */
    const uint64_t *watch_seen;    /* ... and its value at our last poll */
    uint64_t bell_seen;
    ovf **ovf_head, **ovf_tail;
    int ovf_pending;    /* some record waits in an overflow queue ... */
    size_t ovf_records; /* ... this many (R7) */
    etc_frag_in *frag; /* per source: a big message being reassembled */
    int polling;
    int direct; /* 1: process_vm_* works, 0: unknown, -1: not allowed */
} smp;

static size_t round8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

static ring_ctl *ring(int src, int dest)
{
    return &smp.rings[(size_t)src * (size_t)smp.n + (size_t)dest];
}

static unsigned char *ring_data(int src, int dest)
{
    return smp.data + ((size_t)src * (size_t)smp.n + (size_t)dest) * smp.rbytes;
}

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* The core's boundary test is one compare of the watched word with
 * etc_net_key (net.h N6, protocols.md R6): its value at our last poll, or,
 * while output waits in the overflow queue, a value the word never reaches.
 * Called wherever either changes. */
static void rekey(void)
{
    ETC_ASSERT(smp.ovf_pending == (smp.ovf_records != 0));
    etc_net_key = smp.ovf_pending ? UINT64_MAX : *smp.watch_seen;
}

/* ---------------------------------------------------------------- sending */

/* Copies the pieces of a body one after another to d. */
static void put_pieces(unsigned char *d, const piece *pc, int npc)
{
    for (int i = 0; i < npc; i++) {
        if (pc[i].n)
            memcpy(d, pc[i].p, pc[i].n);
        d += pc[i].n;
    }
}

static void wake(int dest)
{
    /* R8: pairs with the fence in etc_net_wait: either the sleeper sees our
     * record or we see it sleeping. */
    atomic_thread_fence(memory_order_seq_cst);
    node_ctl *c = &smp.ctl[dest];
    if (atomic_load_explicit(&c->sleeping, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&c->futex, 1, memory_order_relaxed);
        futex(&c->futex, FUTEX_WAKE, 1, NULL);
    }
}

static int ring_write(int dest, int type, int flags, const piece *pc, int npc, size_t len)
{
    size_t total = sizeof(rec_hdr) + round8(len);
    uint64_t head = smp.out_head[dest];
    size_t pos = (size_t)(head % smp.rbytes);
    size_t to_end = smp.rbytes - pos;
    size_t need = total + (to_end < total ? to_end : 0);
    ring_ctl *r = ring(smp.me, dest);
    ETC_ASSERT(len <= smp.max_record && total <= smp.rbytes / 2);
    ETC_ASSERT(head - smp.out_tail[dest] <= smp.rbytes);
    if (need > smp.rbytes - (head - smp.out_tail[dest])) {
        smp.out_tail[dest] = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (need > smp.rbytes - (head - smp.out_tail[dest]))
            return 0;
    }
    unsigned char *base = ring_data(smp.me, dest);
    if (to_end < total) {
        rec_hdr pad = {0, REC_PAD, 0};
        memcpy(base + pos, &pad, sizeof pad);
        head += to_end;
        pos = 0;
    }
    rec_hdr h = {(uint32_t)len, (uint16_t)type, (uint16_t)flags};
    memcpy(base + pos, &h, sizeof h);
    put_pieces(base + pos + sizeof h, pc, npc);
    head += total;
    ETC_ASSERT(pos + total <= smp.rbytes && head - smp.out_tail[dest] <= smp.rbytes);
    smp.out_head[dest] = head;
    atomic_store_explicit(&r->head, head, memory_order_release); /* R4 */
    /* R5: with more than one sender, one word for the receiver to watch; an
     * RMW, so that reading any value of it synchronizes with every write before
     * (a release sequence), and the receiver then sees their records. (With
     * two nodes the head is that word: it costs the sender nothing more.) */
    if (smp.n > 2)
        atomic_fetch_add_explicit(&smp.ctl[dest].bell, 1, memory_order_release);
    return 1;
}

/* Memory only this node touches (smp_mem.h). */
static void *private_alloc(size_t n)
{
    void *p = etc_smp_private_alloc(n);
    if (!p)
        etc_fatal("out of memory (asked for %zu bytes)", n);
    return p;
}

static void ovf_append(int dest, int type, int flags, const piece *pc, int npc, size_t len)
{
    ovf *o = private_alloc(sizeof *o + len);
    o->next = NULL;
    o->type = type;
    o->flags = flags;
    o->len = len;
    put_pieces(o->body, pc, npc);
    if (smp.ovf_tail[dest])
        smp.ovf_tail[dest]->next = o;
    else
        smp.ovf_head[dest] = o;
    smp.ovf_tail[dest] = o;
    smp.ovf_pending = 1;
    smp.ovf_records++;
    rekey();
}

/* Moves queued overflow into the rings (R7); returns 1 if some is still
 * queued. */
static int ovf_flush(void)
{
    if (!smp.ovf_pending)
        return 0;
    int left = 0;
    for (int d = 0; d < smp.n; d++) {
        int wrote = 0;
        if (smp.ovf_head[d] && atomic_load_explicit(&smp.ctl[d].finished, memory_order_relaxed)) {
            /* it has ended: only balancer chatter can still be queued for it */
            while (smp.ovf_head[d]) {
                ovf *o = smp.ovf_head[d];
                smp.ovf_head[d] = o->next;
                smp.ovf_records--;
                etc_smp_private_free(o);
            }
            smp.ovf_tail[d] = NULL;
        }
        while (smp.ovf_head[d]) {
            ovf *o = smp.ovf_head[d];
            piece p = {o->body, o->len};
            if (!ring_write(d, o->type, o->flags, &p, 1, o->len))
                break;
            wrote = 1;
            smp.ovf_head[d] = o->next;
            if (!smp.ovf_head[d])
                smp.ovf_tail[d] = NULL;
            ETC_ASSERT(smp.ovf_records > 0);
            smp.ovf_records--;
            etc_smp_private_free(o);
        }
        if (wrote)
            wake(d);
        ETC_ASSERT((smp.ovf_head[d] == NULL) == (smp.ovf_tail[d] == NULL));
        left |= smp.ovf_head[d] != NULL;
    }
    smp.ovf_pending = left;
    rekey();
    return left;
}

static void send_record(int dest, int type, int flags, const piece *pc, int npc, size_t len)
{
    if (smp.ovf_head[dest] && ovf_flush() && smp.ovf_head[dest]) { /* R7 */
        ovf_append(dest, type, flags, pc, npc, len); /* keep the order */
        return;
    }
    if (ring_write(dest, type, flags, pc, npc, len))
        wake(dest);
    else
        ovf_append(dest, type, flags, pc, npc, len);
}

static void send_fragment(void *ctx, int dest, int type, int flags, const piece *pc, int npc,
                          size_t len)
{
    (void)ctx;
    send_record(dest, type, flags, pc, npc, len);
}

void etc_net_send(int dest, int type, const void *a, size_t alen, const void *b, size_t blen)
{
    size_t len = alen + blen;
    if (len <= smp.max_record) {
        piece pc[2] = {{a, alen}, {b, blen}};
        send_record(dest, type, 0, pc, 2, len);
        return;
    }
    /* N4: pieces of a|b, in order in one ring (net/common/frag.h) */
    etc_frag_send(dest, type, a, alen, b, blen, smp.max_record, send_fragment, NULL);
}

/* N13: a record is the receiver's as soon as it is in the ring */
int etc_net_extend(int dest, int type, const uint64_t key[2], const void *more, size_t n)
{
    (void)dest;
    (void)type;
    (void)key;
    (void)more;
    (void)n;
    return 0;
}

void etc_net_flush(void)
{
    ovf_flush();
}

_Atomic uint64_t *etc_net_boundary_word(void)
{
    return smp.watch;
}

/* Whether a record was written to us since the last poll. */
static int anything_waiting(void)
{
    return atomic_load_explicit(smp.watch, memory_order_acquire) != *smp.watch_seen;
}

/* At a thread boundary: one load of the watched word; the full poll only when
 * something has arrived (the common case in fine-grain code is nothing). The
 * core makes the same test inline (etc_net_boundary_word) and calls this only
 * if it fails. */
void etc_net_boundary(void)
{
    if (smp.ovf_pending)
        ovf_flush();
    if (anything_waiting())
        etc_net_poll();
}

/* every node is a process forked here, within the program's own CPUs */
int etc_net_oversubscribed(void)
{
    return smp.n > etc_usable_cpus();
}

int etc_net_nodes_say_interrupts(void)
{
    return 0;
}

size_t etc_net_max_message(void)
{
    return smp.max_record;
}

/* ---------------------------------------------------------------- receiving */

/* Reassembly buffers are memory only this node touches. */
static const etc_frag_mem frag_mem = {etc_smp_private_alloc, etc_smp_private_free};

static void receive(int src, const rec_hdr *h, const unsigned char *body)
{
    if (!h->flags) {
        etc_deliver(src, h->type, body, h->len);
        return;
    }
    if (etc_frag_receive(&smp.frag[src], &frag_mem, src, h->type, h->flags, body, h->len) < 0)
        etc_fatal("corrupt fragmented message from node %d", src);
}

int etc_net_poll(void)
{
    if (smp.polling)
        return 0;
    smp.polling = 1;
    int count = 0;
    ovf_flush();
    /* R5: with more than two nodes every record is in its ring before it rings
     * the bell (ring_write), so a bell unchanged since the last poll means
     * nothing new, and a bell read here makes every record it counts visible
     * to the scan. Two nodes: no bell; the one ring is always looked at. */
    uint64_t bell = smp.n > 2 ? atomic_load_explicit(smp.watch, memory_order_acquire) : 0;
    int scan = smp.n == 2 || bell != smp.bell_seen;
    for (int i = 1; scan && i < smp.n; i++) {
        int src = (smp.me + i) % smp.n;
        ring_ctl *r = ring(src, smp.me);
        uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
        uint64_t t = smp.in_tail[src];
        if (t == h)
            continue;
        const unsigned char *base = ring_data(src, smp.me);
        ETC_ASSERT(h - t <= smp.rbytes);
        while (t != h) {
            size_t pos = (size_t)(t % smp.rbytes);
            rec_hdr hd;
            memcpy(&hd, base + pos, sizeof hd);
            if (hd.type == REC_PAD) {
                t += smp.rbytes - pos;
                continue;
            }
            ETC_ASSERT(hd.len <= smp.max_record && pos + sizeof hd + hd.len <= smp.rbytes);
            receive(src, &hd, base + pos + sizeof hd);
            t += sizeof hd + round8(hd.len);
            ETC_ASSERT(h - t <= smp.rbytes); /* never past the head */
            count++;
        }
        smp.in_tail[src] = t;
        atomic_store_explicit(&r->tail, t, memory_order_release);
    }
    if (smp.n > 2)
        smp.bell_seen = bell;
    rekey();
    smp.polling = 0;
    return count;
}

void etc_net_wait(double seconds)
{
    node_ctl *c = &smp.ctl[smp.me];
    if (smp.ovf_pending && (seconds < 0 || seconds > 100e-6))
        seconds = 100e-6; /* R7: our own queued output needs the receiver to drain */
    uint32_t v = atomic_load_explicit(&c->futex, memory_order_relaxed);
    atomic_store_explicit(&c->sleeping, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    if (!anything_waiting()) {
        struct timespec ts, *tsp = NULL;
        if (seconds >= 0) {
            ts.tv_sec = (time_t)seconds;
            ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
            tsp = &ts;
        }
        futex(&c->futex, FUTEX_WAIT, v, tsp);
    }
    atomic_store_explicit(&c->sleeping, 0, memory_order_relaxed);
}

/* ---------------------------------------------------------------- block moves */

/* R12: a memcpy through shared memory, else process_vm_*, else -1 (messages). */
static int direct(int node, void *local, const void *remote, size_t n, int write)
{
    if (smp.direct < 0)
        return -1;
    char *there = etc_smp_share_find(node, remote, n);
    if (there) {
        if (write)
            memcpy(there, local, n);
        else
            memcpy(local, there, n);
        return 0;
    }
    pid_t pid = atomic_load(&smp.ctl[node].pid);
    if (pid <= 0)
        return -1; /* not started yet (the supervisor is still forking): messages */
    size_t done = 0;
    while (done < n) {
        struct iovec l = {(char *)local + done, n - done};
        struct iovec r = {(char *)remote + done, n - done};
        ssize_t k = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                          : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EFAULT)
                etc_fatal("BLKMOV: %s %zu bytes at %p on node %d: not valid memory there",
                          write ? "writing" : "reading", n - done, (void *)((char *)remote + done),
                          node);
            if (done == 0 && (errno == EPERM || errno == ENOSYS)) {
                smp.direct = -1; /* not allowed here (containers, Yama): messages from now on */
                return -1;
            }
            if (done == 0)
                return -1; /* e.g. ESRCH: this once, by messages */
            etc_fatal("BLKMOV with node %d failed: %s", node, strerror(errno));
        }
        if (k == 0)
            etc_fatal("BLKMOV with node %d made no progress", node);
        done += (size_t)k;
    }
    smp.direct = 1;
    return 0;
}

int etc_net_read_remote(int node, void *local_dst, const void *remote_src, size_t n)
{
    return direct(node, local_dst, remote_src, n, 0);
}

int etc_net_write_remote(int node, void *remote_dst, const void *local_src, size_t n)
{
    return direct(node, (void *)local_src, remote_dst, n, 1);
}

int etc_net_put(int dest, void *remote_dst, const void *src, size_t n, int type, const void *a,
                size_t alen)
{
    (void)dest;
    (void)remote_dst;
    (void)src;
    (void)n;
    (void)type;
    (void)a;
    (void)alen;
    return -1; /* R12: single-copy moves, else messages */
}

/* ---------------------------------------------------------------- output
 *
 * R10 (net.h N10): a node's stdout and stderr are replaced by line-buffered streams whose
 * complete lines are written under one process-shared lock to the run's own
 * stdout/stderr: a line is never split or mixed with another node's, for any
 * length, and lines appear in the order they were written (so a line a node
 * prints before signalling another node comes before anything that node
 * prints after). A partial last line is written, with a newline, when the node
 * ends, so that it is not glued to another node's. A write error other than a
 * reader that went away (EPIPE) is remembered and reported when the node ends. */

typedef struct {
    int fd;
    char *buf;
    size_t len, cap;
} linebuf;

static linebuf out_lines[2];
static int out_errno[2]; /* the first write error on fd 1 and 2 */
static pthread_mutex_t *out_lock;
static int tag_output;

static void lock_output(void)
{
    if (out_lock && pthread_mutex_lock(out_lock) == EOWNERDEAD)
        pthread_mutex_consistent(out_lock); /* a node died writing; the run is ending */
}

static void unlock_output(void)
{
    if (out_lock)
        pthread_mutex_unlock(out_lock);
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EPIPE && !out_errno[fd - 1])
                out_errno[fd - 1] = errno;
            return; /* the output is lost; a reader that went away is no failure */
        }
        p += k;
        n -= (size_t)k;
    }
}

/* Writes buf[0..n) (whole lines, or the rest at the end) under the lock. */
static void emit(int fd, const char *p, size_t n)
{
    lock_output();
    if (!tag_output) {
        write_all(fd, p, n);
    } else {
        char tag[24];
        int t = snprintf(tag, sizeof tag, "[%d] ", smp.me);
        while (n) {
            const char *nl = memchr(p, '\n', n);
            size_t k = nl ? (size_t)(nl - p) + 1 : n;
            write_all(fd, tag, (size_t)t);
            write_all(fd, p, k);
            p += k;
            n -= k;
        }
    }
    unlock_output();
}

static ssize_t line_write(void *cookie, const char *data, size_t n)
{
    linebuf *b = cookie;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        char *nb = realloc(b->buf, cap);
        if (!nb)
            return -1;
        b->buf = nb;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, data, n);
    b->len += n;
    char *nl = b->len ? memrchr(b->buf, '\n', b->len) : NULL;
    if (nl) {
        size_t k = (size_t)(nl - b->buf) + 1;
        emit(b->fd, b->buf, k);
        memmove(b->buf, b->buf + k, b->len - k);
        b->len -= k;
    }
    return (ssize_t)n;
}

static void drain_output(void)
{
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < 2; i++) {
        if (out_lines[i].len) /* a partial line: whole lines were written already */
            line_write(&out_lines[i], "\n", 1);
    }
}

/* N10, at the normal end of a node. */
static void check_output(void)
{
    if (!smp.ctl) { /* one node: the program's own streams, not drained yet */
        etc_flush_output_checked();
        return;
    }
    drain_output();
    for (int i = 0; i < 2; i++)
        if (out_errno[i])
            etc_output_failed(i + 1, out_errno[i]);
}

static void setup_output(void)
{
    cookie_io_functions_t io = {.read = NULL, .write = line_write, .seek = NULL, .close = NULL};
    FILE *f[2];
    for (int i = 0; i < 2; i++) {
        out_lines[i].fd = i + 1;
        f[i] = fopencookie(&out_lines[i], "w", io);
        if (!f[i])
            etc_die("cannot set up the output of node %d", smp.me);
        setvbuf(f[i], NULL, _IOLBF, 1 << 16);
    }
    stdout = f[0];
    stderr = f[1];
    atexit(drain_output); /* also when user code calls exit() */
}

/* ---------------------------------------------------------------- the end of a node */

void etc_net_finish(void)
{
    /* Nothing may stay behind in our private overflow queue: the others are
     * still running and draining their rings until they see the end. */
    while (ovf_flush()) {
        etc_net_poll();
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    check_output();
    if (smp.ctl)
        atomic_store(&smp.ctl[smp.me].finished, 1);
    exit(0);
}

void etc_net_abort(void)
{
    drain_output();
    if (smp.ctl)
        atomic_store(&smp.ctl[smp.me].reported, 1);
    _exit(1);
}

void etc_net_fatal_signal(void)
{
    if (smp.ctl)
        atomic_store(&smp.ctl[smp.me].reported, 1);
}

/* a message is in the ring as soon as it is sent: nothing waits */
void etc_net_urged(void)
{
}

/* R9: every node waits until all are up, so that MAIN does not compute alone while
 * the supervisor is still forking the others (node 1 of two started 0.1-5.6 ms
 * after node 0, against a 45 ms fib(32): a new child on the supervisor's CPU
 * can hold off the next fork for a time slice). With a CPU each, the nodes wait
 * yielding: a futex wake would put the woken node on the waker's CPU, and it
 * took the CPU from the waker for up to 3 ms. With more nodes than CPUs they
 * block, leaving the CPUs to the forks, and the last one up wakes them all. */
static void start_barrier(void)
{
    _Atomic uint32_t *w = &smp.hdr->started;
    int block = etc_net_oversubscribed();
    uint32_t now = atomic_fetch_add(w, 1) + 1;
    if (now == (uint32_t)smp.n) {
        if (block)
            futex(w, FUTEX_WAKE, INT_MAX, NULL);
        return;
    }
    while ((now = atomic_load(w)) < (uint32_t)smp.n) {
        if (block)
            futex(w, FUTEX_WAIT, now, NULL);
        else
            sched_yield();
    }
}

/* ---------------------------------------------------------------- the supervisor */

static void describe_exit(int k, int status, char *msg, size_t cap)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char *what = sig == SIGSEGV ? "segmentation fault"
                           : sig == SIGBUS ? "bus error"
                           : sig == SIGFPE ? "arithmetic exception"
                           : sig == SIGABRT ? "aborted"
                           : sig == SIGILL ? "illegal instruction"
                           : sig == SIGKILL ? "killed"
                           : strsignal(sig);
        const char *abbrev = sigabbrev_np(sig);
        snprintf(msg, cap, "node %d: %s (SIG%s)", k, what, abbrev ? abbrev : "?");
    } else {
        snprintf(msg, cap,
                 "node %d: exited with status %d while the run was going on (a node "
                 "must not call exit(); MAIN ends with END_FUNCTION() or RETURN())",
                 k, WEXITSTATUS(status));
    }
}

static void kill_all(const pid_t *pids, int n)
{
    for (int k = 0; k < n; k++)
        if (pids[k] > 0)
            kill(pids[k], SIGKILL);
}

/* What each node was running, for the message of an interrupt: a thread that
 * never ends is named. Asked with SIGURG, a node writes it to etc_rts.running,
 * read from its memory a moment later (core/crash.c). */
static void note_running(const pid_t *pids, int n, char *buf, size_t cap)
{
    etc_thread *ran = calloc((size_t)n, sizeof *ran);
    buf[0] = 0;
    if (!ran)
        return;
    for (int k = 0; k < n; k++)
        if (pids[k] > 0)
            kill(pids[k], SIGURG);
    struct timespec answer = {0, 50 * 1000 * 1000};
    nanosleep(&answer, NULL);
    for (int k = 0; k < n; k++) {
        struct iovec here = {&ran[k], sizeof ran[k]}, there = {&etc_rts.running, sizeof ran[k]};
        if (pids[k] <= 0 || process_vm_readv(pids[k], &here, 1, &there, 1, 0) != sizeof ran[k])
            ran[k] = ETC_RUNNING_UNKNOWN;
    }
    etc_describe_nodes(ran, n, buf, cap);
    free(ran);
}

/* Waits for the nodes; the first failure or an interrupt ends them all (R11). */
static void __attribute__((noreturn)) supervise(pid_t *pids, const sigset_t *sigs)
{
    int n = smp.n, alive = n, failed = 0, interrupted = 0;
    char ran[1024] = "";
    while (alive > 0) {
        siginfo_t si;
        int sig = sigwaitinfo(sigs, &si);
        if (sig < 0)
            continue;
        if (sig != SIGCHLD) {
            if (!interrupted && !failed) {
                note_running(pids, n, ran, sizeof ran);
                kill_all(pids, n);
            }
            if (!interrupted)
                interrupted = sig;
            continue;
        }
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            int k = 0;
            while (k < n && pids[k] != pid)
                k++;
            if (k == n)
                continue;
            pids[k] = -1;
            alive--;
            int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
                     atomic_load(&smp.ctl[k].finished);
            if (ok || interrupted || failed)
                continue;
            failed = 1;
            kill_all(pids, n);
            if (!atomic_load(&smp.ctl[k].reported)) {
                char msg[512];
                describe_exit(k, status, msg, sizeof msg);
                lock_output();
                dprintf(2, "etc: error: %s\n", msg);
                unlock_output();
            }
        }
    }
    free(pids);
    if (interrupted) {
        const char *abbrev = sigabbrev_np(interrupted);
        dprintf(2, "etc: interrupted (SIG%s): stopped all %d node%s%s%s\n", abbrev ? abbrev : "?",
                n, n == 1 ? "" : "s", ran[0] ? "; " : "", ran);
        _exit(128 + interrupted);
    }
    _exit(failed ? 1 : 0);
}

void etc_net_start(int want, int *node_id, int *num_nodes)
{
    int n = want ? want : etc_usable_cpus();
    if (n > SMP_MAX_NODES)
        etc_die("the smp target runs at most %d nodes, not %d", SMP_MAX_NODES, n);
    smp.n = n;
    /* R1: rings of 256 KiB, smaller for many nodes so the region stays modest */
    size_t pairs = (size_t)n * (size_t)n;
    size_t rb = 256 * 1024;
    while (rb > 16 * 1024 && rb * pairs > ((size_t)1 << 30))
        rb /= 2;
    smp.rbytes = rb;
    smp.max_record = rb / 4 - sizeof(rec_hdr);
    const char *tag = getenv("ETC_TAG_OUTPUT");
    tag_output = tag && *tag && strcmp(tag, "0") != 0;
    if (n == 1 && !tag_output) {
        /* One node needs no supervisor, no fork and nothing shared: the program's
         * own process is node 0, as a debugger expects (docs/debugging.md). The
         * core reports its crash or interrupt itself. */
        *node_id = 0;
        *num_nodes = 1;
        return;
    }
    size_t ctl_bytes = (sizeof(run_hdr) + (size_t)n * sizeof(node_ctl) + 4095) & ~(size_t)4095;
    size_t ring_ctl_bytes = (pairs * sizeof(ring_ctl) + 4095) & ~(size_t)4095;
    size_t total = ctl_bytes + ring_ctl_bytes + pairs * rb;
    unsigned char *mem = mmap(NULL, total, PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED)
        etc_die("cannot map %zu MiB of shared memory for %d nodes: %s", total >> 20, n,
                strerror(errno));
    smp.hdr = (run_hdr *)mem;
    out_lock = &smp.hdr->out_lock;
    smp.ctl = (node_ctl *)(mem + sizeof(run_hdr));
    smp.rings = (ring_ctl *)(mem + ctl_bytes);
    smp.data = mem + ctl_bytes + ring_ctl_bytes;
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(out_lock, &ma);
    pthread_mutexattr_destroy(&ma);

    /* ETC_SMP_DIRECT=0: block moves as messages, as where process_vm_* is denied;
     * ETC_SMP_SHARED=0: nothing shared, block moves by process_vm_* */
    const char *direct_env = getenv("ETC_SMP_DIRECT");
    if (direct_env && strcmp(direct_env, "0") == 0)
        smp.direct = -1;
    const char *shared_env = getenv("ETC_SMP_SHARED");
    int share = smp.direct >= 0 && !(shared_env && strcmp(shared_env, "0") == 0);
    /* valgrind tracks only glibc's malloc: under it, keep the heap glibc's */
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload"))
        share = 0;
    etc_smp_share_reserve(n, share);
    fflush(stdout);
    fflush(stderr);

    /* The supervisor takes these signals synchronously; nodes get the old mask. */
    sigset_t sigs, old;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGCHLD);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    sigprocmask(SIG_BLOCK, &sigs, &old);

    pid_t *pids = etc_xmalloc((size_t)n * sizeof *pids);
    pid_t self = getpid();
    for (int k = 0; k < n; k++) {
        pid_t pid = fork();
        if (pid < 0) {
            kill_all(pids, k);
            etc_die("cannot start node %d: %s", k, strerror(errno));
        }
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != self)
                _exit(1); /* the supervisor is already gone */
            etc_smp_share_attach(k);
            prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* for process_vm_* */
            /* Ctrl-C, a hang-up or SIGTERM to the process group: the supervisor
             * names what each node was running, then stops them all */
            signal(SIGINT, SIG_IGN);
            signal(SIGTERM, SIG_IGN);
            signal(SIGHUP, SIG_IGN);
            sigprocmask(SIG_SETMASK, &old, NULL);
            if (k != 0) {
                int null = open("/dev/null", O_RDONLY);
                if (null >= 0) {
                    dup2(null, 0);
                    close(null);
                }
            }
            free(pids);
            smp.me = k;
            atomic_store(&smp.ctl[k].pid, (int32_t)getpid());
            smp.out_head = calloc((size_t)n, sizeof *smp.out_head);
            smp.out_tail = calloc((size_t)n, sizeof *smp.out_tail);
            smp.in_tail = calloc((size_t)n, sizeof *smp.in_tail);
            smp.ovf_head = calloc((size_t)n, sizeof *smp.ovf_head);
            smp.ovf_tail = calloc((size_t)n, sizeof *smp.ovf_tail);
            smp.frag = calloc((size_t)n, sizeof *smp.frag);
            if (!smp.out_head || !smp.out_tail || !smp.in_tail || !smp.ovf_head || !smp.ovf_tail ||
                !smp.frag)
                etc_die("out of memory");
            if (n == 2) {
                smp.watch = &ring(1 - k, k)->head;
                smp.watch_seen = &smp.in_tail[1 - k];
            } else {
                smp.watch = &smp.ctl[k].bell;
                smp.watch_seen = &smp.bell_seen;
            }
            rekey();
            setup_output();
            start_barrier();
            *node_id = k;
            *num_nodes = n;
            return;
        }
        pids[k] = pid;
        atomic_store(&smp.ctl[k].pid, (int32_t)pid); /* before the node itself does */
    }
    supervise(pids, &sigs);
}
