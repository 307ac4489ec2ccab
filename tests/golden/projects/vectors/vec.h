/* GLOBAL in a header means what it means in a .tc file: struct fields, typedefs,
 * globals, plain C prototypes and THREADED prototypes. */
#ifndef VEC_H
#define VEC_H

typedef struct {
    double *GLOBAL data; /* the elements, on the node that owns them */
    int n;
} vec_t;

typedef long *GLOBAL long_gptr;

extern double *GLOBAL last_result;

double local_sum(const double *v, int n);
int owner_of_data(vec_t v);

THREADED vec_sum(SPTR done, vec_t v, double *GLOBAL out);
THREADED vec_fill(SPTR done, vec_t v, double first, long_gptr count);

#endif
