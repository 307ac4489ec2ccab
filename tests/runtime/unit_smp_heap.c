/* The smp shared heap's allocator (runtime/net/smp/smp_heap.c) on its own: this
 * program is linked with it, so its malloc family is the one every call here
 * (and in libc) reaches. It attaches a small shared slice and runs a random
 * mix of malloc, calloc, realloc, free and the aligned allocators against a
 * record of what each block must hold. Prints "ok NAME" per check, "FAIL ..."
 * on a failure, and "done N" with the failure count. */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net/smp/smp_mem.h"

#define SLICE ((size_t)64 << 20)
#define SLOTS 2000

/* The debug build's internal checks (ETC_ASSERT in smp_heap.c: the boundary
 * tags, double frees) report here. */
void etc_assert_fail(const char *file, int line, const char *what)
{
    printf("FAIL %s:%d: internal check '%s' does not hold\n", file, line, what);
    fflush(stdout);
    abort();
}

static int failures;
static char *lo, *hi;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                        \
            printf(__VA_ARGS__);                                                               \
            printf("\n");                                                                      \
            failures++;                                                                        \
            return;                                                                            \
        }                                                                                      \
    } while (0)

static int inside(const void *p)
{
    return (const char *)p >= lo && (const char *)p < hi;
}

typedef struct {
    unsigned char *p;
    size_t n;
    unsigned char seed;
} block;

static block blocks[SLOTS];

static void fill(block *b)
{
    for (size_t i = 0; i < b->n; i++)
        b->p[i] = (unsigned char)(b->seed + i * 31);
}

static int intact(const block *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b->p[i] != (unsigned char)(b->seed + i * 31))
            return 0;
    return 1;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Sizes: mostly small, some large (past the small classes), a few huge. */
static size_t some_size(void)
{
    uint64_t r = next() % 100;
    if (r < 70)
        return next() % 600;
    if (r < 95)
        return next() % 40000;
    return 40000 + next() % 600000;
}

static void test_random_mix(void)
{
    size_t zero_checked = 0;
    for (int step = 0; step < 100000; step++) {
        block *b = &blocks[next() % SLOTS];
        int op = (int)(next() % 10);
        if (b->p) {
            CHECK(intact(b, b->n), "step %d: block of %zu bytes changed", step, b->n);
            CHECK(malloc_usable_size(b->p) >= b->n, "step %d: usable %zu < %zu", step,
                  malloc_usable_size(b->p), b->n);
            if (op < 5) {
                free(b->p);
                b->p = NULL;
            } else if (op < 8) {
                size_t n = some_size();
                unsigned char *q = realloc(b->p, n);
                CHECK(q || n == 0, "step %d: realloc to %zu failed", step, n);
                size_t keep = n < b->n ? n : b->n;
                b->p = q;
                CHECK(!q || intact(b, keep), "step %d: realloc lost data", step);
                b->n = n;
                b->seed = (unsigned char)next();
                if (q)
                    fill(b);
            }
            continue;
        }
        b->n = some_size();
        b->seed = (unsigned char)next();
        size_t align = 16;
        if (op < 5) {
            b->p = malloc(b->n);
        } else if (op < 7) {
            b->p = calloc(1, b->n);
            CHECK(b->p, "step %d: calloc failed", step);
            for (size_t i = 0; i < b->n; i++)
                CHECK(b->p[i] == 0, "step %d: calloc(%zu) byte %zu is %d", step, b->n, i,
                      b->p[i]);
            zero_checked += b->n;
        } else if (op < 8) {
            align = (size_t)1 << (5 + next() % 12); /* 32 B .. 64 KiB */
            void *q = NULL;
            CHECK(posix_memalign(&q, align, b->n) == 0, "step %d: posix_memalign", step);
            b->p = q;
        } else if (op < 9) {
            align = (size_t)1 << (4 + next() % 10);
            b->p = aligned_alloc(align, b->n);
        } else {
            align = 4096;
            b->p = valloc(b->n);
        }
        CHECK(b->p, "step %d: allocating %zu failed", step, b->n);
        CHECK((uintptr_t)b->p % align == 0, "step %d: %p not aligned to %zu", step,
              (void *)b->p, align);
        CHECK(inside(b->p), "step %d: %p outside the slice", step, (void *)b->p);
        fill(b);
    }
    CHECK(zero_checked > 0, "calloc never ran");
    for (int i = 0; i < SLOTS; i++) {
        CHECK(!blocks[i].p || intact(&blocks[i], blocks[i].n), "block %d changed at the end", i);
        free(blocks[i].p);
        blocks[i].p = NULL;
    }
    printf("ok random_mix\n");
}

static void test_space_comes_back(void)
{
    /* After everything large was freed the slice's top is back near its start:
     * one block of most of the slice fits inside it again. */
    char *p = malloc(SLICE - (8 << 20));
    CHECK(p && inside(p), "a block of most of the slice did not fit after freeing");
    memset(p, 1, 4096);
    free(p);
    printf("ok space_comes_back\n");
}

static void test_full_slice_falls_back(void)
{
    char *a = malloc(SLICE - (1 << 20));
    char *b = malloc(4 << 20);
    CHECK(a && inside(a), "the first big block is not in the slice");
    CHECK(b && !inside(b), "a block past the slice's end must come from glibc");
    memset(b, 2, 4 << 20);
    char *c = realloc(b, 8 << 20);
    CHECK(c && c[0] == 2 && c[(4 << 20) - 1] == 2, "realloc of a glibc block lost data");
    free(c);
    free(a);
    printf("ok full_slice_falls_back\n");
}

static void test_calloc_after_reuse(void)
{
    static const size_t sizes[] = {300, 70000, 600000, 3000000};
    for (int round = 0; round < 48; round++) {
        size_t n = sizes[round % 4];
        unsigned char *p = malloc(n);
        memset(p, 0xAB, n);
        free(p);
        unsigned char *q = calloc(n, 1);
        CHECK(q, "calloc failed");
        for (size_t i = 0; i < n; i++)
            CHECK(q[i] == 0, "round %d: calloc byte %zu is 0x%x", round, i, q[i]);
        free(q);
    }
    /* blocks freed in address order, each merging into a growing free span,
     * then the span handed out again by calloc */
    unsigned char *run[40];
    for (int i = 0; i < 40; i++) {
        run[i] = malloc(50000);
        memset(run[i], 0xCD, 50000);
    }
    unsigned char *guard = malloc(100); /* keeps the span off the top */
    for (int i = 0; i < 40; i++)
        free(run[i]);
    unsigned char *z = calloc(1, 40 * 50000 - 64);
    CHECK(z, "calloc of the freed span failed");
    for (size_t i = 0; i < 40 * 50000 - 64; i++)
        CHECK(z[i] == 0, "calloc over a merged span: byte %zu is 0x%x", i, z[i]);
    free(z);
    free(guard);
    volatile size_t huge = SIZE_MAX / 2;
    void *volatile big = calloc(huge, 4); /* volatile: clang drops unused allocations */
    CHECK(big == NULL, "calloc overflow was not refused");
    printf("ok calloc_after_reuse\n");
}

static void test_realloc_in_place(void)
{
    /* the last block grows where it is; a big shrink gives its tail back */
    char *p = malloc(100000);
    memset(p, 3, 100000);
    char *q = realloc(p, 400000);
    CHECK(q == p, "the last block did not grow in place");
    CHECK(q[99999] == 3, "growing lost data");
    char *r = realloc(q, 50000);
    CHECK(r == q && r[49999] == 3, "shrinking moved or lost the block");
    char *s = malloc(200000); /* fits in the freed tail */
    CHECK(s > r && s < r + 400000, "the freed tail was not reused");
    free(s);
    free(r);
    CHECK(realloc(NULL, 10) != NULL, "realloc(NULL) failed");
    void *t = malloc(10);
    void *volatile gone = realloc(t, 0);
    CHECK(gone == NULL, "realloc(p, 0) did not free");
    free(NULL);
    printf("ok realloc_in_place\n");
}

static void test_fork_child_is_private(void)
{
    int *mine = malloc(64 * sizeof(int));
    for (int i = 0; i < 64; i++)
        mine[i] = i;
    pid_t pid = fork();
    if (pid == 0) {
        /* the child's writes and allocations must not reach the parent */
        for (int i = 0; i < 64; i++)
            mine[i] = -1;
        free(mine);
        void *x = malloc(1000);
        int bad = x == NULL || inside(x);
        free(x);
        _exit(bad);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the forked child allocated inside the parent's slice");
    for (int i = 0; i < 64; i++)
        CHECK(mine[i] == i, "the child's writes reached the parent");
    void *y = malloc(64 * sizeof(int));
    CHECK(y != mine && inside(y), "the parent's heap state was changed by the child");
    free(y);
    free(mine);
    printf("ok fork_child_is_private\n");
}

/* Threads allocating and freeing at once: the lock (skipped while the process
 * is single-threaded) must keep every block whole. */
static void *churn(void *arg)
{
    uintptr_t id = (uintptr_t)arg, bad = 0, r = 0x9E3779B97F4A7C15ull * (id + 1);
    unsigned char *mine[64] = {0};
    size_t len[64] = {0};
    for (int step = 0; step < 50000; step++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        int k = (int)(r % 64);
        if (mine[k]) {
            for (size_t i = 0; i < len[k]; i++)
                bad += mine[k][i] != (unsigned char)(id + k);
            free(mine[k]);
            mine[k] = NULL;
        } else {
            len[k] = (size_t)(r >> 8) % (r % 7 ? 500 : 50000);
            mine[k] = malloc(len[k]);
            if (!mine[k])
                return (void *)1;
            memset(mine[k], (int)(id + k), len[k]);
        }
    }
    for (int k = 0; k < 64; k++)
        free(mine[k]);
    return (void *)bad;
}

static void test_threads(void)
{
    pthread_t th[4];
    for (uintptr_t i = 0; i < 4; i++)
        CHECK(pthread_create(&th[i], NULL, churn, (void *)i) == 0, "pthread_create");
    uintptr_t bad = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(th[i], &r);
        bad += (uintptr_t)r;
    }
    CHECK(bad == 0, "threads saw %lu bytes of their blocks change", (unsigned long)bad);
    printf("ok threads\n");
}

static void fork_child(void)
{
    etc_smp_heap_detach_child();
}

int main(void)
{
    char *before = malloc(1000); /* from glibc: nothing attached yet */
    strcpy(before, "before");
    lo = mmap(NULL, SLICE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (lo == MAP_FAILED)
        return 2;
    hi = lo + SLICE;
    etc_smp_heap_attach(lo, SLICE);
    pthread_atfork(etc_smp_heap_fork_prepare, etc_smp_heap_fork_parent, fork_child);
    if (inside(before) || strcmp(before, "before") != 0) {
        printf("FAIL a block from before the slice\n");
        failures++;
    }
    before = realloc(before, 5000); /* still glibc's: realloc keeps it there */
    free(before);
    /* stdout's buffer, allocated at the first output, lives on to the end: make
     * that now, at the slice's start, not in the middle of what is freed later */
    printf("attached\n");
    test_random_mix();
    test_space_comes_back();
    test_full_slice_falls_back();
    test_calloc_after_reuse();
    test_realloc_in_place();
    test_fork_child_is_private();
    test_threads(); /* last: the process is not single-threaded after it */
    printf("done %d\n", failures);
    return failures != 0;
}
