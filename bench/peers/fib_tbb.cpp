// fib_tbb.cpp: fib with a TBB task_group task per call, the peer of etc's fib
// with every call a TOKEN. Usage: fib_tbb N THREADS
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <tbb/global_control.h>
#include <tbb/task_group.h>

static int fib(int n)
{
    if (n < 2)
        return n;
    int x, y;
    tbb::task_group g;
    g.run([&] { x = fib(n - 1); });
    g.run([&] { y = fib(n - 2); });
    g.wait();
    return x + y;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? std::atoi(argv[1]) : 30;
    int threads = argc > 2 ? std::atoi(argv[2]) : 1;
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads);
    auto t0 = std::chrono::steady_clock::now();
    int r = fib(n);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "time: %.6f s on %d thread(s)\n", s, threads);
    std::printf("fib(%d) = %d\n", n, r);
    return 0;
}
