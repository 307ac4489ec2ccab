/* gate.c: calibrating the time-gated boundary poll (gate.h). */
#include "net/common/gate.h"
#include "etc.h"
#include "net/net.h"

void etc_gate_begin(etc_gate *g)
{
    g->begin_ticks = etc_gate_ticks();
    g->begin_seconds = etc_time();
}

void etc_gate_ready(etc_gate *g, double interval)
{
    double now = etc_time();
    uint64_t t = etc_gate_ticks();
    double per_second = now > g->begin_seconds
                            ? (double)(t - g->begin_ticks) / (now - g->begin_seconds)
                            : 1e9;
    if (per_second <= 0)
        per_second = 1e9;
    g->interval = g->base = (uint64_t)(interval * per_second);
    g->budget = 1;
    g->tick = 0;
    g->last = t;
}
