/* Kernel symbols from /proc/kallsyms (this boot's addresses, KASLR included). Only usable when
 * kptr_restrict lets this process see real addresses; otherwise loading reports it. */
#ifndef D9_SYMBOLS_KALLSYMS_H
#define D9_SYMBOLS_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct d9_kallsyms d9_kallsyms;

/* Load `path` (normally "/proc/kallsyms"). NULL with a reason in err when it cannot be read
 * or shows only zero addresses. */
d9_kallsyms *d9_kallsyms_load(const char *path, char *err, size_t errlen);
/* The text symbol covering `addr`, or NULL. The name stays valid until free. */
const char *d9_kallsyms_lookup(const d9_kallsyms *k, uint64_t addr);
size_t d9_kallsyms_count(const d9_kallsyms *k);
void d9_kallsyms_free(d9_kallsyms *k);

/* Lowest address of the kernel half on x86-64/arm64: above it an address is a kernel one. */
#define D9_KERNEL_SPACE_START 0xffff800000000000ull

#endif
