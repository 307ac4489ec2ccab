/* hand_fib.c: fib hand-translated to the runtime's ABI, the way etcpre's output
 * calls it (thesis Fig. 2.15), so that the runtime is tested without the
 * translator (as OpenCilk tests its runtime with a hand-compiled fib).
 *
 *   THREADED fib(SPTR done, int n, int *GLOBAL result)
 *   { SLOT SYNC_SLOTS[1]; int r1, r2;
 *     if (n < 2) { DATA_RSYNC_L(n, result, done); END_FUNCTION(); }
 *     INIT_SYNC(0, 2, 2, 1);
 *     TOKEN(fib, SLOT_ADR(0), n - 1, TO_GLOBAL(&r1));
 *     TOKEN(fib, SLOT_ADR(0), n - 2, TO_GLOBAL(&r2));
 *     END_THREAD();
 *   THREAD_1:
 *     DATA_RSYNC_L(r1 + r2, result, done); END_FUNCTION(); }
 */
#include <stdio.h>
#include <stdlib.h>

#include "etc.h"

typedef struct _fib_P {
    etc_ret _ret;
    SPTR done;
    int n;
    int *result;
} _fib_P;

typedef struct _fib_F {
    ETC_FRAME_HEADER
    etc_slot _slots[1];
    etc_ret _ret;
    SPTR done;
    int n;
    int *result;
    int r1, r2;
} _fib_F;

static void _fib_0(void *vpp);
static void _fib_1(void *v);

static void _fib_0(void *vpp)
{
    _fib_P *pp = vpp;
    _fib_F *fp = etc_frame_alloc(sizeof *fp);
    etc_frame_check_init(fp, "fib", 1);
    fp->_ret = pp->_ret;
    fp->done = pp->done;
    fp->n = pp->n;
    fp->result = pp->result;
    etc_param_free(pp, sizeof *pp);
    if (fp->n < 2) {
        etc_data_sync_l(fp->n, fp->result, fp->done);
        etc_frame_free(fp, sizeof *fp);
        return;
    }
    etc_init_sync(&fp->_slots[0], 2, 2, _fib_1, fp);
    for (int k = 1; k <= 2; k++) {
        _fib_P *c = etc_param_alloc(sizeof *c);
        c->_ret = (etc_ret){.ip = 0, .fp = 0};
        c->done = ETC_TO_GLOBAL(&fp->_slots[0]);
        c->n = fp->n - k;
        c->result = ETC_TO_GLOBAL(k == 1 ? &fp->r1 : &fp->r2);
        etc_token(_fib_0, c, sizeof *c);
    }
}

static void _fib_1(void *v)
{
    _fib_F *fp = v;
    etc_data_sync_l(fp->r1 + fp->r2, fp->result, fp->done);
    etc_frame_free(fp, sizeof *fp);
}

/* MAIN: start fib(n) with a slot of its own, print when it fires. */
typedef struct {
    ETC_FRAME_HEADER
    etc_slot _slots[1];
    int n, result;
} main_F;

static void main_1(void *v)
{
    main_F *fp = v;
    printf("fib(%d) = %d\n", fp->n, fp->result);
    etc_frame_free(fp, sizeof *fp);
}

void etc_user_main(int argc, char **argv)
{
    main_F *fp = etc_frame_alloc(sizeof *fp);
    etc_frame_check_init(fp, "MAIN", 1);
    fp->n = argc > 1 ? atoi(argv[1]) : 20;
    etc_init_sync(&fp->_slots[0], 1, 1, main_1, fp);
    _fib_P *c = etc_param_alloc(sizeof *c);
    c->_ret = (etc_ret){.ip = 0, .fp = 0};
    c->done = ETC_TO_GLOBAL(&fp->_slots[0]);
    c->n = fp->n;
    c->result = ETC_TO_GLOBAL(&fp->result);
    etc_token(_fib_0, c, sizeof *c);
}
