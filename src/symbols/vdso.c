#include "symbols/vdso.h"

#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include "symbols/elf_image.h"

/* Larger than any vDSO (a few pages): guards against a surprising header. */
#define VDSO_MAX_SIZE (1u << 20)

bool d9_own_vdso(const void **base_out, size_t *size_out, char *build_id, size_t build_id_len) {
    const uint8_t *base = (const uint8_t *)(uintptr_t)getauxval(AT_SYSINFO_EHDR);
    if (!base || memcmp(base, ELFMAG, SELFMAG) != 0 || base[EI_CLASS] != ELFCLASS64) return false;
    Elf64_Ehdr eh;
    memcpy(&eh, base, sizeof eh);
    if (eh.e_phoff > VDSO_MAX_SIZE || eh.e_phnum > 64) return false;
    /* The image ends with its section headers or its loadable bytes, whichever is later. */
    uint64_t size = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
    for (uint32_t i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, base + eh.e_phoff + (uint64_t)i * eh.e_phentsize, sizeof ph);
        if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > size) size = ph.p_offset + ph.p_filesz;
    }
    if (size > VDSO_MAX_SIZE) return false;
    d9_elf_image img;
    if (d9_elf_open_mem(&img, base, (size_t)size, NULL, 0) != 0) return false;
    snprintf(build_id, build_id_len, "%s", img.build_id);
    d9_elf_close(&img);
    *base_out = base;
    *size_out = (size_t)size;
    return true;
}
