/* etcpre's fallback for libclang's builtin stdarg.h (analysis only). */
#ifndef _ETC_FALLBACK_STDARG_H
#define _ETC_FALLBACK_STDARG_H
typedef __builtin_va_list va_list;
typedef __builtin_va_list __gnuc_va_list;
#define va_start(ap, last) __builtin_va_start(ap, last)
#define va_end(ap) __builtin_va_end(ap)
#define va_arg(ap, type) __builtin_va_arg(ap, type)
#define va_copy(dst, src) __builtin_va_copy(dst, src)
#endif
