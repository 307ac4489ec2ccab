/* The clang view's walk over a function's cursors, in C (etcpre/passes/clang_view.py).

   Walking a body cursor by cursor from Python (a ctypes callback per child, a few
   ctypes calls per cursor) cost most of the clang view's time. Here one call walks
   a whole function and fills an array with what the Python side decides on: each
   cursor's kind, parent, children, main-file extent, the class of its type and the
   kind of what it refers to, and marks the few cursors Python must look at.

   The functions are those of the libclang.so the Python binding loaded (its dlopen
   handle, from `clang.cindex.conf.lib._handle`): the PyPI wheel ships no headers, so
   the few C API types and enums used are declared here, as Index.h has them (the
   libclang C API is ABI-stable). */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "cursor_walk.h"

/* ---- the libclang C API, as in clang-c/Index.h */

typedef struct {
    int kind;
    void *data[2];
} CXType;

typedef struct {
    const void *ptr_data[2];
    unsigned int_data;
} CXSourceLocation;

typedef struct {
    const void *ptr_data[2];
    unsigned begin_int_data;
    unsigned end_int_data;
} CXSourceRange;

typedef void *CXClientData;
typedef int (*CXCursorVisitor)(CXCursor cursor, CXCursor parent, CXClientData data);

enum { CXChildVisit_Continue = 1 };

enum { CXEval_Int = 1, CXEval_Float = 2 };

enum {
    CXCursor_FunctionDecl = 8,
    CXCursor_VarDecl = 9,
    CXCursor_ParmDecl = 10,
    CXCursor_UnexposedExpr = 100,
    CXCursor_DeclRefExpr = 101,
    CXCursor_CallExpr = 103,
    CXCursor_IntegerLiteral = 106,
    CXCursor_FloatingLiteral = 107,
    CXCursor_StringLiteral = 109,
    CXCursor_CharacterLiteral = 110,
    CXCursor_LabelStmt = 201,
    CXCursor_ReturnStmt = 214,
};

enum {
    CXType_Invalid = 0,
    CXType_Pointer = 101,
    CXType_Typedef = 107,
    CXType_ConstantArray = 112,
    CXType_IncompleteArray = 114,
    CXType_VariableArray = 115,
    CXType_DependentSizedArray = 116,
    CXType_Elaborated = 119,
};

/* The enum values this file relies on, by clang.cindex's names: a test compares
   them with the binding's. */
struct etc_walk_constant {
    const char *name;
    int value;
};

static const struct etc_walk_constant cursor_kinds[] = {
    {"FUNCTION_DECL", CXCursor_FunctionDecl},
    {"VAR_DECL", CXCursor_VarDecl},
    {"PARM_DECL", CXCursor_ParmDecl},
    {"UNEXPOSED_EXPR", CXCursor_UnexposedExpr},
    {"DECL_REF_EXPR", CXCursor_DeclRefExpr},
    {"CALL_EXPR", CXCursor_CallExpr},
    {"INTEGER_LITERAL", CXCursor_IntegerLiteral},
    {"FLOATING_LITERAL", CXCursor_FloatingLiteral},
    {"STRING_LITERAL", CXCursor_StringLiteral},
    {"CHARACTER_LITERAL", CXCursor_CharacterLiteral},
    {"LABEL_STMT", CXCursor_LabelStmt},
    {"RETURN_STMT", CXCursor_ReturnStmt},
    {NULL, 0},
};

static const struct etc_walk_constant type_kinds[] = {
    {"INVALID", CXType_Invalid},
    {"POINTER", CXType_Pointer},
    {"TYPEDEF", CXType_Typedef},
    {"CONSTANTARRAY", CXType_ConstantArray},
    {"INCOMPLETEARRAY", CXType_IncompleteArray},
    {"VARIABLEARRAY", CXType_VariableArray},
    {"DEPENDENTSIZEDARRAY", CXType_DependentSizedArray},
    {"ELABORATED", CXType_Elaborated},
    {NULL, 0},
};

/* ---- the functions used, looked up in the binding's library */

static struct {
    unsigned (*visit_children)(CXCursor, CXCursorVisitor, CXClientData);
    unsigned (*is_expression)(int);
    unsigned (*is_reference)(int);
    int (*cursor_is_null)(CXCursor);
    CXCursor (*referenced)(CXCursor);
    CXSourceLocation (*location)(CXCursor);
    CXSourceRange (*extent)(CXCursor);
    CXSourceLocation (*range_start)(CXSourceRange);
    CXSourceLocation (*range_end)(CXSourceRange);
    void (*file_location)(CXSourceLocation, CXFile *, unsigned *, unsigned *, unsigned *);
    CXType (*cursor_type)(CXCursor);
    CXType (*canonical)(CXType);
    CXType (*pointee)(CXType);
    CXType (*element)(CXType);
    unsigned (*address_space)(CXType);
    void (*expansion_location)(CXSourceLocation, CXFile *, unsigned *, unsigned *, unsigned *);
    void *(*evaluate)(CXCursor);
    int (*eval_kind)(void *);
    unsigned (*eval_is_unsigned)(void *);
    long long (*eval_signed)(void *);
    unsigned long long (*eval_unsigned)(void *);
    double (*eval_double)(void *);
    void (*eval_dispose)(void *);
} api;

/* dlsym hands back a data pointer; C11 has no conversion from it to a function
   pointer, so the address is copied (what POSIX specifies dlsym's result allows). */
static int bind(void *handle, const char *name, void *slot, size_t size)
{
    void *address = dlsym(handle, name);
    if (address == NULL)
        return -1;
    memcpy(slot, &address, size);
    return 0;
}

#define BIND(field, name) bind(handle, name, &api.field, sizeof api.field)

const char *etc_walk_bind(void *handle)
{
    static const char *missing;
    missing = NULL;
#define NEED(field, name) if (!missing && BIND(field, name) != 0) missing = name
    NEED(visit_children, "clang_visitChildren");
    NEED(is_expression, "clang_isExpression");
    NEED(is_reference, "clang_isReference");
    NEED(cursor_is_null, "clang_Cursor_isNull");
    NEED(referenced, "clang_getCursorReferenced");
    NEED(location, "clang_getCursorLocation");
    NEED(extent, "clang_getCursorExtent");
    NEED(range_start, "clang_getRangeStart");
    NEED(range_end, "clang_getRangeEnd");
    NEED(file_location, "clang_getFileLocation");
    NEED(cursor_type, "clang_getCursorType");
    NEED(canonical, "clang_getCanonicalType");
    NEED(pointee, "clang_getPointeeType");
    NEED(element, "clang_getElementType");
    NEED(address_space, "clang_getAddressSpace");
    NEED(expansion_location, "clang_getExpansionLocation");
    NEED(evaluate, "clang_Cursor_Evaluate");
    NEED(eval_kind, "clang_EvalResult_getKind");
    NEED(eval_is_unsigned, "clang_EvalResult_isUnsignedInt");
    NEED(eval_signed, "clang_EvalResult_getAsLongLong");
    NEED(eval_unsigned, "clang_EvalResult_getAsUnsigned");
    NEED(eval_double, "clang_EvalResult_getAsDouble");
    NEED(eval_dispose, "clang_EvalResult_dispose");
#undef NEED
    return missing;
}

int etc_walk_constant(int cursor, const char *name)
{
    for (const struct etc_walk_constant *c = cursor ? cursor_kinds : type_kinds; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c->value;
    return -1;
}

/* ---- the walk */

struct pending {
    CXCursor cursor;
    int32_t parent;
    int32_t kid_slot; /* where its index goes in kids (-1 for the top) */
};

struct walk {
    struct etc_walk_tree *tree;
    size_t node_cap, kid_cap, wanted_cap;
    struct pending *stack;
    size_t depth, stack_cap;
    CXCursor *children; /* of the cursor being expanded */
    size_t child_count, child_cap;
    int failed;
};

static int grow(void **array, size_t *cap, size_t need, size_t item)
{
    if (need <= *cap)
        return 0;
    size_t cap2 = *cap ? *cap : 256;
    while (cap2 < need)
        cap2 *= 2;
    void *bigger = realloc(*array, cap2 * item);
    if (bigger == NULL)
        return -1;
    *array = bigger;
    *cap = cap2;
    return 0;
}

static int append_child(CXCursor child, CXCursor parent, CXClientData data)
{
    (void)parent;
    struct walk *w = data;
    if (grow((void **)&w->children, &w->child_cap, w->child_count + 1, sizeof *w->children)) {
        w->failed = 1;
        return 0; /* CXChildVisit_Break */
    }
    w->children[w->child_count++] = child;
    return CXChildVisit_Continue;
}

static int in_main(const struct etc_walk_file *file, unsigned raw)
{
    return file->base <= raw && raw <= file->limit;
}

/* A view offset as the working text's (EditMap.to_old): a place in an inserted text
   maps to the start of what it replaced. */
static int32_t to_working(const struct etc_walk_file *file, int32_t view)
{
    size_t low = 0, high = file->edits; /* the first edit starting after `view` */
    while (low < high) {
        size_t mid = low + (high - low) / 2;
        if (file->edit_new_starts[mid] <= view)
            low = mid + 1;
        else
            high = mid;
    }
    if (low == 0)
        return view;
    size_t i = low - 1;
    int32_t new_start = file->edit_new_starts[i], length = file->edit_lengths[i];
    if (view < new_start + length)
        return file->edit_old_starts[i];
    return file->edit_old_ends[i] + (view - new_start - length);
}

/* A location's offset in the main file, or -1 when it is elsewhere: where it was
   written (clang_getFileLocation), or with `expansion` the macro use it was expanded
   from (clang_getExpansionLocation). */
static int32_t main_offset(const struct etc_walk_file *file, CXSourceLocation loc, int expansion)
{
    if (in_main(file, loc.int_data))
        return (int32_t)(loc.int_data - file->base);
    CXFile handle = NULL;
    unsigned offset = 0;
    if (expansion)
        api.expansion_location(loc, &handle, NULL, NULL, &offset);
    else
        api.file_location(loc, &handle, NULL, NULL, &offset);
    return handle != NULL && handle == file->handle ? (int32_t)offset : -1;
}

static int32_t main_working_offset(const struct etc_walk_file *file, CXSourceLocation loc,
                                   int expansion)
{
    int32_t view = main_offset(file, loc, expansion);
    return view < 0 ? -1 : to_working(file, view);
}

static void main_extent(const struct etc_walk_file *file, CXCursor cursor, struct etc_walk_node *node)
{
    CXSourceRange range = api.extent(cursor);
    node->start = node->end = -1;
    if (in_main(file, range.begin_int_data) && in_main(file, range.end_int_data)) {
        node->start = to_working(file, (int32_t)(range.begin_int_data - file->base));
        node->end = to_working(file, (int32_t)(range.end_int_data - file->base));
        return;
    }
    int32_t start = main_offset(file, api.range_start(range), 0);
    if (start < 0)
        return;
    int32_t end = main_offset(file, api.range_end(range), 0);
    if (end < 0)
        return;
    node->start = to_working(file, start);
    node->end = to_working(file, end);
}

static int is_array(int type_kind)
{
    return type_kind == CXType_ConstantArray || type_kind == CXType_IncompleteArray ||
           type_kind == CXType_VariableArray || type_kind == CXType_DependentSizedArray;
}

/* The class of an expression's type, as clang_view's _Type says it. */
static uint32_t type_flags(const struct etc_walk_file *file, CXType type)
{
    unsigned global = file->global_address_space;
    uint32_t flags = 0;
    CXType canonical = api.canonical(type);
    if (type.kind == CXType_Pointer || type.kind == CXType_Elaborated ||
        type.kind == CXType_Typedef || is_array(type.kind))
        flags |= ETC_WALK_POINTERISH;
    if (canonical.kind == CXType_Pointer && api.address_space(api.pointee(canonical)) == global)
        flags |= ETC_WALK_GLOBAL_POINTER;
    if (is_array(canonical.kind)) {
        flags |= ETC_WALK_ARRAY;
        if (api.address_space(canonical) == global ||
            api.address_space(api.element(canonical)) == global)
            flags |= ETC_WALK_GLOBAL_ARRAY;
    }
    if (type.kind != CXType_Invalid && api.address_space(type) == global)
        flags |= ETC_WALK_GLOBAL_OBJECT;
    return flags;
}

static int is_leaf(int kind)
{
    return api.is_reference(kind) || kind == CXCursor_DeclRefExpr ||
           kind == CXCursor_IntegerLiteral || kind == CXCursor_FloatingLiteral ||
           kind == CXCursor_CharacterLiteral || kind == CXCursor_StringLiteral;
}

/* Whether clang_view's walk does anything with this cursor (a superset is fine: the
   Python side decides again on what it is given). `threaded`: the function is
   threaded; `macros`: the main file has macro uses (a cursor a macro's body produced
   may then need its use expanded). */
static int wanted(const struct etc_walk_node *node, int threaded, int macros)
{
    int kind = node->kind;
    uint32_t flags = node->flags;
    int from_macro = macros && !(flags & ETC_WALK_IN_MAIN);
    if (flags & ETC_WALK_EXPRESSION) {
        if (kind == CXCursor_IntegerLiteral || kind == CXCursor_FloatingLiteral ||
            kind == CXCursor_CharacterLiteral)
            return 0;
        if ((flags & ETC_WALK_POINTERISH) &&
            (flags & (ETC_WALK_GLOBAL_POINTER | ETC_WALK_ARRAY)) && node->start >= 0)
            return 1;
        if (kind == CXCursor_CallExpr)
            return 1;
        if (kind == CXCursor_DeclRefExpr)
            return node->ref_kind == CXCursor_FunctionDecl ||
                   (from_macro && (node->ref_kind == CXCursor_VarDecl ||
                                   node->ref_kind == CXCursor_ParmDecl));
        return from_macro && (flags & ETC_WALK_GLOBAL_OBJECT);
    }
    if (kind == CXCursor_VarDecl)
        return threaded;
    return threaded && from_macro &&
           (kind == CXCursor_ParmDecl || kind == CXCursor_LabelStmt || kind == CXCursor_ReturnStmt);
}

static int describe(struct walk *w, const struct etc_walk_file *file, struct pending item,
                    int threaded, int macros)
{
    struct etc_walk_tree *tree = w->tree;
    if (grow((void **)&tree->nodes, &w->node_cap, tree->count + 1, sizeof *tree->nodes))
        return -1;
    int32_t index = (int32_t)tree->count++;
    struct etc_walk_node *node = &tree->nodes[index];
    CXCursor cursor = item.cursor;
    memset(node, 0, sizeof *node);
    node->cursor = cursor;
    node->kind = cursor.kind;
    node->parent = item.parent;
    node->start = node->end = node->expansion = node->spelling = -1;
    if (item.kid_slot >= 0)
        tree->kids[item.kid_slot] = index;
    CXSourceLocation location = api.location(cursor);
    if (in_main(file, location.int_data))
        node->flags |= ETC_WALK_IN_MAIN;
    if (api.is_expression(cursor.kind)) {
        node->flags |= ETC_WALK_EXPRESSION | type_flags(file, api.cursor_type(cursor));
        main_extent(file, cursor, node);
        if (cursor.kind == CXCursor_DeclRefExpr) {
            CXCursor target = api.referenced(cursor);
            if (!api.cursor_is_null(target)) {
                node->ref_kind = target.kind;
                node->ref = target;
            }
        }
    }
    if (wanted(node, threaded, macros)) {
        node->flags |= ETC_WALK_WANTED;
        if (macros && !(node->flags & ETC_WALK_IN_MAIN)) {
            node->expansion = main_working_offset(file, location, 1);
            node->spelling = main_working_offset(file, location, 0);
        }
        if (grow((void **)&tree->wanted, &w->wanted_cap, tree->wanted_count + 1,
                 sizeof *tree->wanted))
            return -1;
        tree->wanted[tree->wanted_count++] = index;
    }
    return index;
}

static int expand(struct walk *w, int32_t index)
{
    struct etc_walk_tree *tree = w->tree;
    struct etc_walk_node *node = &tree->nodes[index];
    node->kids = (int32_t)tree->kid_total;
    if (is_leaf(node->kind))
        return 0;
    w->child_count = 0;
    api.visit_children(node->cursor, append_child, w);
    if (w->failed)
        return -1;
    size_t n = w->child_count;
    node->kid_count = (int32_t)n;
    if (grow((void **)&tree->kids, &w->kid_cap, tree->kid_total + n, sizeof *tree->kids) ||
        grow((void **)&w->stack, &w->stack_cap, w->depth + n, sizeof *w->stack))
        return -1;
    for (size_t k = 0; k < n; k++) {
        tree->kids[tree->kid_total + k] = -1;
        w->stack[w->depth++] = (struct pending){w->children[k], index,
                                                (int32_t)(tree->kid_total + k)};
    }
    tree->kid_total += n;
    return 0;
}

int etc_walk(const struct etc_walk_file *file, CXCursor top, int threaded, int macros,
             struct etc_walk_tree *tree)
{
    struct walk w = {.tree = tree};
    int status = 0;
    if (grow((void **)&w.stack, &w.stack_cap, 1, sizeof *w.stack)) {
        status = -1;
        goto done;
    }
    w.stack[w.depth++] = (struct pending){top, -1, -1};
    while (w.depth > 0) {
        struct pending item = w.stack[--w.depth];
        int index = describe(&w, file, item, threaded, macros);
        if (index < 0 || expand(&w, index) != 0) {
            status = -1;
            break;
        }
    }
done:
    free(w.stack);
    free(w.children);
    return status;
}

void etc_walk_free(struct etc_walk_tree *tree)
{
    free(tree->nodes);
    free(tree->kids);
    free(tree->wanted);
    memset(tree, 0, sizeof *tree);
}

void etc_walk_evaluate(CXCursor cursor, struct etc_walk_value *value)
{
    memset(value, 0, sizeof *value);
    void *result = api.evaluate(cursor);
    if (result == NULL)
        return;
    value->kind = api.eval_kind(result);
    if (value->kind == CXEval_Int) {
        value->is_unsigned = api.eval_is_unsigned(result) != 0;
        if (value->is_unsigned)
            value->as_unsigned = api.eval_unsigned(result);
        else
            value->as_signed = api.eval_signed(result);
    } else if (value->kind == CXEval_Float) {
        value->as_double = api.eval_double(result);
    }
    api.eval_dispose(result);
}
