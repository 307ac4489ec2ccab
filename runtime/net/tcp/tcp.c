/* tcp.c: the TCP network layer: nodes are processes on one or several hosts,
 * started by etcrun's launcher (etcpre/launch/tcp.py), fully connected by TCP.
 *
 * Start-up (thesis B.1, done with a launcher instead of a parallel job system):
 * the launcher starts each node with ETC_TCP_CONTROL (its address), ETC_TCP_NODE
 * and ETC_NODES, and writes the run's random secret as the first line of the
 * node's standard input. The node listens on the interface that reaches the
 * launcher only, says HELLO (with the secret, its address and two addresses of
 * the executable, which must agree on every node), receives the table of
 * addresses, connects to the nodes below it and accepts the ones above it.
 * Every connection must present the secret in its handshake; one that does not
 * is closed and logged. After READY/GO the program runs.
 *
 * Wire format (version 3, docs/protocols.md T1-T4, T11): a connection starts with a
 * 40-byte handshake (magic "ETCN", version, node, secret); then frames of
 * [u32 length][u16 type][u16 flags] and a body (net/common/wire.h); messages
 * above 256 KiB travel as fragments (net/common/frag.h); a block move is one
 * frame and its bytes, received where they belong (T11). Small messages to one
 * destination are coalesced in a buffer and written at thread boundaries, when
 * idle, or when 64 KiB are waiting; sockets are non-blocking with TCP_NODELAY,
 * so two nodes sending big block moves to each other at once both keep
 * reading: no deadlock. A frame that is oversized, truncated, of an unknown
 * type or a fragment out of sequence ends the run with
 * `etc: error: node K: bad frame from node J (address)`.
 *
 * A peer that disappears (EOF or reset without a goodbye frame) makes this node
 * tell the launcher, which reports `etc: error: lost node K` and stops the run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "net/common/frag.h"
#include "net/common/gate.h"
#include "net/common/wire.h"
#include "etc.h"
#include "net/net.h"

ETC_NET_LAYER("tcp");

/* etcpre/launch/tcp.py says the same (tests/e2e/test_tcp.py keeps them equal) */
#define WIRE_VERSION 3
#define HS_MAGIC 0x4E435445u /* "ETCN" */
#define SECRET_BYTES 32
#define MAX_MESSAGE (256u << 10) /* the largest frame body; bigger messages are fragmented */
#define FLUSH_AT (64u << 10)     /* write a peer's buffer once this much waits */
#define DIRECT_AT (16u << 10)    /* T5: bodies this big are written from where they are */
#define READ_CHUNK (32u << 10)   /* T6: what a poll reads of a peer at once (or a frame's rest) */
#define PLACE_HEAD 64             /* N11: the most of a message's head a peer keeps */
#define NET_BYE 0xFFFFu          /* T4: "I am done": the EOF that follows is no loss */
#define NET_PUT 0xFFFEu          /* T11: a block's header; its bytes follow the frame */
#define PLACE_SPIN 1e-3          /* T11: an idle node receiving a block spins while it comes */
#define PUT_CHUNK (512u << 10)   /* T11: what one sendmsg writes of a block at most */
#define POLL_INTERVAL 20e-6      /* F4: at thread boundaries, poll at most this often */
#define NUDGE_LOOK 10e-3         /* T6: how often the watcher looks for output a long thread holds */
#define NUDGE_LOOK_IDLE 0.2      /* ... and while the node sleeps */
#define STRANGER_SECONDS 2.0     /* T8: an unidentified connection's deadline after start-up */
#define HANDSHAKE_SECONDS 5.0    /* T2: during start-up (a loaded host may be slow to send) */
#define MAX_STRANGERS 256        /* unidentified connections held at once; then the oldest go */
#define LOG_BURST 5              /* T8: closed connections logged one by one per window */
#define LOG_WINDOW 10.0          /* seconds; the rest of a window's are counted in one line */

typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t node;
    unsigned char secret[SECRET_BYTES];
} handshake;

/* T11: the body of a NET_PUT frame: where the n bytes that follow the frame
 * go, and the type of the message (the rest of the body) delivered once they
 * are there. */
typedef struct {
    uint64_t dst, n;
    uint16_t type, pad[3];
} put_hdr;

typedef struct {
    int fd;
    int bye;    /* it said goodbye: its EOF is expected, sends to it are dropped */
    int closed; /* EOF seen */
    int full;   /* its socket took less than offered: no send until POLLOUT or retry_at */
    size_t retry_at; /* ... or until this much waits for it (T5) */
    etc_wire_buf in;
    etc_frag_in frag;
    /* N11: a big message whose rest is being received where the core said, or
     * T11: a block being received where its header said */
    unsigned char *place; /* where its next bytes go (NULL: none is) */
    size_t place_left;    /* bytes still to come */
    size_t place_len, place_at;
    int place_type;
    int place_put;  /* T11: a block; then its message is place_head's first place_at bytes */
    int place_drop; /* T11 while finishing (N7): its bytes are read and dropped */
    int head_next; /* the frame after it may be the next piece: read its head alone */
    unsigned char place_head[PLACE_HEAD]; /* its first place_at bytes */
    char addr[80];
} peer;

typedef struct {
    int fd;
    double deadline; /* closed if its handshake is not complete by then */
    size_t have;
    unsigned char buf[sizeof(handshake)];
    char addr[80];
} stranger;

/* This node's side of the layer. */
static struct {
    int me, n;
    peer *peers;
    int ctl;      /* connection to the launcher */
    int listener; /* after start-up, the watcher's: it closes and logs strangers */
    stranger *strangers; /* accepted, handshake not yet complete (T2, T8) */
    int nstrangers;
    struct pollfd *pfds;
    int pfds_cap;
    unsigned char secret[SECRET_BYTES];
    etc_coalesce out; /* per peer: frames not yet written */
    _Atomic int finishing; /* also read by the launcher-watching thread */
    pthread_t main_thread; /* the node's own: the watcher asks it where it is (L7) */
    volatile sig_atomic_t in_layer; /* the node's own thread is in here (T6's nudge) */
    _Atomic int waiting;            /* ... and asleep in etc_net_wait, for the watcher */
    _Atomic unsigned long flushes;  /* flush_all calls, for the watcher (T6) */
    int polling;
    etc_gate gate;    /* polling at thread boundaries */
    double place_progress_at; /* T11: when bytes of a block last came */
} tcp;

/* ---------------------------------------------------------------- small helpers */

static void addr_text(const struct sockaddr_storage *sa, char *out, size_t cap)
{
    char host[64] = "?";
    int port = 0;
    if (sa->ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
        port = ntohs(s->sin_port);
    } else if (sa->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
        port = ntohs(s->sin6_port);
    }
    snprintf(out, cap, "%s:%d", host, port);
}

static void set_nonblocking(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void keepalive(int fd, int idle, int intvl, int cnt)
{
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

/* T5: keepalive finds a host that vanished without a word (a crashed or killed
 * process is seen at once: its kernel closes its connections). Only the
 * connection to the launcher has it, on both ends: a host that dies loses it,
 * and the launcher stops the run. Probes on the n(n-1)/2 peer connections
 * (32,640 with 256 nodes) would only be packets that a loaded loopback drops,
 * and the probes are patient (about 30 s) so that a node waiting for GO while
 * hundreds start never gives up on a live launcher. */
static void tune_ctl(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    keepalive(fd, 10, 5, 4);
}

static void tune_peer(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static int write_exact(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pf = {fd, POLLOUT, 0};
            poll(&pf, 1, 1000);
            continue;
        }
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static void ctl_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ctl_send(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (tcp.ctl >= 0 && k > 0)
        write_exact(tcp.ctl, line, (size_t)k < sizeof line ? (size_t)k : sizeof line - 1);
}

/* Reads one line from the launcher (start-up; blocking). */
static int ctl_line(char *out, size_t cap)
{
    size_t k = 0;
    for (;;) {
        char c;
        ssize_t r = read(tcp.ctl, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = 0;
            return -1; /* errno says why (0: the launcher closed it) */
        }
        if (c == '\n')
            break;
        if (k + 1 >= cap)
            return -2; /* longer than any line the launcher sends */
        out[k++] = c;
    }
    out[k] = 0;
    return 0;
}

static void __attribute__((noreturn)) quit_quietly(int status)
{
    fflush(stdout);
    fflush(stderr);
    _exit(status);
}

/* A peer vanished: the launcher reports it and stops the run (T7). */
static void lost(int k)
{
    if (tcp.finishing) {
        tcp.peers[k].closed = 1;
        return;
    }
    ctl_send("LOST %d\n", k);
    quit_quietly(1);
}

/* This node's handshake (T2), and whether one received carries the run's
 * secret. */
static handshake own_handshake(void)
{
    handshake h = {HS_MAGIC, WIRE_VERSION, (uint16_t)tcp.me, {0}};
    memcpy(h.secret, tcp.secret, SECRET_BYTES);
    return h;
}

static int has_secret(const handshake *h)
{
    return h->magic == HS_MAGIC && memcmp(h->secret, tcp.secret, SECRET_BYTES) == 0;
}

/* T8: closed connections are logged, at most LOG_BURST lines per LOG_WINDOW
 * seconds and one line counting the rest: a flood of strangers must not fill
 * stderr (a launcher that is slow to read it would stall this node). The
 * watcher thread and the main thread (start-up, finish) both log. */
static struct {
    pthread_mutex_t lock;
    double window_end;
    int logged;     /* lines in this window */
    long untold;    /* closed in this window, not logged one by one */
    char last[200]; /* the last of those */
} closed_log = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, ""};

/* The count of the window's unlogged closings, once the window is over (or
 * `now` is +inf: the node ends). Called with the lock held. */
static void closed_log_summary(double now)
{
    if (now < closed_log.window_end)
        return;
    if (closed_log.untold)
        fprintf(stderr, "etc: warning: node %d: closed %ld more connection%s (not logged one by "
                        "one); the last %s\n", tcp.me, closed_log.untold,
                closed_log.untold == 1 ? "" : "s", closed_log.last);
    closed_log.logged = 0;
    closed_log.untold = 0;
}

static void log_closed(const char *from, const char *why)
{
    pthread_mutex_lock(&closed_log.lock);
    double now = etc_time();
    closed_log_summary(now);
    if (closed_log.logged == 0)
        closed_log.window_end = now + LOG_WINDOW;
    if (closed_log.logged < LOG_BURST) {
        closed_log.logged++;
        fprintf(stderr, "etc: warning: node %d: closed a connection from %s: %s\n", tcp.me, from,
                why);
    } else {
        closed_log.untold++;
        snprintf(closed_log.last, sizeof closed_log.last, "from %s: %s", from, why);
    }
    pthread_mutex_unlock(&closed_log.lock);
}

/* Seconds until a summary is due (-1: none is). */
static double closed_log_due(double now)
{
    pthread_mutex_lock(&closed_log.lock);
    double left = -1.0;
    if (closed_log.untold)
        left = closed_log.window_end > now ? closed_log.window_end - now : 0.0;
    pthread_mutex_unlock(&closed_log.lock);
    return left;
}

static void closed_log_flush(int force)
{
    pthread_mutex_lock(&closed_log.lock);
    closed_log_summary(force ? 1e300 : etc_time());
    pthread_mutex_unlock(&closed_log.lock);
}

static void __attribute__((noreturn)) bad_frame(int k, const char *why)
{
    etc_fatal("bad frame from node %d (%s): %s", k, tcp.peers[k].addr, why);
}

/* ---------------------------------------------------------------- writing */

/* The coalescing buffers' writer: what the socket takes now. */
static size_t write_peer(void *ctx, int k, const unsigned char *p, size_t n)
{
    (void)ctx;
    peer *pr = &tcp.peers[k];
    if (k == tcp.me || pr->fd < 0)
        return n; /* closed after its goodbye: nobody to write to */
    /* T5: a full socket is not offered every new message (a send() each, all
     * failing, while a thread pipelines thousands): only once a poll saw room,
     * or another FLUSH_AT bytes wait (so that a long thread still moves on) */
    if (pr->full && n < pr->retry_at)
        return 0;
    for (;;) {
        ssize_t w = send(pr->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w >= 0 || errno == EAGAIN || errno == EWOULDBLOCK) {
            size_t took = w > 0 ? (size_t)w : 0;
            pr->full = took < n;
            pr->retry_at = n - took + FLUSH_AT;
            return took;
        }
        if (errno == EINTR)
            continue;
        if (!pr->bye && !tcp.finishing)
            lost(k);
        return n; /* it finished: what it has not read is of no use to it */
    }
}

static void flush_all(void)
{
    etc_coalesce_flush_all(&tcp.out);
    atomic_store_explicit(&tcp.flushes, tcp.flushes + 1, memory_order_relaxed);
}

/* The node's own thread is inside the layer, its buffers maybe half-written:
 * a nudge (etc_net_urged) must not flush then. Entries nest (a handler run by
 * a poll sends). The fences keep the compiler from moving buffer work past the
 * flag; the signal handler runs on this same thread, so no CPU fence is needed. */
#define LAYER_ENTER()                                                                   \
    sig_atomic_t layer_was = tcp.in_layer;                                              \
    tcp.in_layer = 1;                                                                   \
    atomic_signal_fence(memory_order_seq_cst)
#define LAYER_LEAVE()                                                                   \
    atomic_signal_fence(memory_order_seq_cst);                                          \
    tcp.in_layer = layer_was

/* T6: output a thread sent within the poll interval of the last flush waits for
 * a boundary; a long thread's would wait for its end (a signal sent, then an hour
 * of computing, and the receiver idle for that hour). The watcher thread, seeing
 * output pending across two of its looks (10-20 ms) with no flush between them,
 * sends the node's own thread SIGURG; core/crash.c's handler calls this. */
void etc_net_urged(void)
{
    if (tcp.n > 1 && tcp.peers && !tcp.in_layer && !tcp.finishing)
        flush_all();
}

static void nudge_if_stuck(void)
{
    static unsigned long seen = ~0UL; /* the watcher's own */
    unsigned long now = atomic_load_explicit(&tcp.flushes, memory_order_relaxed);
    if (__atomic_load_n(&tcp.out.pending, __ATOMIC_RELAXED) && now == seen && !tcp.finishing)
        pthread_kill(tcp.main_thread, SIGURG);
    seen = now;
}

/* ---------------------------------------------------------------- sending */

/* The bytes of iov past its first `done`, queued for dest as bytes of the
 * stream (after what waits already). */
static void keep_rest(int dest, const struct iovec *iov, int niov, size_t done)
{
    etc_wire_buf *w = &tcp.out.out[dest];
    size_t rest = 0;
    for (int i = 0; i < niov; i++)
        rest += iov[i].iov_len;
    etc_wire_reserve(w, rest - done);
    for (int i = 0; i < niov; i++) {
        size_t skip = done < iov[i].iov_len ? done : iov[i].iov_len;
        done -= skip;
        memcpy(w->buf + w->len, (const char *)iov[i].iov_base + skip, iov[i].iov_len - skip);
        w->len += iov[i].iov_len - skip;
    }
    tcp.peers[dest].retry_at = etc_wire_pending(w) + FLUSH_AT;
    etc_coalesce_mark(&tcp.out, dest);
}

/* T5: big bytes (a block, a big message) are written from where they are when
 * nothing waits before them for that peer: copying them into the buffer first
 * cost a quarter of a block move's time. What the socket does not take now is
 * copied, as any message is. Returns 0 when it cannot (nothing is written). */
static __attribute__((noinline)) int write_direct(int dest, struct iovec *iov, int niov)
{
    peer *p = &tcp.peers[dest];
    etc_wire_buf *w = &tcp.out.out[dest];
    if (dest == tcp.me || p->fd < 0)
        return 0;
    if (etc_wire_pending(w))
        etc_coalesce_flush(&tcp.out, dest); /* N1: what was sent before goes first */
    if (etc_wire_pending(w) || p->full)
        return 0;
    size_t total = 0;
    for (int i = 0; i < niov; i++)
        total += iov[i].iov_len;
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
    ssize_t k;
    do
        k = sendmsg(p->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (k < 0 && errno == EINTR);
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        if (!p->bye && !tcp.finishing)
            lost(dest);
        return 1; /* it finished: what it has not read is of no use to it */
    }
    size_t done = k > 0 ? (size_t)k : 0;
    if (done == total)
        return 1;
    p->full = 1;
    keep_rest(dest, iov, niov, done);
    return 1;
}

/* A big message written from where it is (T5); 0: it is to be coalesced. */
static int send_direct(int dest, int type, const void *a, size_t alen, const void *b,
                       size_t blen)
{
    etc_wire_hdr h = {(uint32_t)(alen + blen), (uint16_t)type, 0};
    struct iovec iov[3] = {{&h, sizeof h}, {(void *)a, alen}, {(void *)b, blen}};
    return write_direct(dest, iov, 3);
}

void etc_net_send(int dest, int type, const void *a, size_t alen, const void *b, size_t blen)
{
    peer *p = &tcp.peers[dest];
    if (p->bye || p->closed)
        return; /* it finished: only balancer chatter can still be addressed to it */
    LAYER_ENTER();
    size_t len = alen + blen;
    /* send_direct out of line: a small message (most) then costs no spills */
    if (!(len >= DIRECT_AT && len <= MAX_MESSAGE && send_direct(dest, type, a, alen, b, blen)))
        etc_coalesce_send(&tcp.out, dest, type, a, alen, b, blen);
    LAYER_LEAVE();
}

int etc_net_extend(int dest, int type, const uint64_t key[2], const void *more, size_t n)
{
    peer *p = &tcp.peers[dest];
    if (p->bye || p->closed)
        return 0; /* (then send drops it) */
    LAYER_ENTER();
    int done = etc_coalesce_extend(&tcp.out, dest, type, key, more, n);
    LAYER_LEAVE();
    return done;
}

void etc_net_flush(void)
{
    LAYER_ENTER();
    flush_all();
    LAYER_LEAVE();
}

/* the nodes' hosts are the launcher's business: count them all as here */
int etc_net_oversubscribed(void)
{
    return etc_rts.num_nodes > etc_usable_cpus();
}

int etc_net_nodes_say_interrupts(void)
{
    return 0;
}

size_t etc_net_max_message(void)
{
    return MAX_MESSAGE;
}

int etc_net_read_remote(int node, void *local_dst, const void *remote_src, size_t n)
{
    (void)node;
    (void)local_dst;
    (void)remote_src;
    (void)n;
    return -1; /* block moves travel as messages */
}

int etc_net_write_remote(int node, void *remote_dst, const void *local_src, size_t n)
{
    (void)node;
    (void)remote_dst;
    (void)local_src;
    (void)n;
    return -1;
}

/* T11: a block is one NET_PUT frame and its n bytes, written from where they
 * are, PUT_CHUNK a sendmsg: as pieces of 256 KiB, each a frame and a sendmsg of
 * its own, the receiver waited at every piece for the first 64 KiB of the next
 * to be copied in; in one sendmsg, a block of megabytes waited for the kernel's
 * forced pushes. A small block (coalesced with other messages), or one that
 * cannot be written now (output waits before it), goes as messages. */
int etc_net_put(int dest, void *remote_dst, const void *src, size_t n, int type, const void *a,
                size_t alen)
{
    peer *p = &tcp.peers[dest];
    if (n < DIRECT_AT || alen > PLACE_HEAD || type <= 0 || type >= (int)ETC_NET_TYPES)
        return -1;
    if (p->bye || p->closed)
        return 0; /* as etc_net_send */
    LAYER_ENTER();
    put_hdr ph = {(uint64_t)(uintptr_t)remote_dst, n, (uint16_t)type, {0, 0, 0}};
    etc_wire_hdr h = {(uint32_t)(sizeof ph + alen), (uint16_t)NET_PUT, 0};
    size_t first = n < PUT_CHUNK ? n : PUT_CHUNK;
    struct iovec iov[4] = {{&h, sizeof h}, {&ph, sizeof ph}, {(void *)a, alen},
                           {(void *)src, first}};
    int done = write_direct(dest, iov, 4);
    for (size_t off = first; done && off < n; off += PUT_CHUNK) {
        struct iovec more = {(char *)src + off, n - off < PUT_CHUNK ? n - off : PUT_CHUNK};
        if (!write_direct(dest, &more, 1)) { /* the socket is full: the rest waits */
            struct iovec rest = {(char *)src + off, n - off};
            keep_rest(dest, &rest, 1, 0);
            break;
        }
    }
    LAYER_LEAVE();
    return done ? 0 : -1;
}

/* ---------------------------------------------------------------- receiving */

/* Peer p's next `left` bytes go to `place` (N11, T11); the message's head (a
 * block's message, T11) waits in place_head until they are all there. */
static void start_place(peer *p, unsigned char *place, size_t left, size_t len,
                        const unsigned char *head, size_t at, int type, int put)
{
    memcpy(p->place_head, head, at);
    p->place = place;
    p->place_left = left;
    p->place_len = len;
    p->place_at = at;
    p->place_type = type;
    p->place_put = put;
    p->place_drop = put && tcp.finishing;
}

/* T11: a block's header arrived: its bytes go where it says (dropped while
 * finishing, N7), its message waits in place_head until they are all there. */
static void begin_put(int k, const unsigned char *body, size_t len)
{
    peer *p = &tcp.peers[k];
    put_hdr ph;
    /* (while finishing, fragments are skipped unassembled, N7) */
    if (len < sizeof ph || len - sizeof ph > PLACE_HEAD || (p->frag.buf && !tcp.finishing))
        bad_frame(k, "a malformed block header");
    memcpy(&ph, body, sizeof ph);
    if (ph.n == 0 || ph.n > SIZE_MAX / 2 || ph.dst == 0 || ph.type == 0 ||
        ph.type >= ETC_NET_TYPES)
        bad_frame(k, "a malformed block header");
    /* (dropped: place only marks a block begun; its bytes go to the input's room) */
    unsigned char *place = tcp.finishing ? p->place_head : (unsigned char *)(uintptr_t)ph.dst;
    start_place(p, place, (size_t)ph.n, len - sizeof ph, body + sizeof ph, len - sizeof ph,
                ph.type, 1);
    tcp.place_progress_at = etc_time();
}

static int placed(int k, ssize_t r);

/* Parses and delivers every complete frame in a peer's input. Nothing else
 * moves the input while this runs (handlers never poll, N5), so its cursor
 * stays in registers across the handlers' calls and is stored back once: the
 * loop runs once per message received. */
static int deliver_frames(int k)
{
    peer *p = &tcp.peers[k];
    const unsigned char *const buf = p->in.buf;
    const size_t len = p->in.len;
    size_t off = p->in.off;
    int count = 0;
    etc_wire_hdr h;
    while (len - off >= sizeof h) {
        memcpy(&h, buf + off, sizeof h);
        if (h.len > MAX_MESSAGE)
            bad_frame(k, "oversized");
        if (len - off - sizeof h < h.len)
            break; /* not all there yet */
        const unsigned char *body = buf + off + sizeof h;
        off += sizeof h + h.len;
        if (h.type - 1u < ETC_NET_TYPES - 1u && !h.flags && !p->frag.buf && !tcp.finishing) {
            etc_deliver(k, h.type, body, h.len); /* a whole message: most */
            count++;
            continue;
        }
        if (h.type == NET_BYE && h.len == 0) {
            p->bye = 1;
            continue;
        }
        if (h.type == NET_PUT && !h.flags) { /* T11: the block's bytes follow */
            begin_put(k, body, h.len);
            size_t at = len - off < p->place_left ? len - off : p->place_left;
            if (!p->place_drop)
                memcpy(p->place, buf + off, at);
            off += at;
            count += placed(k, (ssize_t)at);
            if (p->place)
                break; /* (all the input was taken) the rest is received in place */
            continue;
        }
        if (h.type == 0 || h.type >= ETC_NET_TYPES)
            bad_frame(k, "unknown type");
        if (tcp.finishing)
            continue; /* N7 */
        int got = etc_frag_receive(&p->frag, NULL, k, h.type, h.flags, body, h.len);
        if (got < 0)
            bad_frame(k, "a fragment out of sequence");
        count += got;
    }
    p->in.off = off;
    return count;
}

/* N11: the frame begun in peer k's input is big (a block move's piece): if the
 * core says where its body belongs, what has come of it goes there and the rest
 * will be received there, not into the input buffer and copied again. Every
 * earlier frame has been delivered (they are complete, this one is not). */
static int try_place(int k)
{
    peer *p = &tcp.peers[k];
    etc_wire_hdr h;
    size_t have = etc_wire_pending(&p->in);
    if (have <= sizeof h || tcp.finishing || p->frag.buf)
        return 0;
    memcpy(&h, p->in.buf + p->in.off, sizeof h);
    if (h.len < DIRECT_AT || h.len > MAX_MESSAGE || h.flags || h.type == 0 ||
        h.type >= ETC_NET_TYPES)
        return 0; /* small, fragmented or bad: the usual path (which reports it) */
    size_t got = have - sizeof h, at = 0;
    ETC_ASSERT(got < h.len); /* complete frames were delivered */
    const unsigned char *body = p->in.buf + p->in.off + sizeof h;
    unsigned char *place = etc_deliver_place(k, h.type, body, got, h.len, &at);
    if (!place || at > got || at > sizeof p->place_head)
        return 0;
    memcpy(place, body + at, got - at);
    start_place(p, place + (got - at), h.len - got, h.len, body, at, h.type, 0);
    etc_wire_consume(&p->in, have);
    return 1;
}

/* The bytes of a message received in place arrived (N11, T11): 1 if that
 * delivered it. */
static int placed(int k, ssize_t r)
{
    peer *p = &tcp.peers[k];
    if (!p->place_drop)
        p->place += r;
    p->place_left -= (size_t)r;
    if (p->place_left)
        return 0;
    p->place = NULL;
    p->head_next = 1;
    if (tcp.finishing || p->place_drop) /* N7, as deliver_frames */
        return 0;
    if (p->place_put)
        etc_deliver(k, p->place_type, p->place_head, p->place_at);
    else
        etc_deliver_placed(k, p->place_type, p->place_head, p->place_at, p->place_len);
    return 1;
}

static int read_peer(int k)
{
    peer *p = &tcp.peers[k];
    int count = 0;
    for (;;) {
        if (p->place || try_place(k)) {
            unsigned char *to = p->place;
            size_t want = p->place_left;
            if (p->place_drop) { /* into the (empty) input buffer's room, and forgotten */
                want = want < READ_CHUNK ? want : READ_CHUNK;
                etc_wire_reserve(&p->in, want);
                to = p->in.buf + p->in.len;
            }
            ssize_t r = recv(p->fd, to, want, MSG_DONTWAIT);
            if (r > 0) {
                tcp.place_progress_at = etc_time();
                int got = placed(k, r);
                if (p->place)
                    continue; /* the rest is coming: read on, as in a frame begun */
                count += got;
                break;
            }
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                break;
            if (!p->bye)
                lost(k);
            bad_frame(k, "truncated");
        }
        /* READ_CHUNK at a time, or the rest of the frame begun (one recv takes
         * what has come of a block move's piece): what a poll delivers is
         * about what a busy node runs before its next poll (F4), so
         * that a peer pipelining INVOKEs fills its socket, not our queues */
        size_t want = READ_CHUNK, have = etc_wire_pending(&p->in);
        if (p->head_next && !have) /* N11: then the next piece is placed whole */
            want = sizeof(etc_wire_hdr) + PLACE_HEAD;
        p->head_next = 0;
        if (have >= sizeof(etc_wire_hdr)) {
            etc_wire_hdr h;
            memcpy(&h, p->in.buf + p->in.off, sizeof h);
            if (h.len <= MAX_MESSAGE && sizeof h + h.len - have > want)
                want = sizeof h + h.len - have;
            /* N11: a big frame's head first, so that its rest may go in place */
            if (h.len >= DIRECT_AT && h.len <= MAX_MESSAGE && !h.flags &&
                have < sizeof h + PLACE_HEAD)
                want = sizeof h + PLACE_HEAD - have;
        }
        etc_wire_reserve(&p->in, want);
        size_t room = want;
        ssize_t r = recv(p->fd, p->in.buf + p->in.len, room, MSG_DONTWAIT);
        if (r > 0) {
            p->in.len += (size_t)r;
            count += deliver_frames(k);
            /* something delivered: the threads it enabled run before more is
             * read (the next poll is at most an interval away), so a sender
             * pipelining thousands of INVOKEs does not make this node queue
             * them all, each frame in fresh memory; drained (most likely)
             * with no frame begun: the next poll sees anything newer. In the
             * middle of a frame (a block move's piece) read on at once: the
             * rest is coming, and a recv is cheaper than a poll and a recv. */
            if (count || ((size_t)r < room && !etc_wire_pending(&p->in)))
                break;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        /* EOF or reset: without a goodbye the peer is gone (a half-sent frame is
         * the crash's consequence, not its cause); after one, a partial frame is */
        if (!p->bye)
            lost(k);
        if (etc_wire_pending(&p->in))
            bad_frame(k, "truncated");
        p->closed = 1;
        close(p->fd);
        p->fd = -1;
        break;
    }
    return count;
}

/* ---------------------------------------------------------------- strangers */

/* Every accepted connection is a stranger until its 40-byte handshake is
 * complete (T2, T8). Strangers are read without blocking, all at once, each
 * with its own deadline, so that silent connections (anyone on the host may
 * open them) never delay the real peers queued behind them. During start-up
 * the main thread owns them; after it, the watcher thread (with the listener). */

static void stranger_drop(int i)
{
    tcp.strangers[i] = tcp.strangers[--tcp.nstrangers];
}

static void stranger_close(int i, const char *why)
{
    log_closed(tcp.strangers[i].addr, why);
    close(tcp.strangers[i].fd);
    stranger_drop(i);
}

/* During start-up: a node above this one, not yet connected, with the secret
 * and our version, becomes a peer (answered with our handshake); NULL then,
 * otherwise why the connection is closed. */
static const char *take_peer(int fd, const handshake *h)
{
    if (!has_secret(h))
        return "it did not present the run's secret";
    if (h->version != WIRE_VERSION || h->node <= tcp.me || h->node >= tcp.n ||
        tcp.peers[h->node].fd >= 0)
        return "wrong version or node in its handshake";
    handshake r = own_handshake();
    if (send(fd, &r, sizeof r, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof r)
        return "it closed the connection during the handshake"; /* 40 bytes fit an empty buffer */
    tcp.peers[h->node].fd = fd;
    return NULL;
}

/* Reads what stranger i sent. `starting`: a complete handshake may make it a
 * peer; after start-up every node is connected, so none can. */
static void stranger_read(int i, int starting)
{
    stranger *s = &tcp.strangers[i];
    ssize_t r;
    do
        r = recv(s->fd, s->buf + s->have, sizeof s->buf - s->have, MSG_DONTWAIT);
    while (r < 0 && errno == EINTR);
    if (r > 0)
        s->have += (size_t)r;
    if (s->have == sizeof s->buf) {
        handshake h;
        memcpy(&h, s->buf, sizeof h);
        const char *why = starting ? take_peer(s->fd, &h)
                          : has_secret(&h) ? "an unexpected second connection"
                                           : "it did not present the run's secret";
        if (why)
            stranger_close(i, why);
        else
            stranger_drop(i); /* now a peer's */
        return;
    }
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
        stranger_close(i, "it did not present the run's secret");
}

/* Accepts every connection waiting on the listener; each is read at once (a
 * real peer's handshake is usually there already). */
static void strangers_accept(int starting)
{
    for (;;) {
        struct sockaddr_storage sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(tcp.listener, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return; /* EAGAIN: none left; EMFILE and the like: the deadlines free some */
        }
        if (tcp.nstrangers == MAX_STRANGERS) { /* the oldest silent one goes */
            int old = 0;
            for (int i = 1; i < tcp.nstrangers; i++)
                if (tcp.strangers[i].deadline < tcp.strangers[old].deadline)
                    old = i;
            stranger_close(old, "too many connections without a handshake");
        }
        if (!tcp.strangers)
            tcp.strangers = etc_xmalloc(MAX_STRANGERS * sizeof *tcp.strangers);
        stranger *s = &tcp.strangers[tcp.nstrangers++];
        s->fd = fd;
        s->have = 0;
        s->deadline = etc_time() + (starting ? HANDSHAKE_SECONDS : STRANGER_SECONDS);
        addr_text(&sa, s->addr, sizeof s->addr);
        stranger_read(tcp.nstrangers - 1, starting);
    }
}

/* Closes the strangers past their deadline; returns the seconds until the next
 * deadline (-1: no stranger left). */
static double strangers_expire(double now)
{
    double next = -1.0;
    for (int i = tcp.nstrangers - 1; i >= 0; i--) {
        if (now >= tcp.strangers[i].deadline)
            stranger_close(i, "no handshake in time");
        else if (next < 0 || tcp.strangers[i].deadline - now < next)
            next = tcp.strangers[i].deadline - now;
    }
    return next;
}

/* One round over the listener and the strangers: poll (at most `wait`
 * seconds, and never past a stranger's deadline or a due log line), then
 * accept, read and expire. `extra` is polled first (the launcher's connection,
 * or -1); returns its revents. */
static short strangers_round(int extra, double wait, int starting)
{
    static struct pollfd pf[MAX_STRANGERS + 2];
    double now = etc_time();
    double next = strangers_expire(now), due = closed_log_due(now);
    if (next >= 0 && (wait < 0 || next < wait))
        wait = next;
    if (due >= 0 && (wait < 0 || due < wait))
        wait = due;
    int m = 0;
    pf[m++] = (struct pollfd){extra, POLLIN, 0};
    pf[m++] = (struct pollfd){tcp.listener, POLLIN, 0};
    for (int i = 0; i < tcp.nstrangers; i++)
        pf[m++] = (struct pollfd){tcp.strangers[i].fd, POLLIN, 0};
    int ms = wait < 0 ? -1 : (int)(wait * 1000.0 + 1.0);
    if (poll(pf, (nfds_t)m, ms) > 0) {
        /* downwards: a stranger taken out is replaced by the last, already seen */
        for (int i = tcp.nstrangers - 1; i >= 0; i--)
            if (pf[i + 2].revents)
                stranger_read(i, starting);
        if (pf[1].revents)
            strangers_accept(starting);
    }
    strangers_expire(etc_time());
    closed_log_flush(0);
    return pf[0].revents;
}

/* Why the launcher's connection ended, for the message (T7, L5). */
static void __attribute__((noreturn)) lost_launcher(int err)
{
    if (tcp.finishing)
        pthread_exit(NULL); /* the launcher closed after our FINISHED: fine */
    fprintf(stderr, "etc: error: node %d: lost the control connection to the launcher (%s)\n",
            tcp.me, err ? strerror(err) : "closed by the launcher's end");
    _exit(1);
}

/* L7: the launcher, interrupted, asks what this node is running, to name it.
 * The node's own thread answers SIGURG by writing it to etc_rts.running
 * (core/crash.c); a node that does not answer within 50 ms is not named. */
static void tell_where(void)
{
    volatile etc_thread *running = &etc_rts.running;
    *running = ETC_RUNNING_UNKNOWN;
    if (pthread_kill(tcp.main_thread, SIGURG) != 0)
        return;
    struct timespec ms = {0, 1000 * 1000};
    for (int i = 0; i < 50 && *running == ETC_RUNNING_UNKNOWN; i++)
        nanosleep(&ms, NULL);
    etc_thread ran = *running;
    if (ran == ETC_RUNNING_UNKNOWN)
        return;
    char what[320];
    etc_describe_running(ran, what, sizeof what);
    ctl_send("RAN %s\n", what);
}

/* After start-up a thread of its own listens to the launcher, so that a node in
 * a long computation (which polls nothing) still ends at once when the launcher
 * says KILL or goes away: that is how no node outlives a failed run, on any host
 * (T10, L6). It also closes and logs strangers on time (T8), whatever the main
 * thread does. */
static void *watch_launcher(void *arg)
{
    (void)arg;
    char line[64];
    size_t k = 0;
    for (;;) {
        /* an idle node has nothing pending: look less often (idle nodes must not
         * take the CPU), at the cost of a later nudge after it wakes */
        int idle = atomic_load_explicit(&tcp.waiting, memory_order_relaxed);
        short ctl = strangers_round(tcp.ctl, idle ? NUDGE_LOOK_IDLE : NUDGE_LOOK, 0);
        nudge_if_stuck();
        if (!(ctl & (POLLIN | POLLHUP | POLLERR)))
            continue;
        char buf[256];
        ssize_t r = read(tcp.ctl, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            lost_launcher(r < 0 ? errno : 0);
        for (ssize_t i = 0; i < r; i++) {
            if (buf[i] != '\n') {
                if (k + 1 < sizeof line)
                    line[k++] = buf[i];
                continue;
            }
            line[k] = 0;
            k = 0;
            if (strcmp(line, "KILL") == 0 && !tcp.finishing)
                _exit(1); /* the launcher has reported why */
            if (strcmp(line, "WHERE") == 0 && !tcp.finishing)
                tell_where();
        }
    }
}

/* Builds the poll set: the peers. */
static int poll_set(void)
{
    if (tcp.pfds_cap < tcp.n) {
        tcp.pfds_cap = tcp.n;
        tcp.pfds = etc_xrealloc(tcp.pfds, (size_t)tcp.pfds_cap * sizeof *tcp.pfds);
    }
    int m = 0;
    for (int k = 0; k < tcp.n; k++) {
        if (k == tcp.me || tcp.peers[k].fd < 0)
            continue;
        short ev = POLLIN;
        if (etc_wire_pending(&tcp.out.out[k]))
            ev |= POLLOUT;
        tcp.pfds[m++] = (struct pollfd){tcp.peers[k].fd, ev, 0};
    }
    return m;
}

static int poll_now(int timeout_ms)
{
    int m = poll_set();
    int r = poll(tcp.pfds, (nfds_t)m, timeout_ms);
    if (r <= 0)
        return 0;
    int count = 0, j = 0;
    for (int k = 0; k < tcp.n; k++) {
        if (k == tcp.me || tcp.peers[k].fd < 0)
            continue;
        short re = tcp.pfds[j++].revents;
        if (re & POLLOUT)
            tcp.peers[k].full = 0;
        if (re & (POLLIN | POLLHUP | POLLERR))
            count += read_peer(k);
    }
    return count;
}

int etc_net_poll(void)
{
    if (tcp.n == 1 || tcp.polling)
        return 0;
    LAYER_ENTER();
    tcp.polling = 1;
    flush_all();
    int count = poll_now(0);
    flush_all();
    tcp.polling = 0;
    LAYER_LEAVE();
    return count;
}

/* A poll costs system calls, so at thread boundaries it happens at most every
 * POLL_INTERVAL, further apart after polls that cost more (F4), and so does a
 * flush (T6): that is the coalescing window (F2). A flush at every boundary
 * that had output cost a send() per thread that sends (a pipelined remote
 * INVOKE's thread answers with a SYNC): about 5 us each, where the message
 * costs tens of ns. Latency is not at stake: a node that goes idle flushes at
 * once (etc_net_wait), and a busy one within the interval (N3). */
void etc_net_boundary(void)
{
    if (etc_gate_due(&tcp.gate)) {
        etc_net_poll();
        etc_gate_polled(&tcp.gate);
    }
}

_Atomic uint64_t *etc_net_boundary_word(void)
{
    return NULL; /* the boundary logic (flush, time-gated poll) is in the call */
}

/* T11: whether a block (or a big message, N11) is coming in place and bytes of
 * it came lately: they come at the speed of the sender's copying, and a node
 * that slept until each next part paid a wake-up for it. Not where the sender
 * may need this CPU. */
static int block_arriving(void)
{
    if (etc_time() - tcp.place_progress_at > PLACE_SPIN || etc_net_oversubscribed())
        return 0;
    for (int k = 0; k < tcp.n; k++)
        if (tcp.peers[k].place)
            return 1;
    return 0;
}

void etc_net_wait(double seconds)
{
    if (tcp.n == 1 || tcp.polling)
        return; /* N5: not from inside a handler */
    LAYER_ENTER();
    flush_all();
    int ms = block_arriving() ? 0 : seconds < 0 ? -1 : (int)(seconds * 1000.0 + 0.999);
    tcp.polling = 1;
    atomic_store_explicit(&tcp.waiting, 1, memory_order_relaxed);
    poll_now(ms);
    atomic_store_explicit(&tcp.waiting, 0, memory_order_relaxed);
    tcp.polling = 0;
    LAYER_LEAVE();
}

/* ---------------------------------------------------------------- the end */

/* T9: goodbyes, FINISHED, then drain. */
void etc_net_finish(void)
{
    fflush(stdout);
    tcp.in_layer = 1; /* for good */
    tcp.finishing = 1;
    closed_log_flush(1); /* T8: what the last window did not log one by one */
    fflush(stderr);
    if (tcp.n > 1) {
        for (int k = 0; k < tcp.n; k++)
            if (k != tcp.me && tcp.peers[k].fd >= 0)
                etc_coalesce_put(&tcp.out, k, NET_BYE, 0, NULL, 0, 0);
        ctl_send("FINISHED\n");
        /* Drain: our output to everyone, then everyone's goodbye and EOF, so no
         * connection is reset while the other side still has data to read. */
        double deadline = etc_time() + 10.0;
        for (;;) {
            flush_all();
            int open = 0;
            for (int k = 0; k < tcp.n; k++) {
                peer *p = &tcp.peers[k];
                if (k == tcp.me || p->fd < 0)
                    continue;
                if (!etc_wire_pending(&tcp.out.out[k]))
                    shutdown(p->fd, SHUT_WR);
                open++;
            }
            if (!open || etc_time() > deadline)
                break;
            poll_now(100);
        }
    } else if (tcp.ctl >= 0) {
        ctl_send("FINISHED\n");
    }
    exit(0);
}

/* T10: the launcher stops the others. */
void etc_net_abort(void)
{
    ctl_send("FATAL\n");
    quit_quietly(1);
}

void etc_net_fatal_signal(void)
{
    static const char fatal[] = "FATAL\n";
    if (tcp.ctl >= 0)
        write_exact(tcp.ctl, fatal, sizeof fatal - 1);
}

/* ---------------------------------------------------------------- start-up */

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The secret is the first line of standard input, read byte by byte so that
 * nothing after it is taken from the program's own input. */
static void read_secret(void)
{
    char line[2 * SECRET_BYTES + 2];
    size_t k = 0;
    for (;;) {
        char c;
        ssize_t r = read(0, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || c == '\n')
            break;
        if (k < sizeof line - 1)
            line[k++] = c;
    }
    if (k != 2 * SECRET_BYTES)
        etc_die("tcp node: the launcher's secret is missing from standard input (start tcp "
                "programs with etcrun)");
    for (int i = 0; i < SECRET_BYTES; i++) {
        int hi = hexval(line[2 * i]), lo = hexval(line[2 * i + 1]);
        if (hi < 0 || lo < 0)
            etc_die("tcp node: malformed secret on standard input");
        tcp.secret[i] = (unsigned char)(hi * 16 + lo);
    }
}

static int connect_to(const char *hostport, char *err, size_t errcap)
{
    char host[256];
    snprintf(host, sizeof host, "%s", hostport);
    char *colon = strrchr(host, ':');
    if (!colon) {
        snprintf(err, errcap, "bad address '%s'", hostport);
        return -1;
    }
    *colon = 0;
    const char *h = host;
    if (*h == '[') { /* [v6]:port */
        h++;
        char *end = strchr(host, ']');
        if (end)
            *end = 0;
    }
    struct addrinfo hints = {0}, *res;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(h, colon + 1, &hints, &res);
    if (rc != 0) {
        snprintf(err, errcap, "%s: %s", hostport, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        snprintf(err, errcap, "%s: %s", hostport, strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static void die_startup(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die_startup(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "etc: error: node %d: %s\n", tcp.me, msg);
    ctl_send("FATAL\n");
    quit_quietly(1);
}

/* A listener on the interface this node uses to reach the launcher. */
static int listen_near(int ctl, char *addr, size_t cap)
{
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    if (getsockname(ctl, (struct sockaddr *)&sa, &sl) < 0)
        die_startup("getsockname: %s", strerror(errno));
    if (sa.ss_family == AF_INET)
        ((struct sockaddr_in *)&sa)->sin_port = 0;
    else
        ((struct sockaddr_in6 *)&sa)->sin6_port = 0;
    /* non-blocking: connections are accepted until none is left (T2); a long
     * queue (the kernel caps it at net.core.somaxconn) for hundreds of peers
     * connecting at once, and strangers among them */
    int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sl) < 0 || listen(fd, 4096) < 0)
        die_startup("cannot listen: %s", strerror(errno));
    sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    addr_text(&sa, addr, cap);
    return fd;
}

/* Reads exactly n bytes before `deadline` (start-up only). */
static int read_until(int fd, void *p, size_t n, double deadline)
{
    char *c = p;
    while (n) {
        struct pollfd pf = {fd, POLLIN, 0};
        int left = (int)((deadline - etc_time()) * 1000.0);
        if (left <= 0 || poll(&pf, 1, left) == 0)
            return -1;
        ssize_t k = recv(fd, c, n, MSG_DONTWAIT);
        if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static void hello_peer(int k, int fd, double deadline)
{
    handshake h = own_handshake(), r;
    if (write_exact(fd, &h, sizeof h) < 0 || read_until(fd, &r, sizeof r, deadline) < 0)
        die_startup("node %d (%s) closed the connection during the handshake, or did not "
                    "answer in time", k, tcp.peers[k].addr);
    if (!has_secret(&r) || r.version != WIRE_VERSION || r.node != k)
        die_startup("node %d (%s) answered the handshake wrongly", k, tcp.peers[k].addr);
}

/* Accepts the nodes above this one (T1, T2): every waiting connection at
 * once, each read without blocking with its own deadline, so that silent
 * strangers never hold up the peers; strangers are closed and logged. */
static void accept_peers(double deadline)
{
    for (;;) {
        int want = 0;
        for (int k = tcp.me + 1; k < tcp.n; k++)
            want += tcp.peers[k].fd < 0;
        if (!want)
            return;
        double left = deadline - etc_time();
        if (left <= 0)
            die_startup("the other nodes did not connect in time (%d of %d missing)", want,
                        tcp.n - 1 - tcp.me);
        strangers_round(-1, left, 1);
    }
}

/* A test hook: ETC_TCP_FAULT=garbage makes this node send node 0 a frame no
 * node would send, ETC_TCP_FAULT=block a block header (T11) of no bytes, to
 * exercise the receiver's checks. */
static void inject_fault(void)
{
    const char *f = getenv("ETC_TCP_FAULT");
    if (!f || tcp.me == 0)
        return;
    put_hdr ph = {0x1000, 0, 1, {0, 0, 0}};
    etc_wire_hdr h = {0xFFFFFFF0u, 0x7777, 0};
    if (strcmp(f, "block") == 0)
        h = (etc_wire_hdr){sizeof ph, (uint16_t)NET_PUT, 0};
    else if (strcmp(f, "garbage") != 0)
        return;
    etc_wire_buf *b = &tcp.out.out[0];
    etc_wire_reserve(b, sizeof h + sizeof ph);
    memcpy(b->buf + b->len, &h, sizeof h);
    b->len += sizeof h;
    if (h.type == NET_PUT) {
        memcpy(b->buf + b->len, &ph, sizeof ph);
        b->len += sizeof ph;
    }
    etc_coalesce_mark(&tcp.out, 0);
}

void etc_net_start(int want, int *node_id, int *num_nodes)
{
    tcp.ctl = -1;
    tcp.listener = -1;
    const char *control = getenv("ETC_TCP_CONTROL");
    if (!control || !*control) {
        if (want > 1)
            etc_die("a tcp program runs on %d nodes only through etcrun "
                    "(etcrun -n %d ./program ...)", want, want);
        tcp.n = 1;
        *node_id = 0;
        *num_nodes = 1;
        return;
    }
    const char *node = getenv("ETC_TCP_NODE");
    tcp.me = node ? atoi(node) : -1;
    tcp.n = want;
    if (tcp.n < 1 || tcp.me < 0 || tcp.me >= tcp.n)
        etc_die("tcp node: bad ETC_TCP_NODE/ETC_NODES from the launcher");
    etc_gate_begin(&tcp.gate);
    read_secret();
    signal(SIGPIPE, SIG_IGN);
    /* line-buffered output: the launcher relays whole lines, and a line printed
     * before a crash is not lost in a buffer */
    setvbuf(stdout, NULL, _IOLBF, 0);

    char err[256] = "";
    tcp.ctl = connect_to(control, err, sizeof err);
    if (tcp.ctl < 0)
        etc_die("node %d cannot reach the launcher: %s", tcp.me, err);
    tune_ctl(tcp.ctl);
    char my_addr[80];
    tcp.listener = listen_near(tcp.ctl, my_addr, sizeof my_addr);
    char hex[2 * SECRET_BYTES + 1];
    for (int i = 0; i < SECRET_BYTES; i++)
        snprintf(hex + 2 * i, 3, "%02x", tcp.secret[i]);
    /* L1; two addresses of the executable: every node must run the same binary */
    ctl_send("HELLO %d %d %s %d %s %lx %lx\n", WIRE_VERSION, tcp.me, hex, (int)getpid(), my_addr,
             (unsigned long)(uintptr_t)&etc_rts, (unsigned long)(uintptr_t)&etc_net_start);

    size_t cap = (size_t)tcp.n * 96 + 64; /* "ip:port " per node */
    char *line = etc_xmalloc(cap);
    int got = ctl_line(line, cap);
    if (got == -2)
        die_startup("the launcher's address table is longer than %zu bytes", cap);
    if (got < 0)
        lost_launcher(errno);
    if (strncmp(line, "KILL", 4) == 0)
        quit_quietly(1);
    if (strncmp(line, "TABLE ", 6) != 0) /* L2 */
        die_startup("unexpected answer from the launcher");
    tcp.peers = calloc((size_t)tcp.n, sizeof *tcp.peers);
    if (!tcp.peers)
        etc_die("out of memory");
    etc_coalesce_init(&tcp.out, tcp.n, FLUSH_AT, MAX_MESSAGE, write_peer, NULL);
    char *save = NULL, *tok = strtok_r(line + 6, " ", &save);
    for (int k = 0; k < tcp.n; k++) {
        if (!tok)
            die_startup("the launcher's table is short");
        snprintf(tcp.peers[k].addr, sizeof tcp.peers[k].addr, "%s", tok);
        tcp.peers[k].fd = -1;
        tok = strtok_r(NULL, " ", &save);
    }
    double deadline = etc_time() + 60.0;
    for (int k = 0; k < tcp.me; k++) {
        int fd = connect_to(tcp.peers[k].addr, err, sizeof err);
        if (fd < 0)
            die_startup("cannot connect to node %d: %s", k, err);
        hello_peer(k, fd, deadline);
        tcp.peers[k].fd = fd;
    }
    accept_peers(deadline);
    for (int k = 0; k < tcp.n; k++) {
        if (k == tcp.me)
            continue;
        tune_peer(tcp.peers[k].fd);
        set_nonblocking(tcp.peers[k].fd);
    }
    ctl_send("READY\n"); /* L3, then L4 */
    got = ctl_line(line, cap);
    if (got == -1)
        lost_launcher(errno);
    if (got < 0 || strcmp(line, "GO") != 0)
        quit_quietly(1); /* KILL: the launcher has reported why */
    free(line);
    tcp.main_thread = pthread_self();
    pthread_t watcher;
    if (pthread_create(&watcher, NULL, watch_launcher, NULL) != 0)
        die_startup("cannot start the thread that watches the launcher");
    pthread_detach(watcher);
    etc_gate_ready(&tcp.gate, POLL_INTERVAL);
    inject_fault();
    *node_id = tcp.me;
    *num_nodes = tcp.n;
}
