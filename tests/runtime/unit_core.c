/* unit_core.c: the runtime core's local semantics, checked directly through the
 * ABI (no translator): ready-queue order, RETURN's continuation first, the token
 * deque (LIFO locally), free-list reuse, sync slot counting and reset,
 * INCR_SYNC, GLOBAL pointer operations. Prints "ok NAME" per check and "done";
 * a failed check prints "FAIL ..." and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etc.h"

static int failures;
static char order[64];
static int norder;

#define CHECK(name, cond)                                                   \
    do {                                                                    \
        if (cond)                                                           \
            printf("ok %s\n", name);                                        \
        else {                                                              \
            printf("FAIL %s (%s:%d)\n", name, __FILE__, __LINE__);          \
            failures++;                                                     \
        }                                                                   \
    } while (0)

/* A frame whose thread records its letter (threads always run on frames). */
typedef struct {
    ETC_FRAME_HEADER
    char letter;
} mark_F;

static void mark(void *v)
{
    mark_F *fp = v;
    order[norder++] = fp->letter;
    etc_frame_free(fp, sizeof *fp);
}

static void *mark_frame(char letter)
{
    mark_F *fp = etc_frame_alloc(sizeof *fp);
    etc_frame_check_init(fp, "mark", 0);
    fp->letter = letter;
    return fp;
}

typedef struct {
    etc_ret _ret;
    int tag;
} tok_P;

static void tok_0(void *vpp)
{
    tok_P *pp = vpp;
    int tag = pp->tag;
    etc_param_free(pp, sizeof *pp);
    if (tag != 'C') {
        order[norder++] = (char)tag;
        return;
    }
    /* the checker token was pushed first, so it runs last */
    order[norder] = 0;
    CHECK("local tokens run newest first (LIFO), after every ready thread",
          strcmp(order, "rabc321") == 0);
    printf("done %d\n", failures);
}

static void token(int tag)
{
    tok_P *p = etc_param_alloc(sizeof *p);
    p->_ret = (etc_ret){.ip = 0, .fp = 0};
    p->tag = tag;
    etc_token(tok_0, p, sizeof *p);
}

typedef struct {
    ETC_FRAME_HEADER
    etc_slot _slots[2];
    int fired;
} slot_F;

static void count_fire(void *v)
{
    ((slot_F *)v)->fired++;
}

/* Runs after the marks below (FIFO): checks their order. */
static void check_ready_order(void *v)
{
    etc_frame_free(v, sizeof(mark_F));
    CHECK("ready queue is FIFO, RETURN's continuation at its head",
          norder == 4 && strncmp(order, "rabc", 4) == 0);
}

void etc_user_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    /* free lists: a freed block is the next one handed out, per size class */
    void *a = etc_frame_alloc(40);
    etc_block_free(a, 40);
    void *b = etc_frame_alloc(48);
    CHECK("free list reuses a block of the same size class", a == b);
    void *c = etc_frame_alloc(100);
    CHECK("other size classes use other blocks", c != b);
    etc_block_free(b, 48);
    etc_block_free(c, 100);
    void *big = etc_frame_alloc(1 << 20); /* beyond the classes: malloc */
    memset(big, 0, 1 << 20);
    etc_block_free(big, 1 << 20);

    /* sync slots */
    slot_F *f = etc_frame_alloc(sizeof *f);
    etc_frame_check_init(f, "unit", 2);
    f->fired = 0;
    etc_init_sync(&f->_slots[0], 3, 2, count_fire, f);
    etc_sync(&f->_slots[0]);
    etc_sync(&f->_slots[0]);
    CHECK("slot does not fire before its count", f->fired == 0 &&
                                                   etc_rts.rq.tail == etc_rts.rq.head);
    etc_sync(&f->_slots[0]);
    CHECK("slot fires at zero and resets", etc_rts.rq.tail - etc_rts.rq.head == 1 &&
                                           f->_slots[0].cnt == 2);
    etc_init_sync(&f->_slots[1], 1, 1, count_fire, f);
    etc_incr_sync(&f->_slots[1], 2);
    etc_incr_sync(&f->_slots[1], -3);
    CHECK("INCR_SYNC adds (also negative) and fires at zero",
          etc_rts.rq.tail - etc_rts.rq.head == 2 && f->_slots[1].cnt == 1);
    /* drop the two closures queued by the slot checks; the frame stays alive */
    etc_rts.rq.head = etc_rts.rq.tail;

    /* GLOBAL pointers */
    int x = 7, arr[4] = {1, 2, 3, 4};
    int *g = ETC_TO_GLOBAL(&x);
    CHECK("TO_GLOBAL tags with this node", ETC_OWNER_OF(g) == ETC_NODE_ID && ETC_IS_OWNER(g));
    CHECK("TO_LOCAL gives the address back", ETC_TO_LOCAL(g) == &x);
    int *ga = ETC_TO_GLOBAL(arr);
    CHECK("arithmetic keeps the owner", ETC_OWNER_OF(ga + 3) == ETC_NODE_ID &&
                                        ETC_TO_LOCAL(ga + 3) == &arr[3] && (ga + 3) - ga == 3);
    CHECK("comparison works", ga < ga + 1 && ga + 2 == ETC_TO_GLOBAL(&arr[2]));
    CHECK("direct dereference of a local GLOBAL pointer",
          *ETC_DEREF(ga + 2, "unit", __FILE__, __LINE__) == 3);
    int *other = ETC_MAKE_GPTR(ETC_NUM_NODES - 1, &x);
    CHECK("MAKE_GPTR names the node", ETC_OWNER_OF(other) == ETC_NUM_NODES - 1 &&
                                      ETC_TO_LOCAL(other) == &x);
    CHECK("a null GLOBAL pointer is local and null", ETC_OWNER_OF((int *)0) == ETC_NODE_ID &&
                                                       ETC_TO_LOCAL((int *)0) == NULL);
    CHECK("GLOBAL pointers are pointer-sized", sizeof(int *GLOBAL) == sizeof(int *));

    /* the ready queue and RETURN: spawn a, b, c, then a continuation; tokens
     * C (the checker, first), 1, 2, 3 */
    norder = 0;
    token('C');
    token('1');
    token('2');
    token('3');
    etc_spawn(mark, mark_frame('a'));
    etc_spawn(mark, mark_frame('b'));
    etc_spawn(mark, mark_frame('c'));
    etc_return((etc_ret){.ip = mark, .fp = mark_frame('r')});
    etc_spawn(check_ready_order, mark_frame('x'));
    etc_frame_free(f, sizeof *f);
}
