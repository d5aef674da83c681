/* `dial9 symbolize [-o OUT] [--debug-dir DIR]... [--force] [-q] PATH...`: name the callchain
 * addresses of traces after the process is gone, possibly on another machine. Each file's
 * MemoryMapEvents say which module (path, build id) an address belongs to; modules are found
 * by build id (docs/symbols.md) and named with their ELF symbols, plus file:line and inlined
 * frames from DWARF when built with libdw (loaded with dlopen when needed, as zlib and libzstd
 * are for .bin.gz and .bin.zst files: common/libz_loader.h). The names are
 * appended to each file as one new stream of SymbolTableEntry events, or written to
 * symbolized copies with -o. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/libz_loader.h"
#include "common/libzstd_loader.h"
#include "cli/output_file.h"
#include "format/trace_paths.h"
#include "format/dec_input.h"
#include "format/dec_open_regular.h"
#include "format/decoder.h"
#include "symbols/sym_input.h"
#include "symbols/trace_scan.h"
#include "symbols/symbol_stream.h"
#include "symbols/symbolize_file.h"
#include "symbols/symbolizer.h"
#ifdef D9_HAVE_LIBDW
#include "symbols/dwarf/dwarf_backend.h"
#endif

#define MAX_DEBUG_DIRS 32
/* How long to wait for a file another process holds (the recorder's pipeline appending). */
#define LOCK_RETRIES 100
#define LOCK_RETRY_US 50000

static void symbolize_usage(FILE *out) {
    fprintf(out,
            "usage: dial9 symbolize [-o OUT] [--debug-dir DIR]... [--force] [-q] PATH...\n"
            "\n"
            "Name the callchain addresses of CPU samples and task dumps, using the memory maps\n"
            "recorded in each file: modules are found by build id at their recorded path, then\n"
            "in /usr/lib/debug/.build-id, then in the --debug-dir directories%s.\n"
            "Stripped modules take symbols and DWARF from their separate debug file: by build\n"
            "id or .gnu_debuglink (CRC checked) under /usr/lib/debug (DIAL9_DEBUG_FILE_DIRS:\n"
            "other roots, ':'-separated) and the --debug-dir directories.\n"
            "Names go into SymbolTableEntry events appended to each file (addresses the file\n"
            "already names are skipped); .bin.gz files get a new gzip member, .bin.zst a new\n"
            "zstd frame. Addresses nothing can name are written as module+0xOFFSET (OFFSET in\n"
            "the file).\n"
            "\n"
            "  -o, --output OUT    write symbolized copies instead (uncompressed); OUT is a file\n"
            "                      for one input, a directory for several (created if needed)\n"
            "  --debug-dir DIR     also look for ELF and .debug files in DIR: DIR/.build-id/xx/\n"
            "                      yyyy[.debug], DIR/<file name>, DIR/<recorded path> (repeatable)\n"
            "  --force             resolve every address again, even those already named\n"
            "  -q, --quiet         no per-file summary\n"
            "  -h, --help\n"
            "\n"
            "%s"
            "A damaged file (docs/cli.md, \"Damage and torn tails\") is not changed in place; -o\n"
            "copies all of it with the symbols of its intact streams. In place, only a torn final\n"
            "frame (a file cut short by a crash) is dropped, for the appended stream to follow it.\n"
            "\n"
            "Exit status: 0 done, 1 a file could not be read, decoded or written, or is damaged,\n"
            "2 usage error.\n",
#ifdef D9_HAVE_LIBDW
            ", then debuginfod when DEBUGINFOD_URLS is set",
            "Source file:line and inlined frames come from DWARF (libdw.so.1, loaded when\n"
            "needed) when available.\n\n"
#else
            "",
            "Built without libdw: function names only (no file:line, no inlined frames).\n\n"
#endif
    );
}

typedef struct options {
    const char *output;
    const char *debug_dirs[MAX_DEBUG_DIRS];
    size_t ndebug;
    bool force, quiet;
} options;

/* ------------------------------------------------------------------ reading a trace */

typedef struct decoded {
    d9_dec_status status;
    uint64_t good_bytes; /* decoded bytes up to a torn final frame, else all of them */
    bool torn_tail;      /* the last frame is incomplete (D9_DEC_TRUNCATED, or after damage) */
    bool gzip, zstd;
    char message[600];
} decoded;

/* Decode `path` into `in`. False when it could not be opened (message says why). */
static bool read_trace(const char *path, d9_sym_input *in, decoded *out) {
    memset(out, 0, sizeof *out);
    d9_decoder *d = d9_dec_open_path(path, NULL, out->message, sizeof out->message);
    if (!d) return false;
    uint64_t lost_refs = d9_sym_input_read(d, in, false); /* symbols/trace_scan.h */
    out->status = d9_dec_state(d);
    out->good_bytes = d9_dec_stop_offset(d);
    out->torn_tail = d9_dec_get_stats(d)->torn_tail;
    out->gzip = d9_dec_get_stats(d)->gzip;
    out->zstd = d9_dec_get_stats(d)->zstd;
    snprintf(out->message, sizeof out->message, "%s", d9_dec_message(d));
    if (lost_refs)
        fprintf(stderr, "dial9 symbolize: %s: %" PRIu64 " callchain(s) refer to undefined stack pool ids\n",
                path, lost_refs);
    d9_dec_close(d);
    return true;
}

/* ------------------------------------------------------------------ writing */

/* One zstd frame holding `len` bytes (a .bin.zst grows by appending frames). NULL with the
 * reason in err. */
static uint8_t *zstd_frame(const uint8_t *data, size_t len, size_t *out_len, char *err, size_t errlen) {
    const d9_libzstd *z = d9_libzstd_get();
    if (!z) {
        snprintf(err, errlen, "%s", d9_libzstd_error());
        return NULL;
    }
    size_t cap = z->compressBound(len);
    uint8_t *out = malloc(cap);
    if (!out) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *out_len = z->compress(out, cap, data, len, 3);
    if (z->isError(*out_len)) {
        snprintf(err, errlen, "zstd: %s", z->getErrorName(*out_len));
        free(out);
        return NULL;
    }
    return out;
}

/* One gzip member holding `len` bytes (a .bin.gz grows by appending members). NULL with the
 * reason in err. */
static uint8_t *gzip_member(const uint8_t *data, size_t len, size_t *out_len, char *err, size_t errlen) {
    const d9_libz *z = d9_libz_get();
    if (!z) {
        snprintf(err, errlen, "%s", d9_libz_error());
        return NULL;
    }
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (z->deflateInit2_(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, (int)sizeof zs) != Z_OK) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    size_t cap = z->deflateBound(&zs, (uLong)len) + 64;
    uint8_t *out = malloc(cap);
    if (!out) {
        snprintf(err, errlen, "out of memory");
        z->deflateEnd(&zs);
        return NULL;
    }
    zs.next_in = (Bytef *)(uintptr_t)data;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    int rc = z->deflate(&zs, Z_FINISH);
    *out_len = cap - zs.avail_out;
    z->deflateEnd(&zs);
    if (rc != Z_STREAM_END) {
        snprintf(err, errlen, "deflate failed (%d)", rc);
        free(out);
        return NULL;
    }
    return out;
}

static bool write_all(int fd, const void *p, size_t len) {
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p = (const char *)p + w;
        len -= (size_t)w;
    }
    return true;
}

/* Write the first `good` decoded bytes of `in_path` and then `tail` to `out_path`, as a
 * d9_output_file (an interrupted run leaves no half file under the name). */
static bool write_copy(const char *in_path, bool gz, bool zst, uint64_t good, const uint8_t *tail,
                       size_t tail_len, const char *out_path, char *err, size_t errlen) {
    d9_output_file of;
    if (d9_output_open(&of, out_path, err, errlen) != 0) return false;
    int out = of.fd;
    bool ok = true;
    static uint8_t buf[1 << 16];
    char why[320] = "";
    if (gz || zst) {
        /* the decoder's inputs, as it read the file: the same bytes up to `good` */
        int zfd = d9_open_regular(in_path, O_RDONLY, NULL, 0);
        d9_input *raw = zfd >= 0 ? d9_input_from_fd(zfd, true) : NULL;
        if (!raw && zfd >= 0) close(zfd);
        d9_input *z = raw ? d9_input_unwrap(gz ? D9_INPUT_GZIP : D9_INPUT_ZSTD, raw, NULL, 0, why, sizeof why) : NULL;
        if (!z) ok = false;
        while (ok && good > 0) {
            long n = d9_input_read(z, buf, good < sizeof buf ? good : sizeof buf);
            if (n <= 0) ok = false;
            else {
                ok = write_all(out, buf, (size_t)n);
                good -= (uint64_t)n;
            }
        }
        d9_input_close(z);
    } else {
        int in = d9_open_regular(in_path, O_RDONLY, NULL, 0);
        if (in < 0) ok = false;
        while (ok && good > 0) {
            ssize_t n = read(in, buf, good < sizeof buf ? good : sizeof buf);
            if (n <= 0) ok = false;
            else {
                ok = write_all(out, buf, (size_t)n);
                good -= (uint64_t)n;
            }
        }
        if (in >= 0) close(in);
    }
    if (ok) ok = write_all(out, tail, tail_len);
    if (!ok) {
        snprintf(err, errlen, "%s: cannot write the copy: %s", out_path,
                 why[0] ? why : errno ? strerror(errno) : "read error");
        d9_output_abort(&of);
        return false;
    }
    return d9_output_commit(&of, err, errlen) == 0;
}

/* ------------------------------------------------------------------ one file */

typedef struct run {
    const options *opt;
    d9_symbolizer *sym;
} run;

static void note_missing(const char *path, const char *build_id, void *ctx) {
    (void)ctx;
    const char *slash = strrchr(path, '/');
    fprintf(stderr, "dial9 symbolize: note: no ELF file found for %s%s%s%s: its addresses are named %s+0x...\n",
            path, build_id[0] ? " (build id " : " (no build id", build_id, ")", slash ? slash + 1 : path);
}

static void note_debug_file(const char *path, const char *note, void *ctx) {
    (void)ctx;
    fprintf(stderr, "dial9 symbolize: note: %s: %s\n", path, note);
}

static bool has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Lock the file against a concurrent symbolizer (the recorder's pipeline, another CLI run).
 * A live recorder holds its .active file locked for as long as it writes it. */
static int lock_file(int fd, int how, bool active) {
    for (int i = 0; i < LOCK_RETRIES; i++) {
        if (flock(fd, how | LOCK_NB) == 0) return 0;
        if (errno != EWOULDBLOCK || active) return -1;
        usleep(LOCK_RETRY_US);
    }
    return -1;
}

/* Returns false when the file failed. */
static bool symbolize_path(run *rn, const char *path, const char *out_path) {
    const options *opt = rn->opt;
    bool in_place = out_path == NULL;
    bool active = has_suffix(path, ".active");
    char why[600];
    /* In place, never through a symbolic link: another user's link in a run directory must not
     * make us append to the file it points at. */
    int fd = d9_open_regular(path, in_place ? O_RDWR | O_APPEND | O_NOFOLLOW : O_RDONLY, why, sizeof why);
    if (fd < 0) {
        int e = errno;
        fprintf(stderr, "dial9 symbolize: %s%s\n", why,
                in_place && e == ELOOP ? " (a symbolic link: not written through in place; use -o to write a "
                                         "symbolized copy)"
                : in_place && (e == EACCES || e == EROFS || e == EPERM) ? " (use -o to write a symbolized copy)"
                                                                        : "");
        return false;
    }
    bool ok = false;
    d9_sym_input in;
    d9_sym_input_init(&in);
    d9_symbol_stream *stream = NULL;
    uint8_t *member = NULL;
    char err[PATH_MAX + 256];
    if (lock_file(fd, in_place ? LOCK_EX : LOCK_SH, active) != 0) {
        bool live = active && errno == EWOULDBLOCK;
        if (!live) {
            fprintf(stderr, "dial9 symbolize: %s: busy (locked by another process)\n", path);
            goto done;
        }
        if (in_place) {
            fprintf(stderr, "dial9 symbolize: %s: skipped: a running recorder is writing it\n", path);
            ok = true;
            goto done;
        }
        /* A copy of a segment still being written: what is complete so far. */
    }
    /* as every reader: an empty file is no trace (an empty .active one is a segment just opened) */
    struct stat empty;
    if (!active && fstat(fd, &empty) == 0 && empty.st_size == 0) {
        fprintf(stderr, "dial9 symbolize: %s: not symbolized: empty file: not a dial9 trace (no stream header)\n", path);
        goto done;
    }
    decoded dec;
    if (!read_trace(path, &in, &dec)) {
        fprintf(stderr, "dial9 symbolize: %s\n", dec.message);
        goto done;
    }
    if (dec.status == D9_DEC_ERROR) {
        fprintf(stderr, "dial9 symbolize: %s: not symbolized: %s\n", path, dec.message);
        goto done;
    }
    if (in.oom) {
        fprintf(stderr, "dial9 symbolize: %s: out of memory\n", path);
        goto done;
    }
    /* A damaged file is left as it is in place: its bytes are all kept (readers skip the
     * damage to the next stream). A copy (-o) holds them all too, with the symbols of every
     * intact stream; the damage is reported either way (exit status 1). */
    bool damaged = dec.status == D9_DEC_DAMAGED;
    if (damaged && in_place) {
        fprintf(stderr, "dial9 symbolize: %s: not symbolized: %s (use -o to write a symbolized copy)\n",
                path, dec.message);
        goto done;
    }
    if (damaged) fprintf(stderr, "dial9 symbolize: %s: %s (copied as it is)\n", path, dec.message);
    if (dec.torn_tail) {
        if (in_place && (dec.gzip || dec.zstd)) {
            fprintf(stderr, "dial9 symbolize: %s: not symbolized: %s (use -o to write a repaired copy)\n",
                    path, dec.message);
            goto done;
        }
        struct stat sb;
        if (in_place && fstat(fd, &sb) != 0) {
            fprintf(stderr, "dial9 symbolize: %s: %s\n", path, strerror(errno));
            goto done;
        }
        uint64_t cut = in_place ? (uint64_t)sb.st_size - dec.good_bytes : 0;
        if (in_place && (dec.good_bytes > (uint64_t)sb.st_size || cut > D9_DEC_WRITER_FRAME_MAX)) {
            /* never more than one frame: anything else is not a torn tail */
            fprintf(stderr, "dial9 symbolize: %s: not symbolized: would cut %" PRIu64 " bytes, more than one frame\n",
                    path, cut);
            goto done;
        }
        if (in_place)
            fprintf(stderr, "dial9 symbolize: %s: dropping %" PRIu64 " bytes of an incomplete final frame\n",
                    path, cut);
        /* Our stream must follow a frame boundary, or readers would never reach it. */
        if (in_place && ftruncate(fd, (off_t)dec.good_bytes) != 0) {
            fprintf(stderr, "dial9 symbolize: %s: cannot cut the incomplete frame: %s\n", path, strerror(errno));
            goto done;
        }
    }
    stream = d9_symbol_stream_new();
    d9_symbolize_stats st = {0};
    if (!stream || !d9_symbolize_input(rn->sym, &in, opt->force, stream, &st)) {
        fprintf(stderr, "dial9 symbolize: %s: out of memory\n", path);
        goto done;
    }
    size_t len;
    const uint8_t *bytes = d9_symbol_stream_bytes(stream, &len, &st.entries);
    if (!bytes) {
        fprintf(stderr, "dial9 symbolize: %s: out of memory\n", path);
        goto done;
    }
    if (in.map_count == 0 && st.fallback > 0)
        fprintf(stderr, "dial9 symbolize: %s: note: the file records no memory maps (MemoryMapEvent): "
                        "its user-space addresses cannot be named\n", path);
    d9_symbolizer_missing_modules(rn->sym, note_missing, NULL);
    d9_symbolizer_module_notes(rn->sym, note_debug_file, NULL);
    const char *knote = d9_symbolizer_kernel_note(rn->sym);
    if (knote[0]) fprintf(stderr, "dial9 symbolize: %s: note: %s\n", path, knote);

    if (in_place) {
        const uint8_t *w = bytes;
        size_t wlen = len;
        if (len > 0 && (dec.gzip || dec.zstd)) {
            member = dec.gzip ? gzip_member(bytes, len, &wlen, err, sizeof err)
                              : zstd_frame(bytes, len, &wlen, err, sizeof err);
            if (!member) {
                fprintf(stderr, "dial9 symbolize: %s: cannot compress: %s\n", path, err);
                goto done;
            }
            w = member;
        }
        struct stat sb;
        if (wlen > 0) {
            int e = fstat(fd, &sb) == 0 ? d9_append_stream(fd, w, wlen, (uint64_t)sb.st_size) : -errno;
            if (e != 0) {
                fprintf(stderr, "dial9 symbolize: %s: cannot append: %s\n", path, strerror(-e));
                goto done;
            }
        }
        st.bytes = wlen;
    } else {
        if (!write_copy(path, dec.gzip, dec.zstd, dec.good_bytes, bytes, len, out_path, err, sizeof err)) {
            fprintf(stderr, "dial9 symbolize: %s\n", err);
            goto done;
        }
        st.bytes = len;
    }
    if (!opt->quiet) {
        printf("%s: %" PRIu64 " addresses: %" PRIu64 " named, %" PRIu64 " as module+offset", path,
               st.addresses, st.named, st.fallback);
        if (st.skipped) printf(", %" PRIu64 " already named", st.skipped);
        printf("; %" PRIu64 " symbol entries, %" PRIu64 " bytes %s%s\n", st.entries, st.bytes,
               in_place ? "appended" : "-> ", in_place ? "" : out_path);
    }
    ok = !damaged;
done:
    free(member);
    d9_symbol_stream_free(stream);
    d9_sym_input_free(&in);
    close(fd);
    return ok;
}

/* ------------------------------------------------------------------ outputs */

static bool is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The copy's file name: the input's, without .gz or .zst (copies are plain) and .active. */
static void copy_name(const char *in, char *out, size_t len) {
    const char *slash = strrchr(in, '/');
    snprintf(out, len, "%s", slash ? slash + 1 : in);
    if (has_suffix(out, ".active")) out[strlen(out) - 7] = 0;
    if (has_suffix(out, ".gz")) out[strlen(out) - 3] = 0;
    if (has_suffix(out, ".zst")) out[strlen(out) - 4] = 0;
}

static bool same_file(const char *a, const char *b) {
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* Output path of each input (NULL entries: in place). False on a usage problem. */
static bool plan_outputs(const options *opt, const d9_path_list *paths, char **outs) {
    if (!opt->output) return true;
    bool dir = paths->count > 1 || is_dir(opt->output);
    if (dir && !is_dir(opt->output) && mkdir(opt->output, 0755) != 0) {
        fprintf(stderr, "dial9 symbolize: %s: %s\n", opt->output, strerror(errno));
        return false;
    }
    for (size_t i = 0; i < paths->count; i++) {
        char name[PATH_MAX];
        copy_name(paths->paths[i], name, sizeof name);
        size_t len = strlen(opt->output) + strlen(name) + 2;
        outs[i] = malloc(len);
        if (!outs[i]) return false;
        if (dir) snprintf(outs[i], len, "%s/%s", opt->output, name);
        else snprintf(outs[i], len, "%s", opt->output);
        for (size_t j = 0; j < i; j++) {
            if (strcmp(outs[i], outs[j]) == 0) {
                fprintf(stderr, "dial9 symbolize: %s and %s would both be written to %s: symbolize them separately\n",
                        paths->paths[j], paths->paths[i], outs[i]);
                return false;
            }
        }
        if (same_file(paths->paths[i], outs[i])) {
            fprintf(stderr, "dial9 symbolize: -o %s would overwrite its input (leave out -o to symbolize in place)\n",
                    outs[i]);
            return false;
        }
    }
    return true;
}

int d9_cmd_symbolize(int argc, char **argv) {
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"debug-dir", required_argument, NULL, 'd'},
        {"force", no_argument, NULL, 'f'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    options opt = {0};
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': opt.output = optarg; break;
        case 'd':
            if (opt.ndebug == MAX_DEBUG_DIRS) {
                fprintf(stderr, "dial9 symbolize: at most %d --debug-dir options\n", MAX_DEBUG_DIRS);
                return D9_EXIT_USAGE;
            }
            if (!is_dir(optarg)) {
                fprintf(stderr, "dial9 symbolize: --debug-dir %s: not a directory\n", optarg);
                return D9_EXIT_USAGE;
            }
            opt.debug_dirs[opt.ndebug++] = optarg;
            break;
        case 'f': opt.force = true; break;
        case 'q': opt.quiet = true; break;
        case 'h': symbolize_usage(stdout); return D9_EXIT_OK;
        case ':':
            fprintf(stderr, "dial9 symbolize: option '%s' needs a value\n", argv[optind - 1]);
            symbolize_usage(stderr);
            return D9_EXIT_USAGE;
        default:
            fprintf(stderr, "dial9 symbolize: unknown option '%s'\n", argv[optind - 1]);
            symbolize_usage(stderr);
            return D9_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "dial9 symbolize: no PATH given\n");
        symbolize_usage(stderr);
        return D9_EXIT_USAGE;
    }
    d9_path_list paths = {0};
    char err[512];
    if (d9_expand_paths(argc - optind, argv + optind, &paths, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 symbolize: %s\n", err);
        d9_path_list_free(&paths);
        return D9_EXIT_DATA;
    }
    char **outs = calloc(paths.count, sizeof *outs);
    int rc = D9_EXIT_OK;
    if (!outs || !plan_outputs(&opt, &paths, outs)) {
        rc = outs ? D9_EXIT_USAGE : D9_EXIT_DATA;
        goto out;
    }
    d9_sym_backend *backend = NULL;
#ifdef D9_HAVE_LIBDW
    /* libdw is loaded now, not when dial9 starts (libdw_loader.h); without it, names only */
    const char *why = NULL;
    backend = d9_dwarf_backend_new(opt.debug_dirs, opt.ndebug, &why);
    if (!backend)
        fprintf(stderr, "dial9 symbolize: no file:line or inlined frames (%s): function names only\n",
                why);
#endif
    d9_sym_options so = {.debug_dirs = opt.debug_dirs, .debug_dir_count = opt.ndebug,
                         .system_debug_dir = true, .backend = backend};
    run rn = {.opt = &opt, .sym = d9_symbolizer_new(&so)};
    if (!rn.sym) {
        fprintf(stderr, "dial9 symbolize: out of memory\n");
        rc = D9_EXIT_DATA;
    }
    for (size_t i = 0; rn.sym && i < paths.count; i++)
        if (!symbolize_path(&rn, paths.paths[i], outs[i])) rc = D9_EXIT_DATA;
    d9_symbolizer_free(rn.sym);
    if (backend) backend->close(backend->ctx);
out:
    for (size_t i = 0; outs && i < paths.count; i++) free(outs[i]);
    free(outs);
    d9_path_list_free(&paths);
    return rc;
}
