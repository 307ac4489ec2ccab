/* etcpre's fallback for libclang's builtin stddef.h, used only when no C compiler
 * tells where its own headers are (see etcpre/passes/clang_view.py). Analysis only. */
#ifndef _ETC_FALLBACK_STDDEF_H
#define _ETC_FALLBACK_STDDEF_H
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef __WCHAR_TYPE__ wchar_t;
typedef long double max_align_t;
#define NULL ((void *)0)
#define offsetof(t, m) __builtin_offsetof(t, m)
#endif
