/* Linked into a program with -Wl,--wrap=etc_net_extend: counts the calls the
 * core joined to the message before them (docs/protocols.md, N13) and says so
 * on stderr once a thousand have joined on this node. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int __real_etc_net_extend(int dest, int type, const uint64_t key[2], const void *more, size_t n);
int __wrap_etc_net_extend(int dest, int type, const uint64_t key[2], const void *more, size_t n);

int __wrap_etc_net_extend(int dest, int type, const uint64_t key[2], const void *more, size_t n)
{
    static long joined;
    int done = __real_etc_net_extend(dest, type, key, more, n);
    if (done && ++joined == 1000)
        fprintf(stderr, "joins: 1000 calls joined a message on node %d\n", NODE_ID);
    return done;
}
