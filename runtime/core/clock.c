/* clock.c: the timers of thesis 2.3.7 and Fig. B.2, for programs and runtime
 * alike: etc_time() in seconds, etc_time_raw() and its EARTH-MANNA name
 * ct_read() in nanoseconds (all three from one monotonic clock), and
 * etc_delay(), a busy wait. (A file of its own: the -prof build counts time
 * spent here as the program's, core/prof.c.) */
#include <time.h>

#include "core/rts.h"

double etc_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double etc_time_raw(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

double ct_read(void)
{
    return etc_time_raw();
}

void etc_delay(double seconds)
{
    double end = etc_time() + seconds;
    while (etc_time() < end)
        ;
}
