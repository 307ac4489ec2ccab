/* tcp_pingpong.c: the raw TCP baseline for etc's tcp target, on loopback.
 * Usage: tcp_pingpong pingpong ROUNDS BYTES [spin]  -> mean round trip (ns)
 *        tcp_pingpong stream TOTAL_MB CHUNK [spin]  -> throughput (MB/s)
 * Two processes, TCP_NODELAY; with "spin" the sockets are non-blocking and
 * both sides busy-poll (as etc's idle nodes do before they sleep), which avoids
 * the scheduler's wake-up latency: the best a plain socket does. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int spin;

static void xfer(int fd, char *buf, size_t n, int out)
{
    size_t done = 0;
    while (done < n) {
        int fl = spin ? MSG_DONTWAIT : 0;
        ssize_t k = out ? send(fd, buf + done, n - done, fl) : recv(fd, buf + done, n - done, fl);
        if (k < 0 && spin && (errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (k <= 0) {
            perror("socket");
            exit(1);
        }
        done += (size_t)k;
    }
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: tcp_pingpong pingpong|stream N SIZE [spin]\n");
        return 2;
    }
    spin = argc == 5 && strcmp(argv[4], "spin") == 0;
    int stream = strcmp(argv[1], "stream") == 0;
    long n = atol(argv[2]);
    size_t size = (size_t)atol(argv[3]);
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(ls, (struct sockaddr *)&a, sizeof a);
    socklen_t al = sizeof a;
    getsockname(ls, (struct sockaddr *)&a, &al);
    listen(ls, 1);
    char *buf = calloc(1, size);
    pid_t child = fork();
    if (child == 0) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
            perror("connect");
            _exit(1);
        }
        if (stream) {
            long total = n * 1024 * 1024;
            for (long sent = 0; sent < total; sent += (long)size)
                xfer(fd, buf, size, 1);
            xfer(fd, buf, 1, 0);
        } else {
            for (long i = 0; i < n; i++) {
                xfer(fd, buf, size, 0);
                xfer(fd, buf, size, 1);
            }
        }
        _exit(0);
    }
    int fd = accept(ls, NULL, NULL);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    double t0 = now();
    if (stream) {
        long total = n * 1024 * 1024;
        for (long got = 0; got < total; got += (long)size)
            xfer(fd, buf, size, 0);
        xfer(fd, buf, 1, 1);
        printf("%.3f\n", (double)total / (now() - t0) / 1e6);
    } else {
        for (long i = 0; i < n; i++) {
            xfer(fd, buf, size, 1);
            xfer(fd, buf, size, 0);
        }
        printf("%.3f\n", (now() - t0) * 1e9 / (double)n);
    }
    waitpid(child, NULL, 0);
    return 0;
}
