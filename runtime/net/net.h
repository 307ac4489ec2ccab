/* net.h: the network layer interface (thesis 2.3.5), both halves of it: what
 * a layer provides the core, and the only core services a layer may use.
 *
 * A layer moves the core's active messages between the nodes of a run, and
 * starts and ends those nodes. Each layer is one folder, net/<name>/, named as
 * `etcc -target` spells it:
 *   seq/  one node, no messages;
 *   smp/  N processes on one machine, one shared-memory ring per ordered pair
 *         (with the shared heap and windows that make block moves one copy);
 *   tcp/  N processes on one or several hosts, started by etcrun's launcher;
 *   mpi/  N MPI ranks (mpirun, mpiexec, srun), messages by MPI_Isend.
 * net/common/ holds what message-passing layers share: frames and coalescing
 * buffers (wire.h), fragmentation and reassembly of big messages (frag.h),
 * time-gated polling at thread boundaries (gate.h).
 *
 * Adding a layer: a folder net/<name>/ whose .c files define every function
 * below and ETC_NET_LAYER("<name>") once; optionally net/<name>/layer.mk
 * (LAYER_CC, LAYER_CFLAGS, LAYER_MISSING: see runtime/Makefile), and one row
 * in etcpre/toolchain.py TARGETS (how etcrun starts it, link flags, node
 * limits). The runtime Makefile finds the folder; the suite runs every test
 * that loops over targets on it, the conformance test of this interface
 * (tests/runtime/conform_net.c) first.
 *
 * A layer includes only this header, etc.h and net/common/ headers -- never a
 * core/ header: the core's private state is not the layer's business. The
 * rules below are named in docs/protocols.md (N1 ...), which also describes
 * each layer's own protocol.
 */
#ifndef ETC_NET_H
#define ETC_NET_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* ================================================= what a layer provides
 *
 * The core calls these on the node's own thread, never concurrently.
 *
 * Rules (docs/protocols.md):
 *   N1 order      between any two nodes, messages are delivered exactly once,
 *                 in the order they were sent;
 *   N2 no block   etc_net_send never blocks and never delivers: what does not
 *                 fit in the channel waits in the layer (so handlers may send
 *                 freely, and two nodes flooding each other cannot deadlock);
 *   N3 progress   output a layer holds moves on at every call below except
 *                 send (in particular at every boundary the core's inline
 *                 test lets through, see N6), so a node that only runs
 *                 threads still empties its queues;
 *   N4 any size   a body of any length arrives whole, in one etc_deliver
 *                 call (a layer fragments above its frame size);
 *   N5 delivery   etc_deliver is called only inside etc_net_poll,
 *                 etc_net_boundary and etc_net_wait (and may be during
 *                 finish); a handler may call send, put, flush,
 *                 read_remote, write_remote and max_message; a nested poll
 *                 returns 0;
 *   N6 boundary   see etc_net_boundary_word;
 *   N7 finish     etc_net_finish pushes out every queued message and output
 *                 line; what arrives after it started may be delivered or
 *                 dropped (termination detection guarantees none of it is
 *                 work);
 *   N8 abort      etc_net_abort ends every node of the run within seconds,
 *                 with a non-zero status and nothing left behind (no process,
 *                 no shared-memory name, no temporary file);
 *   N9 types      message types are 1 .. ETC_NET_TYPES - 1; a layer's own
 *                 frames use values the core never sends (>= ETC_NET_TYPES);
 *   N10 output    every node's output lines reach the run's stdout/stderr
 *                 whole, never split or mixed with another node's; where a
 *                 node's output is relayed (a forked or remote node), its
 *                 unterminated last line gets a newline; a write error on
 *                 the run's stdout/stderr (not a reader that went away) ends
 *                 the run with an error;
 *   N11 in place  a layer may receive the rest of a big message straight where
 *                 it belongs instead of into its own buffer (etc_deliver_place):
 *                 only for the next message of its channel, every earlier one
 *                 delivered, and its handler then runs through
 *                 etc_deliver_placed, inside the same calls as N5;
 *   N12 put       see etc_net_put;
 *   N13 extend    see etc_net_extend.
 */

/* The layer's name and the marker etcrun reads from the program (below). */
extern const char etc_net_name[];

/* Starts this node. On smp the calling process becomes the supervisor that
 * forks the nodes, relays their output and reports faults; it returns in each
 * node, never in the supervisor. `want` is the node count asked for (0: the
 * layer's default). Sets *node_id and *num_nodes. */
void etc_net_start(int want, int *node_id, int *num_nodes);

/* Sends a message whose body is a followed by b (either may be empty) to
 * another node (never to this one: the core handles local work itself). */
void etc_net_send(int dest, int type, const void *a, size_t alen, const void *b, size_t blen);

/* N13: appends n bytes at `more` to the body of the last message sent to
 * dest, if the layer still holds all of it (none of it sent on), it has this
 * type, its body begins with the 16 bytes of `key`, and the layer lets it grow
 * by n (tcp, mpi: to a body of at most ETC_WIRE_EXTEND_MAX bytes): returns 1,
 * and the message is delivered once, with the longer body (N1 holds: nothing
 * went to dest after it). Otherwise returns 0 and sends nothing; smp, which
 * hands each message on at once, and seq, which has no other node, always do.
 * A message that grew is counted once (W1). */
int etc_net_extend(int dest, int type, const uint64_t key[2], const void *more, size_t n);

/* Delivers every message that has arrived, through etc_deliver(); returns how
 * many. Called at thread boundaries, by POLL(), and while idle. */
int etc_net_poll(void);

/* Called at a thread boundary when the inline test (etc_net_boundary_word)
 * fails or the layer has none: a layer polls (smp: a few loads) or, where a
 * poll costs a system call (tcp), flushes coalesced output and polls when
 * enough time has passed (net/common/gate.h). */
void etc_net_boundary(void);

/* N6: what the core may test inline at a thread boundary, before it calls
 * etc_net_boundary(): while this word (written by senders) equals
 * etc_net_key, the call would do nothing. The layer keeps the key equal to the
 * word's value at its last poll, and to a value the word never takes while it
 * has output queued to push. NULL: no such test; always call. Valid after
 * etc_net_start(), for the life of the node. */
_Atomic uint64_t *etc_net_boundary_word(void);

/* Pushes out messages a layer holds back to coalesce them. */
void etc_net_flush(void);

/* Blocks until a message may have arrived, at most `seconds` (< 0: no limit). */
void etc_net_wait(double seconds);

/* Single-copy access to another node's memory where the layer allows it
 * (smp: a memcpy through the memory every node maps, else process_vm_readv/
 * writev). Return 0 on success, -1 if unsupported: the core sends messages. */
int etc_net_read_remote(int node, void *local_dst, const void *remote_src, size_t n);
int etc_net_write_remote(int node, void *remote_dst, const void *local_src, size_t n);

/* N12: a block move by rendezvous (mpi: P10), where the layer has one: writes the
 * n bytes at local `src` to `remote_dst` on node `dest`, then delivers the
 * message (type; a, alen) there once they are in place, in order with every
 * other message to dest (N1). Like send it never delivers and never blocks
 * (mpi waits at most about the time a copy of the bytes takes, P10), and
 * `src` may change as soon as it returns. Returns 0, or -1 where the
 * layer has no such path for these bytes (none at all, or too few for it to
 * pay): the core then sends the bytes as messages. */
int etc_net_put(int dest, void *remote_dst, const void *src, size_t n, int type, const void *a,
                size_t alen);

/* 1 when this node's host runs more of the run's nodes than they have CPUs
 * (an idle node then blocks almost at once instead of spinning on a CPU a busy
 * node needs). Valid after etc_net_start. Only the layer knows where the nodes
 * are: mpi ranks bound one to a core each see one CPU, yet share none. */
int etc_net_oversubscribed(void);

/* 1 when each of several nodes says what it was running as SIGINT, SIGTERM or
 * SIGHUP ends it (core/crash.c): where nothing can ask it (mpi: the MPI
 * launcher passes the signal on to the ranks, and etcrun gathers their lines);
 * 0 where a supervisor or launcher asks each node (smp, tcp: SIGURG, WHERE) and
 * says it once. */
int etc_net_nodes_say_interrupts(void);

/* The largest body the layer sends in one piece (its frame size less the
 * header); the core splits bulk data into pieces of at most this size. Bigger
 * messages still arrive whole (N4), at the cost of reassembly. */
size_t etc_net_max_message(void);

/* Ends this node after a normal run (N7). */
void etc_net_finish(void) __attribute__((noreturn));

/* Ends the whole run after a fatal error already printed on this node (N8). */
void etc_net_abort(void) __attribute__((noreturn));

/* This node has printed the report of a fatal signal and is about to die of it
 * (core/crash.c): the layer must not report it again. Async-signal-safe. */
void etc_net_fatal_signal(void);

/* SIGURG arrived on the node's own thread (core/crash.c's handler), possibly in
 * the middle of a long thread: a layer whose output waits for the node's next
 * call (tcp, T6) may move it on here, unless the node is inside the layer.
 * Async-signal-safe. */
void etc_net_urged(void);

/* Every layer names itself once with this: its name, and the marker by which
 * etcrun recognises a program, its target and its build. */
#ifdef ETC_PROF
#define ETC_MARKER_PROF "1"
#else
#define ETC_MARKER_PROF "0"
#endif
#ifdef ETC_CHECK
#define ETC_MARKER_CHECK "1"
#else
#define ETC_MARKER_CHECK "0"
#endif
#ifdef ETC_TRACE
#define ETC_MARKER_TRACE "1"
#else
#define ETC_MARKER_TRACE "0"
#endif
#define ETC_NET_LAYER(name)                                                               \
    const char etc_net_name[] = name;                                                     \
    __attribute__((used)) static const char etc_program_marker[] =                        \
        "@(#)etc-program target=" name " prof=" ETC_MARKER_PROF " check=" ETC_MARKER_CHECK \
        " trace=" ETC_MARKER_TRACE " abi=1"

/* ================================================= what the core offers layers
 *
 * These, etc_time() (etc.h: the clock, in seconds) and etc_rts (etc.h) are
 * the only core symbols a layer may use; the conformance test links each
 * layer against a stand-in core that defines nothing else. */

/* Runs the handler of one message (N5). `body` need not be aligned and is the
 * layer's again when the call returns. */
void etc_deliver(int src, int type, const void *body, size_t len);

/* N11: a layer that has the first `have` bytes of a message of `len` bytes
 * (`head`, unaligned) may ask where the rest belongs: the address for the body's
 * bytes from *at (<= have) on, or NULL (then it delivers the message whole, as
 * usual). The layer puts bytes [*at, len) there -- those of [*at, have) it
 * holds already, the others as they arrive -- and then calls
 * etc_deliver_placed(src, type, head, *at, len), keeping head's first *at bytes
 * until then. Worth asking only for big bodies (a block move's piece). */
void *etc_deliver_place(int src, int type, const void *head, size_t have, size_t len,
                        size_t *at);
void etc_deliver_placed(int src, int type, const void *head, size_t at, size_t len);

/* Message types are 1 .. ETC_NET_TYPES - 1 (N9): the core's handler table. */
#define ETC_NET_TYPES 48

/* The key of the inline boundary test (N6): the core's, written by the layer.
 * A global, so the core's loop reaches it without a register. */
extern uint64_t etc_net_key;

/* Fatal errors: `etc: error: node K: ...`, then etc_net_abort(). */
void etc_fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void etc_vfatal(const char *fmt, va_list ap) __attribute__((noreturn));
/* The same where there is no node yet (start-up, the smp supervisor):
 * `etc: error: ...` and exit status 2. */
void etc_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* A write error on the run's stdout (fd 1) or stderr (fd 2) with errno err (0:
 * unknown): `etc: error: node K: cannot write to standard output: ...` (N10). */
void etc_output_failed(int fd, int err) __attribute__((noreturn));
/* Flushes this process's stdout and stderr and reports a write error on either
 * (a reader that went away, EPIPE, is not one), for a layer whose node writes
 * straight to the run's streams. */
void etc_flush_output_checked(void);

/* What each of n nodes was running when the run was interrupted, as
 * "nodes 0-3 were in thread 1 of 'spin' (forever.tc:15); node 4 was idle", for a
 * supervisor that read etc_rts.running of each node (ETC_RUNNING_UNKNOWN: it
 * could not; ETC_RUNNING_BETWEEN: the node was between two threads). */
#define ETC_RUNNING_UNKNOWN ((void (*)(void *))(uintptr_t)1)
#define ETC_RUNNING_BETWEEN ((void (*)(void *))(uintptr_t)2)
void etc_describe_nodes(void (*const *ran)(void *), int n, char *buf, size_t cap);
/* The same for one node, without its number: "in thread 1 of 'spin' (forever.tc:15)",
 * "idle", "between two threads" (for a node that reports itself). */
void etc_describe_running(void (*ran)(void *), char *buf, size_t cap);

/* The CPUs this program may use: its affinity mask, capped by its cgroup's CPU
 * quota and SLURM_CPUS_PER_TASK (core/cpus.c). */
int etc_usable_cpus(void);

/* Allocation that never returns NULL (out of memory is a fatal error). */
void *etc_xmalloc(size_t n);
void *etc_xrealloc(void *p, size_t n);

/* Internal invariants, checked only in the debug build of the runtime
 * (`make runtime-debug`, ETC_RUNTIME=debug; -DETC_DEBUG) and compiled to
 * nothing otherwise: a failure is a bug in the runtime, reported as
 * `etc: error: node K: internal error: FILE:LINE: ...`. */
#ifdef ETC_DEBUG
#define ETC_ASSERT(cond) ((cond) ? (void)0 : etc_assert_fail(__FILE__, __LINE__, #cond))
#else
#define ETC_ASSERT(cond) ((void)0)
#endif
void etc_assert_fail(const char *file, int line, const char *what) __attribute__((noreturn));

#endif
