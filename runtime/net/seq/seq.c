/* seq.c: the sequential network layer: one node, so no message is ever sent
 * (the core handles every local operation without the network). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "net/net.h"

ETC_NET_LAYER("seq");

void etc_net_start(int want, int *node_id, int *num_nodes)
{
    if (want > 1)
        etc_die("this program was built for the seq target, which runs on 1 node, not %d "
                "(rebuild with etcc -target smp or -target tcp)", want);
    *node_id = 0;
    *num_nodes = 1;
}

void etc_net_send(int dest, int type, const void *a, size_t alen, const void *b, size_t blen)
{
    (void)a;
    (void)alen;
    (void)b;
    (void)blen;
    etc_fatal("message of type %d to node %d on the seq target", type, dest);
}

/* N13: no message was sent, so none can grow (a send says what went wrong) */
int etc_net_extend(int dest, int type, const uint64_t key[2], const void *more, size_t n)
{
    (void)dest;
    (void)type;
    (void)key;
    (void)more;
    (void)n;
    return 0;
}

int etc_net_poll(void)
{
    return 0;
}

void etc_net_flush(void)
{
}

void etc_net_boundary(void)
{
}

_Atomic uint64_t *etc_net_boundary_word(void)
{
    return NULL; /* one node: the core never polls */
}

void etc_net_wait(double seconds)
{
    (void)seconds;
}

int etc_net_read_remote(int node, void *local_dst, const void *remote_src, size_t n)
{
    (void)node;
    (void)local_dst;
    (void)remote_src;
    (void)n;
    return -1;
}

int etc_net_write_remote(int node, void *remote_dst, const void *local_src, size_t n)
{
    (void)node;
    (void)remote_dst;
    (void)local_src;
    (void)n;
    return -1;
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
    return -1; /* one node: no block move leaves it */
}

int etc_net_oversubscribed(void)
{
    return 0;
}

int etc_net_nodes_say_interrupts(void)
{
    return 0;
}

size_t etc_net_max_message(void)
{
    return 1 << 16;
}

void etc_net_finish(void)
{
    etc_flush_output_checked();
    exit(0);
}

void etc_net_abort(void)
{
    fflush(stdout);
    _exit(1);
}

void etc_net_fatal_signal(void)
{
}

/* one node: nothing to send */
void etc_net_urged(void)
{
}
