/* etcpre's cursor walk (cursor_walk.c): the interface etcpre/passes/cursor_walk.py
   mirrors with ctypes. */

#ifndef ETC_CURSOR_WALK_H
#define ETC_CURSOR_WALK_H

#include <stddef.h>
#include <stdint.h>

/* libclang's, as clang-c/Index.h declares them */
typedef struct {
    int kind;
    int xdata;
    const void *data[3];
} CXCursor;

typedef void *CXFile;

/* What the walk knows of the main file: its handle, where its locations lie in
   clang's encoding ([base, limit]; base > limit when that is not known), and the
   edits that made clang's view of it from the working text (text.py's EditMap, its
   to_old: offsets the walk hands back are the working text's). */
struct etc_walk_file {
    CXFile handle;
    unsigned base;
    unsigned limit;
    unsigned global_address_space;
    const int32_t *edit_new_starts; /* ascending */
    const int32_t *edit_lengths;    /* of the inserted text */
    const int32_t *edit_old_starts;
    const int32_t *edit_old_ends;
    size_t edits;
};

/* etc_walk_node.flags */
enum {
    ETC_WALK_EXPRESSION = 1u << 0,
    ETC_WALK_POINTERISH = 1u << 1,     /* its type: a pointer, array, typedef or elaborated */
    ETC_WALK_GLOBAL_POINTER = 1u << 2, /* canonically a GLOBAL pointer */
    ETC_WALK_ARRAY = 1u << 3,          /* canonically an array */
    ETC_WALK_GLOBAL_ARRAY = 1u << 4,   /* ... in or of the GLOBAL address space */
    ETC_WALK_GLOBAL_OBJECT = 1u << 5,  /* itself in the GLOBAL address space */
    ETC_WALK_IN_MAIN = 1u << 6,        /* its location is in the main file, no macro's */
    ETC_WALK_WANTED = 1u << 7,         /* the Python side must look at it */
};

struct etc_walk_node {
    CXCursor cursor;
    int32_t kind;
    int32_t parent;     /* index; -1 for the top */
    int32_t kids;       /* index of its first child in etc_walk_tree.kids */
    int32_t kid_count;
    int32_t start;      /* its extent in the main file (working text); -1: elsewhere */
    int32_t end;
    int32_t ref_kind;   /* a DECL_REF_EXPR: the kind of what it refers to (0: nothing) */
    uint32_t flags;
    CXCursor ref;       /* ... and what it refers to */
    /* a cursor not written where it stands in the main file (a macro's), when the
       file has macro uses: the main-file offsets of the macro use it was expanded from
       and of where it was spelled; -1: not in the main file */
    int32_t expansion;
    int32_t spelling;
};

/* A function's cursors in the order clang_view's walk visits them: a cursor, then its
   children last first (a stack's order). */
struct etc_walk_tree {
    struct etc_walk_node *nodes;
    size_t count;
    int32_t *kids; /* the children of each node in their order, as node indices */
    size_t kid_total;
    int32_t *wanted; /* the nodes flagged WANTED, in order */
    size_t wanted_count;
};

/* Looks the libclang functions used up in the library of a dlopen handle; returns the
   name of the first missing one, or NULL when all are there. */
const char *etc_walk_bind(void *handle);

/* The value of an enum constant the walk uses, by its name in clang.cindex (`cursor`
   1: a CursorKind, 0: a TypeKind); -1 for a name not used. */
int etc_walk_constant(int cursor, const char *name);

/* Walks `top` and its descendants into `tree` (zeroed by the caller, emptied with
   etc_walk_free). `threaded`: `top` is a threaded function; `macros`: the main file
   has macro uses. Returns 0, or -1 when memory ran out. */
int etc_walk(const struct etc_walk_file *file, CXCursor top, int threaded, int macros,
             struct etc_walk_tree *tree);

void etc_walk_free(struct etc_walk_tree *tree);

/* clang's evaluation of a constant expression (clang_Cursor_Evaluate), in one call */
struct etc_walk_value {
    int kind; /* CXEvalResultKind; 0: not a constant */
    int is_unsigned;
    long long as_signed;
    unsigned long long as_unsigned;
    double as_double;
};

void etc_walk_evaluate(CXCursor cursor, struct etc_walk_value *value);

#endif
