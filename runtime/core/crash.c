/* crash.c: a fatal signal or an interrupt, reported with where it happened.
 *
 * A crash in user code (SIGSEGV, SIGBUS, SIGFPE, SIGILL, abort's SIGABRT) is
 * reported by the node itself, on every target:
 *   etc: error: node 1: segmentation fault (SIGSEGV) in thread 0 of 'boom' (crash.tc:6)
 * naming the thread it was in (the innermost thread function on the stack,
 * functions.c etc_current_thread) and where that thread starts; the checking
 * build (etcc -g) names the .tc line of the faulting statement instead, found
 * in the executable's line table (debuginfo.c) for the interrupted address or,
 * inside a C function called from the thread, the first return address on the
 * stack that is a .tc line. Then the signal takes its course (the previous
 * handler, or the default action: a core dump where allowed, and the network
 * layer ends the run); etc_net_fatal_signal() tells the layer the node has
 * reported.
 *
 * A process that is the whole run (seq, one smp node without fork) also says
 * which thread Ctrl-C, SIGTERM or SIGHUP interrupted; with several nodes the
 * supervisor or launcher owns those signals, and a node answers SIGURG by
 * writing the thread it is in to etc_rts.running, where the smp supervisor
 * reads it before it stops the run. mpi ranks, which nothing of ours can ask,
 * say it themselves (etc_net_nodes_say_interrupts).
 *
 * The handlers run on an alternate stack, so a stack overflow is reported too.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#ifdef ETC_CHECK
#include <execinfo.h>
#endif

#include "core/rts.h"

static const int FATAL_SIGNALS[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
static const int INTERRUPTS[] = {SIGINT, SIGTERM, SIGHUP};
#define NFATAL (sizeof FATAL_SIGNALS / sizeof FATAL_SIGNALS[0])
#define NINTERRUPT (sizeof INTERRUPTS / sizeof INTERRUPTS[0])
#define ALT_STACK_BYTES (256 * 1024)

static struct sigaction previous[NFATAL + NINTERRUPT];

static const char *signal_name(int sig)
{
    const char *abbrev = sigabbrev_np(sig);
    return abbrev ? abbrev : "?";
}

static const char *what_happened(int sig, const siginfo_t *si)
{
    switch (sig) {
    case SIGSEGV:
        return "segmentation fault";
    case SIGBUS:
        return "bus error";
    case SIGFPE:
        return si->si_code == FPE_INTDIV   ? "integer division by zero"
               : si->si_code == FPE_INTOVF ? "integer overflow"
                                           : "arithmetic exception";
    case SIGILL:
        return "illegal instruction";
    case SIGABRT:
        return "aborted";
    default:
        return "interrupted";
    }
}

/* A fault this close to the stack pointer is the stack overflowing. */
static int near_stack(const void *uc, uintptr_t addr)
{
    const ucontext_t *u = uc;
#if defined(__x86_64__)
    uintptr_t sp = (uintptr_t)u->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    uintptr_t sp = (uintptr_t)u->uc_mcontext.sp;
#else
    uintptr_t sp = 0;
    (void)u;
#endif
    return sp && addr + 65536 > sp && addr < sp + 65536;
}

uintptr_t etc_interrupted_pc(const void *uc)
{
    const ucontext_t *u = uc;
#if defined(__x86_64__)
    return (uintptr_t)u->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)u->uc_mcontext.pc;
#else
    (void)u;
    return 0;
#endif
}

/* The .tc line of the statement that was running (checking build): the
 * interrupted address, else the innermost return address that is one. */
static int tc_line(const void *uc, const char **file, int *line)
{
#ifdef ETC_CHECK
    uintptr_t pc = etc_interrupted_pc(uc);
    if (pc && etc_lines_find(pc, file, line))
        return 1;
    void *frames[64];
    int n = backtrace(frames, 64);
    int past = pc == 0; /* frames up to the interrupted one are the handler's */
    for (int i = 0; i < n; i++) {
        uintptr_t a = (uintptr_t)frames[i];
        if (!past) {
            past = a == pc;
            continue;
        }
        if (etc_lines_find(a - 1, file, line)) /* a return address: the call is before it */
            return 1;
    }
#else
    (void)uc;
    (void)file;
    (void)line;
#endif
    return 0;
}

/* Where the node was: the .tc line of the statement (checking build), and the
 * thread, with the line it starts at when the statement's is unknown:
 * " in thread 0 of 'boom' (crash.tc:6)". */
typedef struct {
    const char *file;
    int line; /* > 0: the statement's line */
    etc_thread ip;
    char thread[256];
} place;

static void where(const void *uc, place *p, etc_thread ip)
{
    p->line = 0;
    if (!tc_line(uc, &p->file, &p->line))
        p->line = 0;
    p->ip = ip;
    if (!ip || ip == ETC_RUNNING_BETWEEN) {
        snprintf(p->thread, sizeof p->thread, "%s",
                 !etc_have_symbols() ? " (in which thread is unknown: the program is stripped)"
                 : ip                ? " between two threads"
                                     : " while no thread was running");
        return;
    }
    char name[192];
    etc_describe_thread(ip, name, sizeof name);
    const char *file;
    int line;
    if (p->line <= 0 && etc_thread_start(ip, &file, &line))
        snprintf(p->thread, sizeof p->thread, " in %s (%s:%d)", name, file, line);
    else
        snprintf(p->thread, sizeof p->thread, " in %s", name);
}

static void write_all(const char *p, size_t n)
{
    while (n) {
        ssize_t k = write(2, p, n);
        if (k <= 0)
            return;
        p += k;
        n -= (size_t)k;
    }
}

/* Lets the signal take its course as if we had not been there: a fault recurs
 * when the handler returns, anything sent (kill, raise, abort, the terminal)
 * is sent again. */
static void pass_on(int sig, const siginfo_t *si, int index, int sent)
{
    sigaction(sig, &previous[index], NULL);
    if (sent || si->si_code <= 0)
        raise(sig);
}

/* etc: error: node 1: crash.tc:9: segmentation fault (SIGSEGV) in thread 0 of 'boom': ... */
static void on_fatal(int sig, siginfo_t *si, void *uc)
{
    int index = 0;
    while (index < (int)NFATAL && FATAL_SIGNALS[index] != sig)
        index++;
    place p;
    where(uc, &p, etc_current_thread());
    char at[320] = "";
    if (p.line > 0)
        snprintf(at, sizeof at, "%s:%d: ", p.file, p.line);
    char addr[96] = "";
    if ((sig == SIGSEGV || sig == SIGBUS) && si->si_code > 0 && si->si_code != SI_KERNEL)
        snprintf(addr, sizeof addr, ", at address 0x%lx%s", (unsigned long)si->si_addr,
                 (uintptr_t)si->si_addr < 4096                  ? " (a null pointer)"
                 : near_stack(uc, (uintptr_t)si->si_addr) ? " (the stack overflowed: a "
                                                              "recursion too deep?)"
                                                            : "");
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "etc: error: node %d: %s%s (SIG%s)%s%s\n", etc_rts.node_id,
                     at, what_happened(sig, si), signal_name(sig), p.thread, addr);
    write_all(msg, n < (int)sizeof msg ? (size_t)n : sizeof msg - 1);
#ifndef ETC_CHECK
    static const char note[] = "etc: note: build with etcc -g to see the line of the fault\n";
    if (p.ip)
        write_all(note, sizeof note - 1);
#endif
    etc_net_fatal_signal();
    pass_on(sig, si, index, sig == SIGABRT);
}

/* etc: interrupted (SIGINT): node 0 was in thread 1 of 'spin' (forever.tc:15) */
static void on_interrupt(int sig, siginfo_t *si, void *uc)
{
    int index = 0;
    while (index < (int)NINTERRUPT && INTERRUPTS[index] != sig)
        index++;
    place p;
    where(uc, &p, etc_thread_busy_with());
    char at[320] = "";
    if (p.line > 0)
        snprintf(at, sizeof at, " at %s:%d,", p.file, p.line);
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "etc: interrupted (SIG%s): node %d was%s%s\n",
                     signal_name(sig), etc_rts.node_id, at,
                     p.ip ? p.thread : " idle");
    write_all(msg, n < (int)sizeof msg ? (size_t)n : sizeof msg - 1);
    if (etc_rts.num_nodes > 1) {
        /* an MPI launcher kills every rank once one has died: the others must have
         * had the signal, and said their line, first */
        struct timespec pause = {0, 100000000};
        while (nanosleep(&pause, &pause) != 0 && errno == EINTR)
            ; /* a profiling build's timer signal must not cut it short */
    }
    pass_on(sig, si, (int)NFATAL + index, 1);
}

/* SIGURG (the smp supervisor, or the tcp layer asked by its launcher): say which
 * thread this node is in; and the layer may move on output a long thread left
 * waiting (tcp's watcher nudges it so). */
static void on_asked(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    int saved = errno;
    etc_rts.running = etc_thread_busy_with();
    etc_net_urged();
    errno = saved;
}

static void install(int sig, void (*handler)(int, siginfo_t *, void *), struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    /* SA_RESTART: a nudge (SIGURG) must not fail the program's own read() */
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NINTERRUPT; i++)
        sigaddset(&sa.sa_mask, INTERRUPTS[i]);
    sigaction(sig, &sa, old);
}

void etc_crash_init(void)
{
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = mmap(NULL, ALT_STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
    if (ss.ss_sp != MAP_FAILED) {
        ss.ss_size = ALT_STACK_BYTES;
        sigaltstack(&ss, NULL);
    }
#ifdef ETC_CHECK
    etc_debuginfo_init();
    void *warm[1];
    backtrace(warm, 1); /* loads the unwinder now, not in a signal handler */
#endif
    for (size_t i = 0; i < NFATAL; i++)
        install(FATAL_SIGNALS[i], on_fatal, &previous[i]);
    install(SIGURG, on_asked, NULL); /* the supervisor, the launcher or a layer asks */
    if (etc_rts.num_nodes != 1 && !etc_net_nodes_say_interrupts())
        return; /* the supervisor or the launcher stops the nodes and says why */
    for (size_t i = 0; i < NINTERRUPT; i++) {
        struct sigaction now;
        if (sigaction(INTERRUPTS[i], NULL, &now) == 0 && now.sa_handler == SIG_DFL &&
            !(now.sa_flags & SA_SIGINFO))
            install(INTERRUPTS[i], on_interrupt, &previous[NFATAL + i]);
    }
}
