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
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

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

#ifndef ETC_CHECK
/* The thread whose C function holds addr, by the symbol table: _f_n, or a part
 * of it the compiler moved away (_f_n.cold). */
static etc_thread thread_at(uintptr_t addr)
{
    const char *sym = etc_symbol_at(addr);
    if (!sym || sym[0] != '_')
        return NULL;
    size_t len = strcspn(sym, ".");
    for (etc_fn_info *const *f = etc_fns_begin(); f != etc_fns_end(); f++) {
        size_t n = strlen((*f)->name);
        if (len <= n + 2 || strncmp(sym + 1, (*f)->name, n) != 0 || sym[n + 1] != '_')
            continue;
        for (int k = 0; k < (*f)->nthreads; k++) {
            const etc_thread_info *t = &(*f)->threads[k];
            char entry[24];
            snprintf(entry, sizeof entry, t->number < 0 ? "C%d" : "%d", abs(t->number));
            if (len - n - 2 == strlen(entry) && strncmp(sym + n + 2, entry, len - n - 2) == 0)
                return t->ip;
        }
    }
    return NULL;
}

static _Unwind_Reason_Code frame_thread(struct _Unwind_Context *ctx, void *found)
{
    int exact = 0; /* the interrupted frame of a signal: its address is the instruction's */
    uintptr_t ip = (uintptr_t)_Unwind_GetIPInfo(ctx, &exact);
    if (!ip)
        return _URC_END_OF_STACK;
    *(etc_thread *)found = thread_at(exact ? ip : ip - 1);
    return *(etc_thread *)found ? _URC_END_OF_STACK : _URC_NO_REASON;
}
#endif

/* The normal build writes nothing down when a thread starts (that store cost fib
 * 2.5% of its instructions): the innermost thread function on the stack is the
 * thread (CALL's callee before its caller). etcc compiles the generated C with
 * -fno-optimize-sibling-calls, so a thread's frame stays on the stack while the
 * functions it calls run. */
etc_thread etc_current_thread(void)
{
#ifdef ETC_CHECK
    return etc_rts.running;
#else
    etc_thread found = NULL;
    _Unwind_Backtrace(frame_thread, &found);
    return found;
#endif
}

/* For an interrupt: the thread the node is in; between two threads, the next
 * one it will start if it knows, else ETC_RUNNING_BETWEEN; NULL when it has no
 * work (idle). */
etc_thread etc_thread_busy_with(void)
{
    etc_thread t = etc_current_thread();
    if (t)
        return t;
    etc_rq *rq = &etc_rts.rq;
    etc_tq *tq = &etc_rts.tq;
    if (rq->buf && rq->head != rq->tail)
        return rq->buf[rq->head & rq->mask].ip;
    if (tq->buf && tq->head != tq->tail)
        return tq->buf[(tq->tail - 1) & tq->mask].fn;
    if (etc_rts.priv && etc_rts.priv->term.idle)
        return NULL;
    return ETC_RUNNING_BETWEEN; /* one taken from a queue, not yet started */
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

/* net.h: "in thread 1 of 'spin' (forever.tc:15)", "idle", "between two threads". */
void etc_describe_running(etc_thread ip, char *buf, size_t cap)
{
    const char *file;
    int line;
    if (!ip) {
        snprintf(buf, cap, "idle");
        return;
    }
    if (ip == ETC_RUNNING_BETWEEN) {
        snprintf(buf, cap, "between two threads");
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
            etc_describe_running(ran[k], what, sizeof what);
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
