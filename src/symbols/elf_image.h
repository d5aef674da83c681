/* A read-only view of an ELF64 little-endian file (a binary, a shared library, a separate
 * .debug file or the vDSO image in memory): its program headers, sections and GNU build id.
 * Every offset read from the file is bounds-checked, so a corrupt or hostile file (the CLI
 * reads files from other machines) yields an error, never a crash. Plain libc. */
#ifndef D9_SYMBOLS_ELF_IMAGE_H
#define D9_SYMBOLS_ELF_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest build id we keep (GNU uses 20 bytes; allow much more) as hex, with the NUL. */
#define D9_BUILD_ID_HEX_MAX 129

typedef struct d9_elf_segment {
    uint64_t vaddr, memsz, offset, filesz;
    uint32_t flags; /* PF_X, PF_W, PF_R */
} d9_elf_segment;

typedef struct d9_elf_image {
    const uint8_t *data;
    size_t size;
    bool owns_mapping;  /* munmap on close */
    uint16_t type;      /* ET_EXEC, ET_DYN, ... */
    uint64_t shoff;
    uint16_t shnum, shentsize, shstrndx;
    d9_elf_segment *loads; /* PT_LOAD headers, in file order */
    size_t load_count;
    char build_id[D9_BUILD_ID_HEX_MAX]; /* lowercase hex, "" when the file has none */
} d9_elf_image;

typedef struct d9_elf_section {
    uint32_t name;  /* offset in the section name table */
    uint32_t type;  /* SHT_* */
    uint64_t flags; /* SHF_* */
    uint64_t addr, offset, size;
    uint32_t link;
    uint64_t entsize;
} d9_elf_section;

/* Map a file read-only. 0, or -1 with a message in err. */
int d9_elf_open_path(d9_elf_image *img, const char *path, char *err, size_t errlen);
/* Parse an ELF image already in memory (kept by the caller until d9_elf_close). */
int d9_elf_open_mem(d9_elf_image *img, const void *data, size_t size, char *err, size_t errlen);
void d9_elf_close(d9_elf_image *img);

/* Section `index`; false when out of range. */
bool d9_elf_section_at(const d9_elf_image *img, uint32_t index, d9_elf_section *out);
/* The bytes of a section, or NULL when they are not (all) in the file (SHT_NOBITS...). */
const uint8_t *d9_elf_section_data(const d9_elf_image *img, const d9_elf_section *s);
/* The section named `name` (".symtab"...); false when absent. */
bool d9_elf_find_section(const d9_elf_image *img, const char *name, d9_elf_section *out);
/* NUL-terminated string at `offset` of string table section `strtab`, or NULL. */
const char *d9_elf_string(const d9_elf_image *img, const d9_elf_section *strtab, uint32_t offset);

/* Find the GNU build id in a run of ELF notes; writes lowercase hex. False when none. */
bool d9_elf_notes_build_id(const uint8_t *notes, size_t len, char *hex, size_t hexlen);

/* Read only the build id of the ELF file at `path` (a few small preads, no mapping): what the
 * memory-map source needs for every mapped file. False when unreadable or without one. */
bool d9_elf_file_build_id(const char *path, char *hex, size_t hexlen);

#endif
