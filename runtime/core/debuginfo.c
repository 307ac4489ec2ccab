/* debuginfo.c: what the executable says about its own code, read by the runtime
 * itself (no library, no other process):
 *   - the symbol table (every build): the function an address belongs to, so a
 *     report can name the thread a node was in without the scheduler writing it
 *     down at every thread (functions.c etc_current_thread);
 *   - the line table, .debug_line of DWARF 2 to 5 (the checking and -prof
 *     builds): the .tc line of an address, and every address range with its
 *     file and line for the profile (prof.c).
 * The generated C carries #line directives, so the compiler's line table maps
 * the program's code to .tc lines. Lookups may run in a signal handler, so they
 * allocate nothing: the executable is mapped read-only (open, fstat and mmap
 * are safe there) and scanned.
 *
 * For the .tc line, rows of a file that is not a .tc file of this program
 * (etc.h's inline functions, the runtime, libc) are not answers; inside a
 * thread function, an address whose row is etc.h's is given the last .tc row
 * before it in the same sequence: the statement that called the inline
 * function.
 */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/rts.h"

typedef struct {
    const unsigned char *line, *line_str, *str;
    size_t line_len, line_str_len, str_len;
    const ElfW(Sym) *syms;
    size_t nsyms;
    const char *symnames;
    size_t symnames_len;
    uintptr_t bias; /* run-time address - link-time address (0 without PIE) */
    int mapped;     /* 1: the executable is mapped, -1: it cannot be */
    int ready;      /* 1: a line table, -1: none (no -g, stripped, compressed) */
} debug_sections;

static debug_sections own_debug; /* the program's own sections, mapped once */

#if defined(ETC_CHECK) || defined(ETC_PROF)
/* ---------------------------------------------------------------- reading */

typedef struct {
    const unsigned char *p, *end;
    int bad;
} cursor;

static uint64_t rd(cursor *c, int n)
{
    if (c->end - c->p < n) {
        c->bad = 1;
        c->p = c->end;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)c->p[i] << (8 * i); /* DWARF in ELF here: little-endian hosts */
    c->p += n;
    return v;
}

static uint64_t uleb(cursor *c)
{
    uint64_t v = 0;
    int shift = 0;
    while (c->p < c->end) {
        unsigned char b = *c->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            return v;
    }
    c->bad = 1;
    return v;
}

static int64_t sleb(cursor *c)
{
    int64_t v = 0;
    int shift = 0;
    unsigned char b = 0x80;
    while (c->p < c->end && (b & 0x80)) {
        b = *c->p++;
        if (shift < 64)
            v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
    }
    if (b & 0x80)
        c->bad = 1;
    if (shift < 64 && (b & 0x40))
        v |= -((int64_t)1 << shift);
    return v;
}

static const char *cstr(cursor *c)
{
    const char *s = (const char *)c->p;
    const unsigned char *nul = memchr(c->p, 0, (size_t)(c->end - c->p));
    if (!nul) {
        c->bad = 1;
        c->p = c->end;
        return "";
    }
    c->p = nul + 1;
    return s;
}

static const char *str_at(const unsigned char *sec, size_t len, uint64_t off)
{
    if (!sec || off >= len || !memchr(sec + off, 0, len - off))
        return "";
    return (const char *)sec + off;
}

#endif

/* ---------------------------------------------------------------- the sections */

static int section_of(const ElfW(Ehdr) *eh, size_t size, const char *name,
                      const unsigned char **data, size_t *len)
{
    if (eh->e_shoff == 0 || eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr)) > size ||
        eh->e_shstrndx >= eh->e_shnum)
        return 0;
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)((const char *)eh + eh->e_shoff);
    const ElfW(Shdr) *names = &sh[eh->e_shstrndx];
    if (names->sh_offset + names->sh_size > size)
        return 0;
    const char *strtab = (const char *)eh + names->sh_offset;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_name >= names->sh_size || strcmp(strtab + sh[i].sh_name, name) != 0)
            continue;
        if (sh[i].sh_type == SHT_NOBITS || (sh[i].sh_flags & SHF_COMPRESSED) ||
            sh[i].sh_offset + sh[i].sh_size > size)
            return 0;
        *data = (const unsigned char *)eh + sh[i].sh_offset;
        *len = sh[i].sh_size;
        return 1;
    }
    return 0;
}

/* Maps the executable and finds its tables (once; also from a signal handler). */
void etc_debuginfo_init(void)
{
    if (own_debug.mapped)
        return;
    own_debug.mapped = -1;
    own_debug.ready = -1;
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size > sizeof(ElfW(Ehdr)))
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return;
    const ElfW(Ehdr) *eh = map;
    size_t size = (size_t)st.st_size;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) {
        munmap(map, size);
        return;
    }
    own_debug.mapped = 1;
    const unsigned char *syms, *names;
    size_t syms_len, names_len;
    if (section_of(eh, size, ".symtab", &syms, &syms_len) &&
        section_of(eh, size, ".strtab", &names, &names_len)) {
        own_debug.syms = (const ElfW(Sym) *)(const void *)syms;
        own_debug.nsyms = syms_len / sizeof(ElfW(Sym));
        own_debug.symnames = (const char *)names;
        own_debug.symnames_len = names_len;
        /* where this very function is, against where the table says: the bias */
        for (size_t i = 0; i < own_debug.nsyms; i++) {
            const ElfW(Sym) *y = &own_debug.syms[i];
            if (y->st_name < names_len &&
                strcmp(own_debug.symnames + y->st_name, "etc_debuginfo_init") == 0)
                own_debug.bias = (uintptr_t)&etc_debuginfo_init - (uintptr_t)y->st_value;
        }
    }
#if defined(ETC_CHECK) || defined(ETC_PROF)
    if (section_of(eh, size, ".debug_line", &own_debug.line, &own_debug.line_len)) {
        section_of(eh, size, ".debug_line_str", &own_debug.line_str, &own_debug.line_str_len);
        section_of(eh, size, ".debug_str", &own_debug.str, &own_debug.str_len);
        own_debug.ready = 1;
    }
#endif
}

int etc_have_symbols(void)
{
    etc_debuginfo_init();
    return own_debug.syms != NULL;
}

/* The name of the function whose code holds addr (NULL: none, or no symbols). */
const char *etc_symbol_at(uintptr_t addr)
{
    etc_debuginfo_init();
    if (!own_debug.syms || addr < own_debug.bias)
        return NULL;
    uintptr_t a = addr - own_debug.bias;
    for (size_t i = 0; i < own_debug.nsyms; i++) {
        const ElfW(Sym) *y = &own_debug.syms[i];
        if ((y->st_info & 0xf) == STT_FUNC && y->st_value <= a &&
            a < y->st_value + y->st_size && y->st_name < own_debug.symnames_len)
            return own_debug.symnames + y->st_name;
    }
    return NULL;
}

#if defined(ETC_CHECK) || defined(ETC_PROF)
/* ---------------------------------------------------------------- one line program */

typedef struct {
    int version, offset_size, address_size;
    unsigned min_inst, line_range, opcode_base;
    int line_base;
    const unsigned char *std_lengths;
    const unsigned char *dirs;        /* the directory table (v5: after its formats) */
    const unsigned char *dir_formats; /* v5 */
    int ndir_formats;
    uint64_t ndirs;
    const unsigned char *files;   /* the file table (v5: after its formats) */
    const unsigned char *formats; /* v5: the file entry formats */
    int nformats;
    uint64_t nfiles;
    const unsigned char *program, *end;
} unit;

/* Reads one attribute value of a v5 directory or file entry; a string's text is
 * returned through *path. */
static void entry_value(cursor *c, const unit *u, uint64_t form, const char **path)
{
    switch (form) {
    case 0x08: /* DW_FORM_string */
        *path = cstr(c);
        break;
    case 0x1f: /* DW_FORM_line_strp */
        *path = str_at(own_debug.line_str, own_debug.line_str_len, rd(c, u->offset_size));
        break;
    case 0x0e: /* DW_FORM_strp */
        *path = str_at(own_debug.str, own_debug.str_len, rd(c, u->offset_size));
        break;
    case 0x0f: /* DW_FORM_udata */
        uleb(c);
        break;
    case 0x0b: /* data1 */
        rd(c, 1);
        break;
    case 0x05: /* data2 */
        rd(c, 2);
        break;
    case 0x06: /* data4 */
        rd(c, 4);
        break;
    case 0x07: /* data8 */
        rd(c, 8);
        break;
    case 0x1e: /* data16 */
        rd(c, 8);
        rd(c, 8);
        break;
    case 0x09: { /* block */
        uint64_t n = uleb(c);
        if ((uint64_t)(c->end - c->p) < n)
            c->bad = 1;
        else
            c->p += n;
        break;
    }
    default:
        c->bad = 1;
    }
}

/* Reads a line program's header at c; the cursor moves to the next unit. */
static int read_unit(cursor *c, unit *u)
{
    memset(u, 0, sizeof *u);
    uint64_t len = rd(c, 4);
    u->offset_size = 4;
    if (len == 0xffffffffu) {
        len = rd(c, 8);
        u->offset_size = 8;
    }
    if (c->bad || len > (uint64_t)(c->end - c->p))
        return 0;
    cursor h = {c->p, c->p + len, 0};
    u->end = c->p + len;
    c->p += len;
    u->version = (int)rd(&h, 2);
    if (u->version < 2 || u->version > 5)
        return 0;
    u->address_size = (int)sizeof(void *);
    if (u->version >= 5) {
        u->address_size = (int)rd(&h, 1);
        rd(&h, 1); /* segment selector size */
    }
    uint64_t header_len = rd(&h, u->offset_size);
    if (header_len > (uint64_t)(h.end - h.p))
        return 0;
    u->program = h.p + header_len;
    u->min_inst = (unsigned)rd(&h, 1);
    if (u->version >= 4)
        rd(&h, 1); /* maximum operations per instruction (VLIW) */
    rd(&h, 1);     /* default_is_stmt */
    u->line_base = (int)(signed char)rd(&h, 1);
    u->line_range = (unsigned)rd(&h, 1);
    u->opcode_base = (unsigned)rd(&h, 1);
    if (u->line_range == 0 || u->opcode_base == 0)
        return 0;
    u->std_lengths = h.p;
    h.p += u->opcode_base - 1;
    if (h.p > h.end)
        return 0;
    u->dirs = h.p;
    if (u->version < 5) {
        while (!h.bad && h.p < h.end && *h.p) /* include directories */
            cstr(&h);
        h.p++;
        u->files = h.p;
        return !h.bad;
    }
    /* v5: directories, then files, each with a list of (content, form) formats */
    u->ndir_formats = (int)rd(&h, 1);
    u->dir_formats = h.p;
    for (int i = 0; i < 2 * u->ndir_formats; i++)
        uleb(&h);
    u->ndirs = uleb(&h);
    u->dirs = h.p;
    for (uint64_t d = 0; d < u->ndirs && !h.bad; d++) {
        cursor f = {u->dir_formats, h.end, 0};
        for (int i = 0; i < u->ndir_formats; i++) {
            uleb(&f);
            const char *ignored;
            entry_value(&h, u, uleb(&f), &ignored);
        }
    }
    u->nformats = (int)rd(&h, 1);
    u->formats = h.p;
    for (int i = 0; i < 2 * u->nformats; i++)
        uleb(&h);
    u->nfiles = uleb(&h);
    u->files = h.p;
    return !h.bad;
}

/* v5 entry `index` of a table of entries with the given formats: its path and
 * (files) its directory index. */
static const char *v5_entry(const unit *u, const unsigned char *table, const unsigned char *end,
                            const unsigned char *formats, int nformats, uint64_t count,
                            uint64_t index, uint64_t *dir)
{
    cursor c = {table, end, 0};
    for (uint64_t i = 0; i < count && !c.bad; i++) {
        const char *path = "";
        cursor f = {formats, end, 0};
        for (int k = 0; k < nformats; k++) {
            uint64_t content = uleb(&f), form = uleb(&f);
            if (content == 2 && (form == 0x0f || form == 0x0b || form == 0x05)) {
                uint64_t v = form == 0x0f ? uleb(&c) : rd(&c, form == 0x0b ? 1 : 2);
                if (i == index && dir)
                    *dir = v;
                continue;
            }
            const char *text = NULL;
            entry_value(&c, u, form, &text);
            if (content == 1 && text) /* DW_LNCT_path */
                path = text;
        }
        if (i == index)
            return path;
    }
    return "";
}

/* The directory and name of file `index` of the unit ("" where there is none). */
static void file_name(const unit *u, uint64_t index, const char **dir, const char **name)
{
    *dir = "";
    *name = "";
    uint64_t d = 0;
    if (u->version >= 5) {
        *name = v5_entry(u, u->files, u->program, u->formats, u->nformats, u->nfiles, index, &d);
        *dir = v5_entry(u, u->dirs, u->program, u->dir_formats, u->ndir_formats, u->ndirs, d,
                        NULL);
        return;
    }
    cursor c = {u->files, u->program, 0};
    for (uint64_t i = 1; !c.bad && c.p < c.end && *c.p; i++) {
        const char *n = cstr(&c);
        uint64_t di = uleb(&c);
        uleb(&c);
        uleb(&c);
        if (i == index) {
            *name = n;
            d = di;
            break;
        }
    }
    cursor dc = {u->dirs, u->files, 0}; /* v2-4: directory 0 is the compilation's, not listed */
    for (uint64_t i = 1; d && !dc.bad && dc.p < dc.end && *dc.p; i++) {
        const char *n = cstr(&dc);
        if (i == d)
            *dir = n;
    }
}

#ifdef ETC_CHECK
/* Does a #line name (as the descriptors hold it) name the file dir/name? The
 * compiler splits it into a directory and a name; a relative one may also be
 * relative to the compilation's directory. */
static int same_file(const char *line_name, const char *dir, const char *name)
{
    char joined[4096];
    if (name[0] == '/' || !dir[0])
        snprintf(joined, sizeof joined, "%s", name);
    else
        snprintf(joined, sizeof joined, "%s/%s", dir, name);
    size_t j = strlen(joined), l = strlen(line_name);
    if (l > j || strcmp(joined + j - l, line_name) != 0)
        return 0;
    return l == j || (line_name[0] != '/' && joined[j - l - 1] == '/');
}

/* The .tc file of this program that file `index` of the unit is, as its
 * threaded functions' #line directives name it; NULL if it is none. */
static const char *program_file(const unit *u, uint64_t index)
{
    const char *dir, *name;
    file_name(u, index, &dir, &name);
    if (!name[0])
        return NULL;
    for (etc_fn_info *const *f = etc_fns_begin(); f != etc_fns_end(); f++)
        if (same_file((*f)->file, dir, name))
            return (*f)->file;
    return NULL;
}
#endif

typedef struct {
    uint64_t address;
    uint64_t file;
    int64_t line;
} row;

/* A row's range of addresses as the walker hands it on. */
typedef struct {
    uint64_t lo, hi; /* [lo, hi) */
    uint64_t file;   /* the unit's file index */
    int line;
    int first;       /* the first range of its sequence */
} range;

/* Runs the unit's line program and calls fn for every address range; stops and
 * returns 1 when fn does. */
static int walk_unit(const unit *u, int (*fn)(void *ctx, const unit *u, const range *r), void *ctx)
{
    cursor c = {u->program, u->end, 0};
    row r = {0, 1, 1}, prev = {0, 0, 0};
    int have_prev = 0, first = 1;
#define EMIT(end_seq)                                                                     \
    do {                                                                                  \
        if (have_prev && r.address > prev.address) {                                     \
            range g = {prev.address, r.address, prev.file, (int)prev.line, first};        \
            first = 0;                                                                    \
            if (fn(ctx, u, &g))                                                           \
                return 1;                                                                 \
        }                                                                                 \
        prev = r;                                                                         \
        have_prev = !(end_seq);                                                           \
        if (end_seq) {                                                                    \
            r = (row){0, 1, 1};                                                           \
            first = 1;                                                                    \
        }                                                                                 \
    } while (0)
    while (c.p < c.end && !c.bad) {
        unsigned op = *c.p++;
        if (op >= u->opcode_base) {
            unsigned adj = op - u->opcode_base;
            r.address += (uint64_t)(adj / u->line_range) * u->min_inst;
            r.line += u->line_base + (int)(adj % u->line_range);
            EMIT(0);
            continue;
        }
        switch (op) {
        case 0: { /* extended */
            uint64_t len = uleb(&c);
            if (len == 0 || len > (uint64_t)(c.end - c.p))
                return 0;
            const unsigned char *next = c.p + len;
            unsigned sub = *c.p++;
            if (sub == 1) { /* end_sequence */
                EMIT(1);
            } else if (sub == 2) { /* set_address */
                r.address = rd(&c, (int)(len - 1));
            }
            c.p = next;
            break;
        }
        case 1: /* copy */
            EMIT(0);
            break;
        case 2: /* advance_pc */
            r.address += uleb(&c) * u->min_inst;
            break;
        case 3: /* advance_line */
            r.line += sleb(&c);
            break;
        case 4: /* set_file */
            r.file = uleb(&c);
            break;
        case 8: /* const_add_pc */
            r.address += (uint64_t)((255 - u->opcode_base) / u->line_range) * u->min_inst;
            break;
        case 9: /* fixed_advance_pc */
            r.address += rd(&c, 2);
            break;
        default: /* other standard opcodes: skip their operands */
            for (unsigned i = 0; i < u->std_lengths[op - 1]; i++)
                uleb(&c);
        }
    }
#undef EMIT
    return 0;
}

/* Calls fn for every unit of the table; stops when it returns 1. */
static int walk_all(int (*fn)(void *ctx, const unit *u, const range *r), void *ctx)
{
    cursor c = {own_debug.line, own_debug.line + own_debug.line_len, 0};
    while (c.p < c.end && !c.bad) {
        unit u;
        if (!read_unit(&c, &u))
            return 0;
        if (walk_unit(&u, fn, ctx))
            return 1;
    }
    return 0;
}

#ifdef ETC_CHECK
/* The search for one address: the .tc row that holds it, or inside a sequence
 * the last .tc row before an etc.h row that holds it. */
typedef struct {
    uint64_t pc;
    uint64_t seen_file; /* file index of the last range looked at, and its .tc name */
    const char *seen_name;
    const char *good_name; /* the last .tc range of the sequence */
    int good_line;
    const char **file;
    int *line;
    int found;
} search;

static int search_range(void *ctx, const unit *u, const range *r)
{
    search *s = ctx;
    if (r->first) {
        s->good_name = NULL;
        s->seen_file = (uint64_t)-1;
    }
    if (r->file != s->seen_file) {
        s->seen_file = r->file;
        s->seen_name = program_file(u, r->file);
    }
    if (r->lo <= s->pc && s->pc < r->hi) {
        if (s->seen_name) {
            *s->file = s->seen_name;
            *s->line = r->line;
        } else if (s->good_name) {
            *s->file = s->good_name;
            *s->line = s->good_line;
        } else {
            return 1; /* the address is not in a .tc file: stop, not found */
        }
        s->found = 1;
        return 1;
    }
    if (s->seen_name) {
        s->good_name = s->seen_name;
        s->good_line = r->line;
    }
    return 0;
}

/* The .tc file and line of code address pc (0 if unknown). */
int etc_lines_find(uintptr_t pc, const char **file, int *line)
{
    etc_debuginfo_init();
    if (own_debug.ready != 1 || pc < own_debug.bias)
        return 0;
    search s = {(uint64_t)(pc - own_debug.bias), (uint64_t)-1, NULL, NULL, 0, file, line, 0};
    walk_all(search_range, &s);
    return s.found;
}
#endif

#ifdef ETC_PROF
typedef struct {
    etc_lines_fn fn;
    void *ctx;
    uint64_t file;
    const char *dir, *name;
} each;

static int each_range(void *ctx, const unit *u, const range *r)
{
    each *e = ctx;
    if (r->first || r->file != e->file) {
        e->file = r->file;
        file_name(u, r->file, &e->dir, &e->name);
    }
    e->fn(e->ctx, (uintptr_t)r->lo + own_debug.bias, (uintptr_t)r->hi + own_debug.bias, e->dir,
          e->name, r->line);
    return 0;
}

int etc_lines_each(etc_lines_fn fn, void *ctx)
{
    etc_debuginfo_init();
    if (own_debug.ready != 1)
        return 0;
    each e = {fn, ctx, (uint64_t)-1, "", ""};
    walk_all(each_range, &e);
    return 1;
}
#endif
#endif
