/* A header shared by several .tc files: threaded prototypes and GLOBAL pointers. */
#ifndef SHAPES_H
#define SHAPES_H
#define SIDES 4
typedef struct { int w, h; } box;
THREADED area(SPTR done, box b, int *GLOBAL out);
int perimeter(box b);
#endif
