#include "symbols/debug_file.h"

#include <elf.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYSTEM_DEBUG_ROOT "/usr/lib/debug"

/* ---------------------------------------------------------------- roots */

static pthread_once_t g_roots_once = PTHREAD_ONCE_INIT;
static char *g_roots_storage;
static const char *g_roots[D9_DEBUG_ROOTS_MAX];
static size_t g_nroots;

static void parse_roots(void) {
    const char *env = getenv("DIAL9_DEBUG_FILE_DIRS");
    if (env && env[0] && (g_roots_storage = strdup(env))) {
        for (char *save = NULL, *d = strtok_r(g_roots_storage, ":", &save); d && g_nroots < D9_DEBUG_ROOTS_MAX;
             d = strtok_r(NULL, ":", &save))
            if (d[0]) g_roots[g_nroots++] = d;
    }
    if (g_nroots == 0) g_roots[g_nroots++] = SYSTEM_DEBUG_ROOT;
}

const char *const *d9_debug_roots(size_t *count) {
    pthread_once(&g_roots_once, parse_roots);
    *count = g_nroots;
    return g_roots;
}

/* ---------------------------------------------------------------- CRC-32 */

static uint32_t g_crc_table[256];
static pthread_once_t g_crc_once = PTHREAD_ONCE_INIT;

static void make_crc_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        g_crc_table[i] = c;
    }
}

uint32_t d9_crc32(uint32_t crc, const uint8_t *p, size_t len) {
    pthread_once(&g_crc_once, make_crc_table);
    crc = ~crc;
    for (size_t i = 0; i < len; i++) crc = g_crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* ---------------------------------------------------------------- search */

typedef struct search {
    const char *build_id, *want;
    d9_elf_image *out;
    d9_debug_found *found;
    char *note;
    size_t notelen;
} search;

__attribute__((format(printf, 2, 3))) static void add_note(search *s, const char *fmt, ...) {
    if (!s->note || !s->notelen) return;
    size_t n = strlen(s->note);
    if (n + 3 >= s->notelen) return;
    if (n) n += (size_t)snprintf(s->note + n, s->notelen - n, "; ");
    va_list ap;
    va_start(ap, fmt);
    if (n < s->notelen) vsnprintf(s->note + n, s->notelen - n, fmt, ap);
    va_end(ap);
}

static bool has_wanted(const d9_elf_image *img, const char *want) {
    d9_elf_section sec;
    return !want || (d9_elf_find_section(img, want, &sec) && sec.type != SHT_NOBITS && sec.size > 0);
}

static bool take(search *s, const char *path, const char *how) {
    if (!has_wanted(s->out, s->want)) {
        d9_elf_close(s->out);
        return false;
    }
    snprintf(s->found->path, sizeof s->found->path, "%s", path);
    s->found->how = how;
    return true;
}

static bool try_build_id(search *s, const char *path) {
    if (d9_elf_open_path(s->out, path, NULL, 0) != 0) return false;
    if (strcmp(s->out->build_id, s->build_id) != 0) {
        add_note(s, "%s has build id %s, not %s: a debug file of another build, not used", path,
                 s->out->build_id[0] ? s->out->build_id : "(none)", s->build_id);
        d9_elf_close(s->out);
        return false;
    }
    return take(s, path, "build-id");
}

/* Both with a build id: the same build when they agree (whatever the file's bytes: debug
 * sections recompressed later change the CRC, not the build). Otherwise the CRC the link
 * recorded, over the whole candidate, computed only once it has the wanted section. */
static bool try_debuglink(search *s, const char *path, const char *self, uint32_t crc) {
    if (strcmp(path, self) == 0 || d9_elf_open_path(s->out, path, NULL, 0) != 0) return false;
    bool both_ids = s->build_id[0] && s->out->build_id[0];
    if (both_ids && strcmp(s->out->build_id, s->build_id) != 0) {
        add_note(s, "%s has build id %s, not %s: a debug file of another build, not used", path, s->out->build_id,
                 s->build_id);
        d9_elf_close(s->out);
        return false;
    }
    if (!has_wanted(s->out, s->want)) {
        d9_elf_close(s->out);
        return false;
    }
    uint32_t c = both_ids ? crc : d9_crc32(0, s->out->data, s->out->size);
    if (c != crc) {
        add_note(s, "%s has CRC %08x, its .gnu_debuglink expects %08x: a debug file of another build, not used",
                 path, c, crc);
        d9_elf_close(s->out);
        return false;
    }
    return take(s, path, "debuglink");
}

/* The .gnu_debuglink section: a file name, NUL, padding to 4, the CRC-32 of the debug file. */
static bool read_debuglink(const d9_elf_image *img, char *name, size_t len, uint32_t *crc) {
    d9_elf_section sec;
    const uint8_t *p;
    if (!d9_elf_find_section(img, ".gnu_debuglink", &sec) || !(p = d9_elf_section_data(img, &sec))) return false;
    const uint8_t *nul = memchr(p, 0, sec.size);
    if (!nul || nul == p) return false;
    size_t n = (size_t)(nul - p), at = (n + 4) & ~(size_t)3;
    if (n >= len || at + 4 > sec.size || memchr(p, '/', n)) return false; /* a name, not a path */
    memcpy(name, p, n);
    name[n] = 0;
    memcpy(crc, p + at, 4);
    return true;
}

bool d9_debug_file_find(const char *path, const char *build_id, const d9_elf_image *file,
                        const char *const *roots, size_t nroots, const char *want_section, d9_elf_image *out,
                        d9_debug_found *found, char *note, size_t notelen) {
    search s = {.build_id = build_id ? build_id : "", .want = want_section, .out = out, .found = found,
                .note = note, .notelen = notelen};
    if (note && notelen) note[0] = 0;
    char p[4096];
    if (strlen(s.build_id) >= 4) {
        for (size_t i = 0; i < nroots; i++) {
            snprintf(p, sizeof p, "%s/.build-id/%.2s/%s.debug", roots[i], s.build_id, s.build_id + 2);
            if (try_build_id(&s, p)) return true;
        }
    }
    char name[256];
    uint32_t crc;
    if (!file || path[0] != '/' || !read_debuglink(file, name, sizeof name, &crc)) return false;
    const char *slash = strrchr(path, '/');
    int dirlen = (int)(slash - path); /* "/lib/x.so": "" is the root directory */
    snprintf(p, sizeof p, "%.*s/%s", dirlen, path, name);
    if (try_debuglink(&s, p, path, crc)) return true;
    snprintf(p, sizeof p, "%.*s/.debug/%s", dirlen, path, name);
    if (try_debuglink(&s, p, path, crc)) return true;
    for (size_t i = 0; i < nroots; i++) {
        snprintf(p, sizeof p, "%s%.*s/%s", roots[i], dirlen, path, name);
        if (try_debuglink(&s, p, path, crc)) return true;
    }
    return false;
}
