/* gate.h: time-gated polling at thread boundaries, for layers whose poll
 * costs a system call (docs/protocols.md, F4).
 *
 * Fine-grain threads end every few tens of nanoseconds; a poll() each time
 * would cost more than the threads. So a layer polls at a boundary at most
 * every `interval`, and reads the clock itself (the time-stamp counter where
 * there is one) only every `budget` boundaries: the budget doubles while the
 * clock shows boundaries coming faster than the interval and halves when they
 * come much slower, so it follows the program's thread length.
 *
 * A poll that moves much (a peer pipelining INVOKEs: a 32 KiB read, the
 * answers' send) costs tens of microseconds of system calls; every 20 us that
 * would be half of a busy node's time. So the next poll waits at least
 * ETC_GATE_COST_SHARE times what the last one took, at most ETC_GATE_MAX_STRETCH
 * times the base interval: polling takes at most about a fifth of a busy
 * node's time, and a cheap poll keeps the base interval.
 */
#ifndef ETC_NET_COMMON_GATE_H
#define ETC_NET_COMMON_GATE_H

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

enum { ETC_GATE_COST_SHARE = 4, ETC_GATE_MAX_STRETCH = 10 };

typedef struct etc_gate {
    unsigned tick, budget;
    uint64_t last, interval, base; /* in ticks */
    uint64_t begin_ticks;    /* calibration, from etc_gate_begin */
    double begin_seconds;
} etc_gate;

static inline uint64_t etc_gate_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* At the start of a layer's start-up: notes the counter and the clock. */
void etc_gate_begin(etc_gate *g);
/* At its end (start-up takes milliseconds, enough to calibrate the counter
 * against the clock): polls every `interval` seconds from now on. */
void etc_gate_ready(etc_gate *g, double interval);

/* At a thread boundary: 1 when a poll is due. */
static inline int etc_gate_due(etc_gate *g)
{
    if (++g->tick < g->budget)
        return 0;
    g->tick = 0;
    uint64_t t = etc_gate_ticks();
    uint64_t dt = t - g->last;
    if (dt < g->interval) {
        if (g->budget < 64)
            g->budget *= 2;
        return 0;
    }
    if (dt > 4 * g->interval && g->budget > 1)
        g->budget /= 2;
    g->last = t;
    return 1;
}

/* After the poll etc_gate_due let through: spaces the next by its cost. */
static inline void etc_gate_polled(etc_gate *g)
{
    uint64_t spent = etc_gate_ticks() - g->last, want = spent * ETC_GATE_COST_SHARE;
    if (want < g->base)
        want = g->base;
    else if (want > g->base * ETC_GATE_MAX_STRETCH)
        want = g->base * ETC_GATE_MAX_STRETCH;
    g->interval = want;
}

#endif
