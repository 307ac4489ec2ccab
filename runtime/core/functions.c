/* functions.c: the program's threaded functions, as the runtime reports them.
 *
 * etcpre emits a descriptor (etc.h etc_fn_info) beside every threaded function
 * and a pointer to it in the linker section etc_fns, so the runtime finds every
 * function of the program without a registration call: the linker brackets the
 * section with __start_etc_fns and __stop_etc_fns. The symbols are weak, so a
 * program without any threaded function (a plain C test) still links.
 *
 * Every node runs the same executable at the same addresses (no PIE), so a
 * thread's address or a descriptor's means the same on every node: reports may
 * carry them in messages.
 */
#include <stdio.h>
#include <string.h>

#include "core/rts.h"

extern etc_fn_info *const __start_etc_fns[] __attribute__((weak));
extern etc_fn_info *const __stop_etc_fns[] __attribute__((weak));

etc_fn_info *const *etc_fns_begin(void)
{
    return __start_etc_fns;
}

etc_fn_info *const *etc_fns_end(void)
{
    return __start_etc_fns ? __stop_etc_fns : __start_etc_fns;
}

const etc_fn_info *etc_fn_of_thread(etc_thread ip, const etc_thread_info **thread)
{
    if (!ip)
        return NULL;
    for (etc_fn_info *const *f = etc_fns_begin(); f != etc_fns_end(); f++) {
        for (int k = 0; k < (*f)->nthreads; k++) {
            if ((*f)->threads[k].ip == ip) {
                if (thread)
                    *thread = &(*f)->threads[k];
                return *f;
            }
        }
    }
    return NULL;
}

int etc_fn_is_known(const void *fn)
{
    for (etc_fn_info *const *f = etc_fns_begin(); f != etc_fns_end(); f++)
        if (*f == fn)
            return 1;
    return 0;
}

/* "thread 1 of 'crunch'", "the continuation after CALL 2 of 'f'", or "the thread
 * at 0x..." for an address no descriptor names. Safe in a signal handler. */
void etc_describe_thread(etc_thread ip, char *buf, size_t cap)
{
    const etc_thread_info *t = NULL;
    const etc_fn_info *f = etc_fn_of_thread(ip, &t);
    if (!f)
        snprintf(buf, cap, "the thread at %p", (void *)(uintptr_t)ip);
    else if (t->number < 0)
        snprintf(buf, cap, "the continuation after CALL %d of '%s'", -t->number, f->name);
    else
        snprintf(buf, cap, "thread %d of '%s'", t->number, f->name);
}

int etc_thread_start(etc_thread ip, const char **file, int *line)
{
    const etc_thread_info *t = NULL;
    const etc_fn_info *f = etc_fn_of_thread(ip, &t);
    if (!f)
        return 0;
    *file = f->file;
    *line = t->line;
    return 1;
}

/* "thread 1 of 'spin' (forever.tc:15)", or "idle" for no thread. */
static void running_text(etc_thread ip, char *buf, size_t cap)
{
    const char *file;
    int line;
    if (!ip) {
        snprintf(buf, cap, "idle");
        return;
    }
    char name[192];
    etc_describe_thread(ip, name, sizeof name);
    if (etc_thread_start(ip, &file, &line))
        snprintf(buf, cap, "in %s (%s:%d)", name, file, line);
    else
        snprintf(buf, cap, "in %s", name);
}

void etc_describe_nodes(const etc_thread *ran, int n, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = 0;
    for (int k = 0; k < n && used < cap;) {
        int last = k;
        while (last + 1 < n && ran[last + 1] == ran[k])
            last++;
        if (ran[k] != ETC_RUNNING_UNKNOWN) {
            char what[320];
            running_text(ran[k], what, sizeof what);
            if (last == k)
                used += (size_t)snprintf(buf + used, cap - used, "%snode %d was %s",
                                         used ? "; " : "", k, what);
            else
                used += (size_t)snprintf(buf + used, cap - used, "%snodes %d-%d were %s",
                                         used ? "; " : "", k, last, what);
        }
        k = last + 1;
    }
}
