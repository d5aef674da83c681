#include "symbols/elf_image.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Headers are copied out with memcpy: a file offset need not be aligned for the struct. */
static bool in_bounds(size_t size, uint64_t off, uint64_t len) {
    return off <= size && len <= size - off;
}

static int fail(char *err, size_t errlen, const char *msg) {
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return -1;
}

static int check_ident(const uint8_t *p, size_t size, char *err, size_t errlen) {
    if (size < sizeof(Elf64_Ehdr) || memcmp(p, ELFMAG, SELFMAG) != 0)
        return fail(err, errlen, "not an ELF file");
    if (p[EI_CLASS] != ELFCLASS64) return fail(err, errlen, "not a 64-bit ELF file (unsupported)");
    if (p[EI_DATA] != ELFDATA2LSB) return fail(err, errlen, "not a little-endian ELF file (unsupported)");
    return 0;
}

static void hex_encode(const uint8_t *p, size_t n, char *hex, size_t hexlen) {
    static const char digits[] = "0123456789abcdef";
    size_t j = 0;
    for (size_t i = 0; i < n && j + 2 < hexlen; i++) {
        hex[j++] = digits[p[i] >> 4];
        hex[j++] = digits[p[i] & 15];
    }
    if (hexlen) hex[j] = 0;
}

bool d9_elf_notes_build_id(const uint8_t *notes, size_t len, char *hex, size_t hexlen) {
    size_t off = 0;
    while (len - off >= sizeof(Elf64_Nhdr)) {
        Elf64_Nhdr nh; /* Elf32_Nhdr and Elf64_Nhdr are the same three 32-bit words */
        memcpy(&nh, notes + off, sizeof nh);
        off += sizeof nh;
        uint64_t name_sz = ((uint64_t)nh.n_namesz + 3) & ~(uint64_t)3;
        uint64_t desc_sz = ((uint64_t)nh.n_descsz + 3) & ~(uint64_t)3;
        if (name_sz > len - off) return false;
        const uint8_t *name = notes + off;
        off += (size_t)name_sz;
        if (nh.n_descsz > len - off) return false;
        const uint8_t *desc = notes + off;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
            nh.n_descsz > 0 && (size_t)nh.n_descsz * 2 < hexlen) {
            hex_encode(desc, nh.n_descsz, hex, hexlen);
            return true;
        }
        off += desc_sz > len - off ? len - off : (size_t)desc_sz; /* last note: padding optional */
    }
    return false;
}

/* The build id from PT_NOTE segments, else from SHT_NOTE sections (separate debug files keep
 * their notes in sections; their program headers may point at nothing). */
static void find_build_id(d9_elf_image *img, const Elf64_Ehdr *eh) {
    img->build_id[0] = 0;
    for (uint32_t i = 0; i < eh->e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, img->data + eh->e_phoff + (uint64_t)i * eh->e_phentsize, sizeof ph);
        if (ph.p_type != PT_NOTE || !in_bounds(img->size, ph.p_offset, ph.p_filesz)) continue;
        if (d9_elf_notes_build_id(img->data + ph.p_offset, ph.p_filesz, img->build_id, sizeof img->build_id))
            return;
    }
    for (uint32_t i = 0; i < img->shnum; i++) {
        d9_elf_section s;
        if (!d9_elf_section_at(img, i, &s) || s.type != SHT_NOTE) continue;
        const uint8_t *p = d9_elf_section_data(img, &s);
        if (p && d9_elf_notes_build_id(p, s.size, img->build_id, sizeof img->build_id)) return;
    }
}

int d9_elf_open_mem(d9_elf_image *img, const void *data, size_t size, char *err, size_t errlen) {
    memset(img, 0, sizeof *img);
    const uint8_t *p = data;
    if (check_ident(p, size, err, errlen) != 0) return -1;
    Elf64_Ehdr eh;
    memcpy(&eh, p, sizeof eh);
    img->data = p;
    img->size = size;
    img->type = eh.e_type;
    if (eh.e_phnum && (eh.e_phentsize < sizeof(Elf64_Phdr) ||
                       !in_bounds(size, eh.e_phoff, (uint64_t)eh.e_phnum * eh.e_phentsize)))
        return fail(err, errlen, "corrupt ELF file: program headers out of bounds");
    if (eh.e_shnum && (eh.e_shentsize < sizeof(Elf64_Shdr) ||
                       !in_bounds(size, eh.e_shoff, (uint64_t)eh.e_shnum * eh.e_shentsize))) {
        /* Sections are optional (the loader never needs them): go on without them. */
        eh.e_shnum = 0;
    }
    img->shoff = eh.e_shoff;
    img->shnum = eh.e_shnum;
    img->shentsize = eh.e_shentsize;
    img->shstrndx = eh.e_shstrndx < eh.e_shnum ? eh.e_shstrndx : 0;

    size_t nload = 0;
    for (uint32_t i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, p + eh.e_phoff + (uint64_t)i * eh.e_phentsize, sizeof ph);
        nload += ph.p_type == PT_LOAD;
    }
    if (nload) {
        img->loads = calloc(nload, sizeof *img->loads);
        if (!img->loads) return fail(err, errlen, "out of memory");
        for (uint32_t i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            memcpy(&ph, p + eh.e_phoff + (uint64_t)i * eh.e_phentsize, sizeof ph);
            if (ph.p_type != PT_LOAD) continue;
            img->loads[img->load_count++] = (d9_elf_segment){
                .vaddr = ph.p_vaddr, .memsz = ph.p_memsz, .offset = ph.p_offset,
                .filesz = ph.p_filesz, .flags = ph.p_flags};
        }
    }
    find_build_id(img, &eh);
    return 0;
}

int d9_elf_open_path(d9_elf_image *img, const char *path, char *err, size_t errlen) {
    memset(img, 0, sizeof *img);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (err && errlen) snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        if (err && errlen) snprintf(err, errlen, "%s: not a regular ELF file", path);
        return -1;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        if (err && errlen) snprintf(err, errlen, "%s: mmap: %s", path, strerror(errno));
        return -1;
    }
    if (d9_elf_open_mem(img, m, (size_t)st.st_size, err, errlen) != 0) {
        munmap(m, (size_t)st.st_size);
        free(img->loads);
        memset(img, 0, sizeof *img);
        return -1;
    }
    img->owns_mapping = true;
    return 0;
}

void d9_elf_close(d9_elf_image *img) {
    if (img->owns_mapping && img->data) munmap((void *)img->data, img->size);
    free(img->loads);
    memset(img, 0, sizeof *img);
}

bool d9_elf_section_at(const d9_elf_image *img, uint32_t index, d9_elf_section *out) {
    if (index >= img->shnum) return false;
    Elf64_Shdr sh;
    memcpy(&sh, img->data + img->shoff + (uint64_t)index * img->shentsize, sizeof sh);
    *out = (d9_elf_section){.name = sh.sh_name, .type = sh.sh_type, .flags = sh.sh_flags,
                            .addr = sh.sh_addr, .offset = sh.sh_offset, .size = sh.sh_size,
                            .link = sh.sh_link, .entsize = sh.sh_entsize};
    return true;
}

const uint8_t *d9_elf_section_data(const d9_elf_image *img, const d9_elf_section *s) {
    if (s->type == SHT_NOBITS || !in_bounds(img->size, s->offset, s->size)) return NULL;
    return img->data + s->offset;
}

const char *d9_elf_string(const d9_elf_image *img, const d9_elf_section *strtab, uint32_t offset) {
    const uint8_t *p = d9_elf_section_data(img, strtab);
    if (!p || offset >= strtab->size) return NULL;
    /* The string must end inside the table. */
    if (!memchr(p + offset, 0, (size_t)(strtab->size - offset))) return NULL;
    return (const char *)p + offset;
}

bool d9_elf_find_section(const d9_elf_image *img, const char *name, d9_elf_section *out) {
    d9_elf_section names;
    if (!d9_elf_section_at(img, img->shstrndx, &names)) return false;
    for (uint32_t i = 1; i < img->shnum; i++) {
        d9_elf_section s;
        if (!d9_elf_section_at(img, i, &s)) return false;
        const char *n = d9_elf_string(img, &names, s.name);
        if (n && strcmp(n, name) == 0) {
            *out = s;
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------ build id by pread */

static bool pread_full(int fd, void *buf, size_t len, uint64_t off) {
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        got += (size_t)n;
    }
    return true;
}

#define NOTE_READ_MAX (64u * 1024u)

bool d9_elf_file_build_id(const char *path, char *hex, size_t hexlen) {
    if (hexlen) hex[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool found = false;
    uint8_t *buf = NULL;
    Elf64_Ehdr eh;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !pread_full(fd, &eh, sizeof eh, 0) ||
        check_ident((const uint8_t *)&eh, sizeof eh, NULL, 0) != 0)
        goto out;
    uint64_t size = (uint64_t)st.st_size;
    if (eh.e_phentsize >= sizeof(Elf64_Phdr) && in_bounds(size, eh.e_phoff, (uint64_t)eh.e_phnum * eh.e_phentsize)) {
        for (uint32_t i = 0; i < eh.e_phnum && !found; i++) {
            Elf64_Phdr ph;
            if (!pread_full(fd, &ph, sizeof ph, eh.e_phoff + (uint64_t)i * eh.e_phentsize)) goto out;
            if (ph.p_type != PT_NOTE || ph.p_filesz == 0 || ph.p_filesz > NOTE_READ_MAX ||
                !in_bounds(size, ph.p_offset, ph.p_filesz))
                continue;
            uint8_t *nb = realloc(buf, ph.p_filesz);
            if (!nb) goto out;
            buf = nb;
            if (pread_full(fd, buf, ph.p_filesz, ph.p_offset))
                found = d9_elf_notes_build_id(buf, ph.p_filesz, hex, hexlen);
        }
    }
    if (!found && eh.e_shentsize >= sizeof(Elf64_Shdr) &&
        in_bounds(size, eh.e_shoff, (uint64_t)eh.e_shnum * eh.e_shentsize)) {
        for (uint32_t i = 0; i < eh.e_shnum && !found; i++) {
            Elf64_Shdr sh;
            if (!pread_full(fd, &sh, sizeof sh, eh.e_shoff + (uint64_t)i * eh.e_shentsize)) goto out;
            if (sh.sh_type != SHT_NOTE || sh.sh_size == 0 || sh.sh_size > NOTE_READ_MAX ||
                !in_bounds(size, sh.sh_offset, sh.sh_size))
                continue;
            uint8_t *nb = realloc(buf, sh.sh_size);
            if (!nb) goto out;
            buf = nb;
            if (pread_full(fd, buf, sh.sh_size, sh.sh_offset))
                found = d9_elf_notes_build_id(buf, sh.sh_size, hex, hexlen);
        }
    }
out:
    free(buf);
    close(fd);
    return found;
}
