/* fatal.c: fatal run-time errors. The message names the node; the network
 * layer then ends the whole run, so no other node is left running. */
#include <stdio.h>
#include <stdlib.h>

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
