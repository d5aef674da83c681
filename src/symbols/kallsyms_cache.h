/* The kernel image's symbols, cached per boot: each process that names kernel addresses used
 * to make the kernel print /proc/kallsyms (~120 k lines, ~35 ms of its CPU) and parse it
 * (~30 ms), once per process. The image's own symbols ([_stext, _etext]) cannot change during
 * a boot, so the first process writes them to a file named by the boot id and the others read
 * that (a few ms); addresses outside the image (modules, BPF programs, trampolines, which come
 * and go) are still named from /proc/kallsyms read whole. The file lives in a directory of the
 * user's own (0700), so it shows no one anything /proc/kallsyms did not show them. */
#ifndef D9_SYMBOLS_KALLSYMS_CACHE_H
#define D9_SYMBOLS_KALLSYMS_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "symbols/kallsyms.h"

/* The default directory: $XDG_RUNTIME_DIR/dial9, else ${TMPDIR:-/tmp}/dial9-<euid>. "" when
 * the path does not fit. Made and checked when used. */
void d9_kallsyms_cache_dir(char *out, size_t len);

/* This boot's image part from the cache in `dir`: NULL (with the reason in err) when there is
 * none, when /proc/kallsyms shows this process no addresses now (kernel.kptr_restrict), when
 * the directory or file is not this user's own alone, or when the file is damaged. */
d9_kallsyms *d9_kallsyms_cache_read(const char *dir, const char *boot_id, char *err, size_t errlen);

/* Write `full`'s image part as this boot's cache in `dir` (made 0700 if missing) and remove
 * the files of other boots. False when it could not: the next process reads /proc/kallsyms. */
bool d9_kallsyms_cache_write(const char *dir, const char *boot_id, const d9_kallsyms *full);

#endif
