// queens_tbb.cpp: the n-queens count of samples/ebs/queens.tc with TBB task_group:
// a task per safe square down to the throttling depth, then the same sequential
// bit-mask search. Usage: queens_tbb N DEPTH THREADS
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <tbb/global_control.h>
#include <tbb/task_group.h>

#include "queens_count.h"

static long long queens(unsigned all, int depth, int placed, unsigned cols, unsigned ld,
                        unsigned rd)
{
    if (placed >= depth || cols == all)
        return count_seq(all, cols, ld, rd);
    long long counts[32] = {0}, total = 0;
    unsigned free_ = all & ~(cols | ld | rd);
    int children = 0;
    tbb::task_group g;
    while (free_) {
        unsigned bit = free_ & -free_;
        free_ -= bit;
        long long *slot = &counts[children++];
        g.run([=] {
            *slot = queens(all, depth, placed + 1, cols | bit, (ld | bit) << 1, (rd | bit) >> 1);
        });
    }
    g.wait();
    for (int i = 0; i < children; i++)
        total += counts[i];
    return total;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? std::atoi(argv[1]) : 10, depth = argc > 2 ? std::atoi(argv[2]) : 4;
    int threads = argc > 3 ? std::atoi(argv[3]) : 1;
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads);
    auto t0 = std::chrono::steady_clock::now();
    long long r = queens((1u << n) - 1, depth, 0, 0, 0, 0);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "time: %.6f s on %d thread(s)\n", s, threads);
    std::printf("queens(%d) = %lld\n", n, r);
    return 0;
}
