/* Function names from an ELF file's symbol table, for callbacks that dladdr cannot name
 * (static functions, or an executable linked without -rdynamic: only .symtab knows them). */
#ifndef D9_ADAPTERS_ELF_SYMBOLS_H
#define D9_ADAPTERS_ELF_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "real_symbol.h"

/* Name of the function of ELF file `path` that contains link-time address `addr` (the run-time
 * address minus the object's load bias), written to out as "name" or "name+0xoff". Reads
 * .symtab, else .dynsym. False when the file has no such symbol or cannot be read. Slow (maps
 * and scans the file): call it once per address. */
D9A_HIDDEN bool d9a_elf_function_name(const char *path, uint64_t addr, char *out, size_t len);

#endif
