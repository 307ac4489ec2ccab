/* net.h: the network layer interface (thesis 2.3.5), the only thing the core
 * knows about the transport. One layer is linked into each program:
 *   seq.c  one node, no messages;
 *   smp.c  N processes on one machine, one shared-memory ring per ordered pair;
 *   tcp.c  N processes on one or several hosts, started by etcrun.
 *
 * Messages are active messages: a type (the core's handler table index) and a
 * body. Between any two nodes they arrive in the order they were sent, exactly
 * once; a layer never blocks a sender (a full channel spills into a local
 * overflow queue), so handlers may send freely.
 */
#ifndef ETC_NET_H
#define ETC_NET_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The layer's name, as `etcc -target` spells it. */
extern const char etc_net_name[];

/* Starts this node. On smp the calling process becomes the supervisor that
 * forks the nodes, relays their output and reports faults; it returns in each
 * node, never in the supervisor. `want` is the node count asked for (0: the
 * layer's default). Sets *node_id and *num_nodes. */
void etc_net_start(int want, int *node_id, int *num_nodes);

/* Sends a message whose body is a followed by b (either may be empty). */
void etc_net_send(int dest, int type, const void *a, size_t alen, const void *b, size_t blen);

/* Delivers every message that has arrived, through etc_deliver(); returns how
 * many. Called at thread boundaries, by POLL(), and while idle. */
int etc_net_poll(void);

/* Called at every thread boundary: a layer polls (smp: a few loads) or, where a
 * poll costs a system call (tcp), flushes coalesced output and polls when enough
 * time has passed. */
void etc_net_boundary(void);

/* What the core may test inline at a thread boundary, before it calls
 * etc_net_boundary(): while this word (written by senders) equals
 * etc_net_key, the call would do nothing. The layer keeps the key equal to the
 * word's value at its last poll, and to a value the word never takes while it
 * has output queued to push. NULL: no such test; always call. Valid after
 * etc_net_start(), for the life of the node. */
_Atomic uint64_t *etc_net_boundary_word(void);

/* The key of that test: the core's, written by the layer. A global, so the
 * core's loop reaches it without a register. */
extern uint64_t etc_net_key;

/* Pushes out messages a layer holds back to coalesce them (tcp). */
void etc_net_flush(void);

/* Blocks until a message may have arrived, at most `seconds` (< 0: no limit). */
void etc_net_wait(double seconds);

/* Single-copy access to another node's memory where the layer allows it
 * (smp: a memcpy through the memory every node maps, else process_vm_readv/
 * writev). Return 0 on success, -1 if unsupported: the core sends messages. */
int etc_net_read_remote(int node, void *local_dst, const void *remote_src, size_t n);
int etc_net_write_remote(int node, void *remote_dst, const void *local_src, size_t n);

/* The largest message body the layer sends in one piece; the core splits bulk
 * data into pieces of at most this size (layers also fragment bigger ones). */
size_t etc_net_max_message(void);

/* Ends this node after a normal run (all output flushed). */
void etc_net_finish(void) __attribute__((noreturn));

/* Ends the whole run after a fatal error already printed on this node. */
void etc_net_abort(void) __attribute__((noreturn));

/* This node has printed the report of a fatal signal and is about to die of it
 * (crash.c): the layer must not report it again. Async-signal-safe. */
void etc_net_fatal_signal(void);

/* Implemented by the core: runs the handler of one message. */
void etc_deliver(int src, int type, const void *body, size_t len);

#endif
