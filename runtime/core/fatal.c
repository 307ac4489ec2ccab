/* fatal.c: fatal run-time errors. The message names the node; the network
 * layer then ends the whole run, so no other node is left running. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rts.h"

void etc_vfatal(const char *fmt, va_list ap)
{
    fflush(stdout);
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "etc: error: node %d: %s\n", etc_rts.node_id, msg);
    fflush(stderr);
    etc_net_abort();
}

void etc_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    etc_vfatal(fmt, ap);
}

const char *etc_run_nodes(char *buf, size_t cap)
{
    int n = etc_rts.num_nodes;
    if (n == 1)
        snprintf(buf, cap, "the run has 1 node: 0");
    else
        snprintf(buf, cap, "the run has %d nodes: 0-%d", n, n - 1);
    return buf;
}

void etc_fatal_in_thread(const char *fmt, ...)
{
    char msg[768], thread[320] = "", at[320] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    etc_thread ip = etc_current_thread();
    const char *file = NULL;
    int line = 0, node = etc_rts.node_id;
#ifdef ETC_CHECK
    etc_node_private *p = etc_rts.priv;
    if (p && p->check_from_valid) { /* in a handler: the sender caused it */
        file = (const char *)(uintptr_t)p->check_from.file;
        line = p->check_from.line;
        ip = (etc_thread)(uintptr_t)p->check_from.ip;
        node = p->check_from.node;
    } else {
        file = etc_check_file;
        line = etc_check_line;
    }
#endif
    if (file && line > 0)
        snprintf(at, sizeof at, "%s:%d: ", file, line);
    if (ip) {
        char name[256];
        etc_describe_thread(ip, name, sizeof name);
        if (node != etc_rts.node_id)
            snprintf(thread, sizeof thread, "in %s on node %d: ", name, node);
        else
            snprintf(thread, sizeof thread, "in %s: ", name);
    }
    etc_fatal("%s%s%s", at, thread, msg);
}

void etc_output_failed(int fd, int err)
{
    const char *name = fd == 2 ? "standard error" : "standard output";
    if (err)
        etc_fatal("cannot write to %s: %s", name, strerror(err));
    etc_fatal("cannot write to %s (a write failed)", name);
}

/* Whether fd is a pipe whose reader went away (`| head`): Linux's poll says
 * POLLERR for it. For a write that failed earlier, whose errno is gone. */
static int reader_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

void etc_flush_output_checked(void)
{
    FILE *streams[2] = {stdout, stderr};
    for (int i = 0; i < 2; i++) {
        errno = 0;
        int failed = fflush(streams[i]) == EOF;
        int err = failed ? errno : reader_gone(i + 1) ? EPIPE : 0;
        if ((failed || ferror(streams[i])) && err != EPIPE) {
            clearerr(streams[i]);
            etc_output_failed(i + 1, failed ? err : 0);
        }
    }
}

void etc_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "etc: error: %s\n", msg);
    exit(2);
}

void etc_assert_fail(const char *file, int line, const char *what)
{
    etc_fatal("internal error: %s:%d: '%s' does not hold (a bug in the etc runtime)", file, line,
              what);
}
