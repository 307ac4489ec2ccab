/* Plain C: etc.h is there without an #include (NODE_ID, NUM_NODES, OWNER_OF, ...). */
#include "vec.h"

double *GLOBAL last_result;

double local_sum(const double *v, int n)
{
    double s = 0;
    int i;
    for (i = 0; i < n; i++)
        s += v[i];
    return s + 0 * NODE_ID * NUM_NODES;
}

int owner_of_data(vec_t v)
{
    return OWNER_OF(v.data);
}
