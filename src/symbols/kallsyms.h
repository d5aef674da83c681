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

/* The kernel image's own symbols, those in [_stext, _etext]: a new table that answers for
 * addresses in [_stext, _etext) (d9_kallsyms_covers), exactly as `full` does. They cannot
 * change during a boot, unlike those of modules, BPF programs and trampolines. NULL when
 * `full` lacks _stext or _etext, or on no memory. */
d9_kallsyms *d9_kallsyms_image_part(const d9_kallsyms *full);
/* Whether `k` (an image part) answers for addr; false for NULL and for a whole table. */
bool d9_kallsyms_covers(const d9_kallsyms *k, uint64_t addr);

/* The table as bytes (a kallsyms cache file's body, kallsyms_cache.h): malloc'd, NULL on no
 * memory. */
void *d9_kallsyms_serialize(const d9_kallsyms *k, size_t *len);
/* The table in such bytes (8-byte aligned), checked throughout (they come from a file) and
 * used where they are: they must outlive the table, unless `unmap`: then they are a mapping
 * the table unmaps when freed. NULL with a reason in err when they are not a table (the
 * mapping is then the caller's still). */
d9_kallsyms *d9_kallsyms_from_bytes(const void *data, size_t len, bool unmap, char *err, size_t errlen);

/* Lowest address of the kernel half on x86-64/arm64: above it an address is a kernel one. */
#define D9_KERNEL_SPACE_START 0xffff800000000000ull

#endif
