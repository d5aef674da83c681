/* The ledger of settled runs (sinks/run_ledger.h) and the trace-file scan that keeps it
 * (sinks/trace_files.h). The lines: what is accepted, skipped and which line of a run wins. The
 * scan: settled runs are written down, live, recent and current ones never; a later scan gives
 * the same index from the ledger (and does use it: a line changed behind its back shows), a run
 * directory that changed since is read again, a ledger of mostly dead lines is written again,
 * and a damaged ledger costs nothing but the full scan. The trust window: after a scan that
 * checked every run, lines are taken unchecked until d9_tf_index_check, and a writer checks
 * them before it deletes anything by them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "test_rng.h"
#include "sinks/run_ledger.h"
#include "sinks/segment_writer.h"
#include "sinks/trace_files.h"
#include "trace_files_util.h"

/* ------------------------------------------------------------------ the lines */

static void test_parse(void) {
    const char text[] = "r a 10 2 0.0.100.5 1.1.50.-7\n"     /* good */
                        "r b/x 10 0\n"                      /* a path */
                        "r .. 10 0\n"                       /* not a run */
                        "r c 10 1 0.9.1.1\n"                /* unknown kind */
                        "r d 10 2 0.0.1.1\n"                /* fewer files than counted */
                        "r e 10 1 0.0.1.1 junk\n"           /* more than counted */
                        "x f 10 0\n"                        /* not a line of ours */
                        "r a 11 1 3.0.7.8\n"                /* a later line of a */
                        "r g 99999999999999999999999 0\n"   /* out of range */
                        "v 500\n"                           /* checked every run at 500 */
                        "v 700\n"                           /* and at 700 */
                        "v 600\n"                           /* appended late by a racing scan */
                        "v -3\n"                            /* not a time */
                        "v 800 x\n"                         /* junk after it */
                        "r h 12 1 4.0.9.9";                 /* cut: no newline */
    d9_ledger l = {0};
    CHECK(d9_ledger_parse(&l, text, sizeof text - 1));
    CHECK_EQ_U64(l.lines, 14);
    CHECK_EQ_U64(l.verified_ns, 700);
    CHECK(d9_ledger_trusted(&l, 700));
    CHECK(d9_ledger_trusted(&l, 700 + D9_LEDGER_TRUST_NS - 1));
    CHECK(!d9_ledger_trusted(&l, 700 + D9_LEDGER_TRUST_NS)); /* too long ago */
    CHECK(!d9_ledger_trusted(&l, 699));                      /* the clock went back */
    CHECK_EQ_U64(l.n, 2); /* both lines of a */
    CHECK(d9_ledger_find(&l, "a", 10) == NULL); /* the later line wins */
    CHECK(!l.runs[0].used && !l.runs[1].used);  /* a line that did not match is not kept */
    CHECK(d9_ledger_latest(&l, "a") == &l.runs[1]);
    d9_ledger_run *a = d9_ledger_find(&l, "a", 11);
    CHECK(a != NULL);
    if (a) {
        CHECK_EQ_U64(a->nfiles, 1);
        CHECK_EQ_U64(d9_ledger_files(&l, a)[0].seq, 3);
        CHECK_EQ_U64(d9_ledger_files(&l, a)[0].size, 7);
        CHECK(a->used);
    }
    CHECK(d9_ledger_find(&l, "h", 12) == NULL);
    CHECK(d9_ledger_find(&l, "b/x", 10) == NULL);
    d9_ledger_free(&l);

    /* written and read back */
    d9_ledger_file files[2] = {{.seq = 4, .size = 123, .mtime_ns = -3, .kind = 3}, {.seq = 9, .size = 0, .mtime_ns = 1, .kind = 2}};
    d9_ledger_out o = {0};
    d9_ledger_add(&o, "run-1", -42, files, 2);
    d9_ledger_add(&o, "with space", 1, files, 1); /* not written: readers could not parse it */
    d9_ledger_add(&o, "empty", 5, NULL, 0);
    d9_ledger_add_verified(&o, 1234);
    CHECK_EQ_U64(o.runs, 2);
    CHECK(d9_ledger_parse(&l, o.buf, o.len));
    CHECK_EQ_U64(l.n, 2);
    CHECK_EQ_U64(l.verified_ns, 1234);
    d9_ledger_run *r = d9_ledger_find(&l, "run-1", -42);
    const d9_ledger_file *rf = r ? d9_ledger_files(&l, r) : NULL;
    CHECK(r && r->nfiles == 2 && rf[0].kind == 3 && rf[0].mtime_ns == -3 && rf[1].seq == 9);
    CHECK(d9_ledger_find(&l, "empty", 5) != NULL);
    d9_ledger_free(&l);
    free(o.buf);
}

/* The rule for names before the word-wise check, byte by byte: what a copy of the name field
 * holds (a NUL ends it) is 1..255 bytes, not "." or "..", none of them whitespace, control,
 * DEL or '/'. */
static bool name_rule(const unsigned char *name, size_t len) {
    size_t n = 0;
    while (n < len && name[n]) n++;
    if (n == 0 || n > 255 || (n == 1 && name[0] == '.') || (n == 2 && name[0] == '.' && name[1] == '.'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (name[i] <= ' ' || name[i] == 0x7f || name[i] == '/') return false;
    return true;
}

/* Every byte value at every position of names 1..19 bytes long (across the 8-byte words the
 * check reads), in a ledger line and to d9_ledger_name_ok: accepted iff the byte rule accepts
 * it. A ' ' or '\n' in the name splits the field or the line: such a line is never good. */
static void test_name_characters(void) {
    size_t wrong = 0, cases = 0;
    for (size_t len = 1; len <= 19; len++) {
        for (size_t pos = 0; pos < len; pos++) {
            for (int b = 0; b < 256; b++) {
                unsigned char name[32];
                for (size_t i = 0; i < len; i++) name[i] = (unsigned char)('a' + i);
                name[pos] = (unsigned char)b;
                char text[128];
                memcpy(text, "r ", 2);
                memcpy(text + 2, name, len);
                static const char rest[] = " 10 1 4.0.5.6\n";
                memcpy(text + 2 + len, rest, sizeof rest - 1);
                bool want = b != ' ' && b != '\n' && name_rule(name, len);
                d9_ledger l = {0};
                CHECK(d9_ledger_parse(&l, text, 2 + len + sizeof rest - 1));
                bool got = l.n == 1;
                if (got) { /* found by the name a copy would hold, with its file */
                    char cut[32];
                    memcpy(cut, name, len);
                    cut[len] = 0;
                    d9_ledger_run *r = d9_ledger_latest(&l, cut);
                    got = r && strcmp(r->name, cut) == 0 && r->dir_mtime_ns == 10 && r->nfiles == 1 &&
                          d9_ledger_files(&l, r)[0].size == 5;
                }
                bool ok_fn = want;
                if (b != 0) { /* a C string cannot hold the NUL */
                    char str[32];
                    memcpy(str, name, len);
                    str[len] = 0;
                    ok_fn = d9_ledger_name_ok(str);
                }
                bool bad = got != want || ok_fn != name_rule(name, len);
                if (bad && wrong++ < 5)
                    fprintf(stderr, "name of %zu bytes, byte %d at %zu: %s (want %s), name_ok %d\n", len, b, pos,
                            got ? "accepted" : "rejected", want ? "accepted" : "rejected", ok_fn);
                cases++;
                d9_ledger_free(&l);
            }
        }
    }
    CHECK_EQ_U64(wrong, 0);
    CHECK_EQ_U64(cases, 190 * 256);

    /* the length and the dot names */
    char longest[257];
    memset(longest, 'x', 256);
    longest[256] = 0;
    CHECK(!d9_ledger_name_ok(longest));
    longest[255] = 0;
    CHECK(d9_ledger_name_ok(longest));
    CHECK(!d9_ledger_name_ok("") && !d9_ledger_name_ok(".") && !d9_ledger_name_ok(".."));
    CHECK(d9_ledger_name_ok("...") && d9_ledger_name_ok(".a") && d9_ledger_name_ok("a.") && d9_ledger_name_ok("\xff\x80"));
    char text[700];
    snprintf(text, sizeof text, "r %s 1 0\nr %sy 2 0\nr . 3 0\nr .. 4 0\nr ... 5 0\nr .a 6 0\n", longest, longest);
    d9_ledger l = {0};
    CHECK(d9_ledger_parse(&l, text, strlen(text)));
    CHECK_EQ_U64(l.n, 3);
    d9_ledger_run *r = d9_ledger_latest(&l, longest);
    CHECK(r && r->dir_mtime_ns == 1);
    CHECK(d9_ledger_latest(&l, "...") != NULL && d9_ledger_latest(&l, ".a") != NULL);
    d9_ledger_free(&l);
}

/* A number of `digits` digits (from a pattern) in each numeric field of a line: accepted iff
 * it has at most 20 digits and strtoull takes it without overflow (and the signed fields: not
 * past INT64_MAX); accepted, its value is strtoull's. */
static size_t check_number(const char *num) {
    errno = 0;
    unsigned long long want = strtoull(num, NULL, 10);
    bool fits = errno != ERANGE && strlen(num) <= 20;
    bool fits_signed = fits && want <= (unsigned long long)INT64_MAX;
    char text[256];
    size_t wrong = 0;
    for (int field = 0; field < 4; field++) {
        /* the directory mtime, a file's seq, its size, its mtime (the line's last field) */
        snprintf(text, sizeof text, field == 0 ? "r n %s 1 1.0.2.3\n" : field == 1 ? "r n 9 1 %s.0.2.3\n"
                                    : field == 2 ? "r n 9 1 1.0.%s.3\n" : "r n 9 1 1.0.2.%s\n", num);
        d9_ledger l = {0};
        CHECK(d9_ledger_parse(&l, text, strlen(text)));
        bool ok = (field == 0 || field == 3) ? fits_signed : fits;
        if (l.n != (ok ? 1u : 0u)) {
            wrong++;
        } else if (ok) {
            const d9_ledger_file *f = d9_ledger_files(&l, &l.runs[0]);
            uint64_t got = field == 0 ? (uint64_t)l.runs[0].dir_mtime_ns : field == 1 ? f->seq
                           : field == 2 ? f->size : (uint64_t)f->mtime_ns;
            wrong += got != want;
        }
        if (fits_signed && (field == 0 || field == 3)) { /* and negative */
            snprintf(text, sizeof text, field == 0 ? "r n -%s 1 1.0.2.3\n" : "r n 9 1 1.0.2.-%s\n", num);
            d9_ledger_free(&l);
            l = (d9_ledger){0};
            CHECK(d9_ledger_parse(&l, text, strlen(text)));
            int64_t got = l.n != 1 ? 1 : field == 0 ? l.runs[0].dir_mtime_ns
                                                    : d9_ledger_files(&l, &l.runs[0])->mtime_ns;
            wrong += got != -(int64_t)want;
        }
        d9_ledger_free(&l);
    }
    if (wrong) fprintf(stderr, "number %s: %zu fields parsed wrong\n", num, wrong);
    return wrong;
}

static void test_numbers(void) {
    size_t wrong = 0;
    d9t_rng rng = {88172645463325252ull};
    for (size_t digits = 1; digits <= 23; digits++) {
        char num[32];
        for (int pattern = 0; pattern < 40; pattern++) {
            for (size_t i = 0; i < digits; i++) {
                uint64_t rnd = d9t_rng_next(&rng);
                /* all 9s; 1 then 0s; leading zeros; UINT64_MAX's digits; then random */
                num[i] = pattern == 0 ? '9' : pattern == 1 ? (i ? '0' : '1') : pattern == 2 ? (i + 1 < digits ? '0' : '7')
                         : pattern == 3 ? "18446744073709551615999"[i] : (char)('0' + rnd % 10);
            }
            num[digits] = 0;
            wrong += check_number(num);
        }
    }
    static const char *const edges[] = {"18446744073709551615", "18446744073709551616", "18446744073709551619",
                                        "18446744073709551610", "18446744073709552000", "19000000000000000000",
                                        "99999999999999999999", "9223372036854775807", "9223372036854775808",
                                        "00000000000000000000", "000000000000000000000", "1844674407370955161",
                                        "12345678", "123456789", "1234567890123456", "12345678901234567"};
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) wrong += check_number(edges[i]);
    CHECK_EQ_U64(wrong, 0);
}

/* Lines at the 64-bit limits: the largest values are read back; one past them, INT64_MIN (never
 * written: the parse takes -INT64_MAX at most) and 21 digits are not. */
static void test_edge_lines(void) {
    const char text[] = "r max 9223372036854775807 1 18446744073709551615.3.18446744073709551615.9223372036854775807\n"
                        "r min -9223372036854775807 1 0.0.0.-9223372036854775807\n"
                        "r zeros 00000000000000000001 1 00000000000000000002.0.0.-0\n"
                        "r int64min -9223372036854775808 0\n"
                        "r mtime-over 9223372036854775808 0\n"
                        "r seq-over 1 1 18446744073709551616.0.0.0\n"
                        "r size-over 1 1 0.0.18446744073709551616.0\n"
                        "r fmtime-over 1 1 0.0.0.9223372036854775808\n"
                        "r kind-max 1 1 0.18446744073709551615.0.0\n"
                        "r digits21 000000000000000000001 0\n"
                        "r count-over 1 18446744073709551616\n"
                        "v 9223372036854775807\n";
    d9_ledger l = {0};
    CHECK(d9_ledger_parse(&l, text, sizeof text - 1));
    CHECK_EQ_U64(l.lines, 12);
    CHECK_EQ_U64(l.n, 3);
    CHECK_EQ_U64(l.verified_ns, INT64_MAX);
    d9_ledger_run *r = d9_ledger_find(&l, "max", INT64_MAX);
    const d9_ledger_file *f = r ? d9_ledger_files(&l, r) : NULL;
    CHECK(f && f->seq == UINT64_MAX && f->kind == 3 && f->size == UINT64_MAX && f->mtime_ns == INT64_MAX);
    r = d9_ledger_find(&l, "min", -INT64_MAX);
    f = r ? d9_ledger_files(&l, r) : NULL;
    CHECK(f && f->seq == 0 && f->size == 0 && f->mtime_ns == -INT64_MAX);
    r = d9_ledger_find(&l, "zeros", 1);
    f = r ? d9_ledger_files(&l, r) : NULL;
    CHECK(f && f->seq == 2 && f->mtime_ns == 0);

    /* written and read back */
    d9_ledger_out o = {0};
    for (size_t i = 0; i < l.n; i++)
        d9_ledger_add(&o, l.runs[i].name, l.runs[i].dir_mtime_ns, d9_ledger_files(&l, &l.runs[i]), l.runs[i].nfiles);
    d9_ledger back = {0};
    CHECK(d9_ledger_parse(&back, o.buf, o.len));
    CHECK_EQ_U64(back.n, 3);
    r = d9_ledger_find(&back, "max", INT64_MAX);
    f = r ? d9_ledger_files(&back, r) : NULL;
    CHECK(f && f->seq == UINT64_MAX && f->size == UINT64_MAX && f->mtime_ns == INT64_MAX);
    CHECK(d9_ledger_find(&back, "min", -INT64_MAX) != NULL);
    d9_ledger_free(&back);
    d9_ledger_free(&l);
    free(o.buf);
}

/* ------------------------------------------------------------------ the scan */

static void write_file(const char *path, size_t size) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    for (size_t i = 0; i < size; i++) fputc('x', f);
    fclose(f);
}

/* mtime (and atime) `ago` seconds back */
static void age(const char *path, int ago) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct timespec t[2] = {{now.tv_sec - ago, now.tv_nsec}, {now.tv_sec - ago, now.tv_nsec}};
    CHECK(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW) == 0);
}

/* a run directory with trace.0.bin (size0) and trace.1.bin.gz (50), all `ago` seconds old */
static void make_run(const char *dir, const char *name, size_t size0, int ago) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/%s/trace.0.bin", dir, name);
    write_file(p, size0);
    age(p, ago);
    snprintf(p, sizeof p, "%s/%s/trace.1.bin.gz", dir, name);
    write_file(p, 50);
    age(p, ago);
    snprintf(p, sizeof p, "%s/%s", dir, name);
    age(p, ago); /* last: the files' creation changed it */
}

typedef struct scanned {
    uint64_t bytes, pinned, entries, next_seq, unchecked;
    char sig[8192]; /* every entry, oldest first */
} scanned;

/* The index a scan gives; with check, after d9_tf_index_check. */
static void scan_then(const char *dir, scanned *out, bool check) {
    d9_tf_index ix;
    CHECK(d9_tf_index_init(&ix, dir) == 0);
    CHECK(d9_tf_index_scan(&ix, "cur", &out->next_seq) == 0);
    size_t unchecked = 0;
    for (size_t i = 0; i < ix.nruns; i++) unchecked += ix.runs[i].unchecked;
    CHECK_EQ_U64(unchecked, ix.unchecked_runs);
    if (check) {
        CHECK(d9_tf_index_check(&ix) == (unchecked > 0));
        CHECK_EQ_U64(ix.unchecked_runs, 0);
    }
    out->unchecked = ix.unchecked_runs;
    out->bytes = ix.bytes;
    out->pinned = ix.pinned_bytes;
    out->entries = ix.end - ix.head;
    /* the scan leaves the entries unsorted; the oldest is found all the same */
    const d9_tf_entry *min = NULL;
    for (size_t i = ix.head; i < ix.end; i++) {
        const d9_tf_entry *e = &ix.entries[i];
        int c = min ? strcmp(ix.runs[e->run].name, ix.runs[min->run].name) : 0;
        if (!min || e->mtime_ns < min->mtime_ns ||
            (e->mtime_ns == min->mtime_ns && (c < 0 || (c == 0 && e->seq < min->seq))))
            min = e;
    }
    d9_tf_entry want = min ? *min : (d9_tf_entry){0}, oldest; /* copied: the sort moves entries */
    CHECK(d9_tf_index_oldest(&ix, &oldest) == (min != NULL));
    CHECK(!min || (oldest.run == want.run && oldest.seq == want.seq && oldest.kind == want.kind));
    CHECK(ix.sorted || !min);
    d9_tf_index_sort(&ix);
    size_t len = 0;
    out->sig[0] = 0;
    for (size_t i = ix.head; i < ix.end && len < sizeof out->sig - 100; i++) {
        const d9_tf_entry *e = &ix.entries[i];
        len += (size_t)snprintf(out->sig + len, sizeof out->sig - len, "%s/%llu.%u:%llu@%lld ", ix.runs[e->run].name,
                                (unsigned long long)e->seq, e->kind, (unsigned long long)e->size, (long long)e->mtime_ns);
    }
    d9_tf_index_free(&ix);
}

static void scan(const char *dir, scanned *out) { scan_then(dir, out, false); }

/* The ledger's lines starting with `kind` ('r': runs, 'v': scans that checked every run). */
static int ledger_lines_of(const char *dir, char kind) {
    char p[1024];
    snprintf(p, sizeof p, "%s/" D9_LEDGER_NAME, dir);
    FILE *f = fopen(p, "r");
    if (!f) return -1;
    int n = 0, c, prev = '\n';
    while ((c = fgetc(f)) != EOF) {
        n += prev == '\n' && c == kind;
        prev = c;
    }
    fclose(f);
    return n;
}

static int ledger_lines(const char *dir) { return ledger_lines_of(dir, 'r'); }

static uint64_t ledger_size(const char *dir) {
    char p[1024];
    snprintf(p, sizeof p, "%s/" D9_LEDGER_NAME, dir);
    struct stat st;
    return stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void replace_ledger(const char *dir, const char *text) {
    char p[1024];
    snprintf(p, sizeof p, "%s/" D9_LEDGER_NAME, dir);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static char *read_ledger(const char *dir) {
    char p[1024];
    snprintf(p, sizeof p, "%s/" D9_LEDGER_NAME, dir);
    FILE *f = fopen(p, "r");
    if (!f) return strdup("");
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strdup(buf);
}

/* The ledger with its "v" lines replaced by one `ago_s` seconds back. */
static void set_verified_ago(const char *dir, int64_t ago_s) {
    char *text = read_ledger(dir);
    size_t len = strlen(text), out = 0;
    for (size_t i = 0; i < len;) { /* keep every line but the "v" ones */
        char *nl = strchr(text + i, '\n');
        size_t end = nl ? (size_t)(nl - text) + 1 : len;
        if (text[i] != 'v') {
            memmove(text + out, text + i, end - i);
            out += end - i;
        }
        i = end;
    }
    text[out] = 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char line[64];
    snprintf(line, sizeof line, "v %lld\n", (long long)(now.tv_sec - ago_s) * 1000000000ll + now.tv_nsec);
    char *both = malloc(out + sizeof line);
    if (both) {
        memcpy(both, text, out);
        strcpy(both + out, line);
        replace_ledger(dir, both);
    }
    free(both);
    free(text);
}

static void test_scan(void) {
    char *dir = d9t_mkdtemp("ledger");
    char p[1024];
    for (int i = 0; i < 10; i++) {
        char name[32];
        snprintf(name, sizeof name, "run%d", i);
        make_run(dir, name, 100 + (size_t)i, 60 + i);
    }
    make_run(dir, "recent", 7, 0); /* may still change within the same clock tick */
    make_run(dir, "cur", 9, 60);   /* this writer's own run: never written down */
    /* a live run: its .active file locked by a writer (us) */
    snprintf(p, sizeof p, "%s/live", dir);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/live/trace.0.bin.active", dir);
    write_file(p, 33);
    int live_fd = open(p, O_RDWR | O_CLOEXEC);
    CHECK(live_fd >= 0 && d9_tf_lock_active(live_fd) == 0);
    snprintf(p, sizeof p, "%s/live", dir);
    age(p, 60);

    scanned s1, s2, s3;
    scan(dir, &s1);
    CHECK_EQ_U64(s1.bytes, 10 * 50 + (100 + 109) * 10 / 2 + 7 + 50 + 9 + 50);
    CHECK(ledger_size(dir) > 0);
    CHECK_EQ_U64(s1.pinned, 33 + ledger_size(dir)); /* the live .active, and the ledger itself */
    CHECK_EQ_U64(s1.next_seq, 2);
    CHECK_EQ_U64(ledger_lines(dir), 10); /* run0..run9 only */
    CHECK_EQ_U64(ledger_lines_of(dir, 'v'), 1); /* and that every run was checked */
    CHECK_EQ_U64(s1.unchecked, 0);
    char *text = read_ledger(dir);
    CHECK(strstr(text, "r run3 ") != NULL && !strstr(text, "r cur ") && !strstr(text, "r live ") && !strstr(text, "r recent "));

    /* from the ledger: the same index */
    scan(dir, &s2);
    CHECK_EQ_U64(s2.bytes, s1.bytes);
    CHECK_EQ_U64(s2.pinned, s1.pinned);
    CHECK_EQ_U64(s2.entries, s1.entries);
    CHECK_EQ_U64(s2.next_seq, 2);
    CHECK_STR(s2.sig, s1.sig);
    CHECK_EQ_U64(ledger_lines(dir), 10); /* nothing new to write down */
    CHECK_EQ_U64(s2.unchecked, 10);      /* within the trust window: taken unchecked */
    CHECK_EQ_U64(ledger_lines_of(dir, 'v'), 1);
    scan_then(dir, &s2, true); /* a check that finds every run as written down changes nothing */
    CHECK_STR(s2.sig, s1.sig);
    CHECK_EQ_U64(s2.bytes, s1.bytes);

    /* it is used: a size changed in run3's line (its directory unchanged) shows */
    char *at = strstr(text, "r run3 ");
    char *size = at ? strstr(at, " 0.0.103.") : NULL;
    CHECK(size != NULL);
    if (size) {
        memcpy(size, " 0.0.903.", 9);
        replace_ledger(dir, text);
        scan(dir, &s3);
        CHECK_EQ_U64(s3.bytes, s1.bytes + 800);
        memcpy(size, " 0.0.103.", 9);
        replace_ledger(dir, text);
    }
    free(text);

    /* a run directory that changed since its line: within the trust window, taken as the
     * line says until checked; then read again */
    snprintf(p, sizeof p, "%s/run5/trace.2.bin", dir);
    write_file(p, 1000);
    scan(dir, &s3);
    CHECK_EQ_U64(s3.bytes, s1.bytes);
    CHECK_EQ_U64(s3.unchecked, 10);
    scan_then(dir, &s3, true);
    CHECK_EQ_U64(s3.bytes, s1.bytes + 1000);
    CHECK_EQ_U64(s3.entries, s1.entries + 1);
    CHECK(strstr(s3.sig, "run5/2.0:1000@") != NULL);
    /* the last check too long ago: every run checked by the scan itself, and written down */
    set_verified_ago(dir, D9_LEDGER_TRUST_NS / 1000000000 + 1);
    scan(dir, &s3);
    CHECK_EQ_U64(s3.unchecked, 0);
    CHECK_EQ_U64(s3.bytes, s1.bytes + 1000);
    CHECK_EQ_U64(s3.entries, s1.entries + 1);
    CHECK_EQ_U64(ledger_lines_of(dir, 'v'), 2);
    /* a check "in the future" (the clock was set back): not trusted either */
    set_verified_ago(dir, -3600);
    scan(dir, &s3);
    CHECK_EQ_U64(s3.unchecked, 0);
    CHECK_EQ_U64(ledger_lines_of(dir, 'v'), 2);

    /* damaged: the full scan, and the lines written again */
    replace_ledger(dir, "r run1 12 1 0.0.1.1\ngarbage\n\x01\x02\nr run2 x\n");
    scan(dir, &s3);
    CHECK_EQ_U64(s3.bytes, s1.bytes + 1000);
    CHECK_EQ_U64(s3.entries, s1.entries + 1);

    /* mostly dead lines: written again with only the live ones */
    char junk[64 * 200 + 1] = "";
    for (int i = 0; i < 200; i++) snprintf(junk + strlen(junk), sizeof junk - strlen(junk), "r gone%d 5 0\n", i);
    text = read_ledger(dir);
    size_t tl = strlen(text);
    char *both = malloc(tl + strlen(junk) + 1);
    memcpy(both, text, tl);
    strcpy(both + tl, junk);
    replace_ledger(dir, both);
    free(both);
    free(text);
    int before = ledger_lines(dir);
    scan(dir, &s3);
    CHECK_EQ_U64(s3.bytes, s1.bytes + 1000);
    int after = ledger_lines(dir);
    printf("dead lines: %d lines before the scan, %d after\n", before, after);
    CHECK(before >= 200 && after >= 9 && after <= 11);
    text = read_ledger(dir);
    CHECK(strstr(text, "gone") == NULL);
    free(text);

    /* a rewrite's file left by a writer that died: removed once over a minute old */
    char stale[1100], fresh[1100];
    snprintf(stale, sizeof stale, "%s/" D9_LEDGER_NAME ".123.tmp", dir);
    snprintf(fresh, sizeof fresh, "%s/" D9_LEDGER_NAME ".456.tmp", dir);
    write_file(stale, 10);
    age(stale, 120);
    write_file(fresh, 10);
    scan(dir, &s3);
    CHECK(access(stale, F_OK) != 0);
    CHECK(access(fresh, F_OK) == 0);

    /* a ledger past D9_LEDGER_MAX_BYTES (sparse here) is not read, and is written again with
     * what the scan found: it cannot grow for ever */
    snprintf(p, sizeof p, "%s/" D9_LEDGER_NAME, dir);
    CHECK(truncate(p, (off_t)D9_LEDGER_MAX_BYTES + 4096) == 0);
    scan(dir, &s3);
    CHECK_EQ_U64(s3.bytes, s1.bytes + 1000);
    CHECK(ledger_size(dir) < 4096);
    CHECK(ledger_lines(dir) >= 9);
    CHECK_EQ_U64(s3.pinned, 33 + ledger_size(dir));

    close(live_fd);
    d9t_rm_rf(dir);
    free(dir);
}

/* Three settled runs (a oldest, then b, c: 1050 bytes each) written down by a scan that checked
 * them all, then b's trace.0.bin deleted behind the ledger's back; a writer whose budget is
 * max_total writes 400 bytes. Returns whether a's trace.0.bin is still there. */
static bool writer_after_deletion_behind_ledger(uint64_t max_total, uint64_t *deleted) {
    char *dir = d9t_mkdtemp("ledger-writer");
    make_run(dir, "a", 1000, 300);
    make_run(dir, "b", 1000, 200);
    make_run(dir, "c", 1000, 100);
    scanned s;
    scan(dir, &s);
    CHECK_EQ_U64(s.bytes, 3 * 1050);
    CHECK_EQ_U64(ledger_lines(dir), 3);
    char p[1024];
    snprintf(p, sizeof p, "%s/b/trace.0.bin", dir);
    CHECK(unlink(p) == 0);

    char err[256] = "";
    d9_segw_config cfg = {.trace_dir = dir, .run_id = "w", .max_file_size = 500, .max_total_size = max_total};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (w) {
        char buf[400];
        memset(buf, 'z', sizeof buf);
        CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
        d9_segw_stats st;
        d9_segw_get_stats(w, &st);
        *deleted = st.files_deleted;
        /* by what is there (the ledger too, which the budget counts), not by the ledger's word */
        CHECK_EQ_U64(st.bytes_on_disk, d9t_tree_bytes(dir, false));
        d9_segw_close(w);
    }
    snprintf(p, sizeof p, "%s/a/trace.0.bin", dir);
    bool kept = access(p, F_OK) == 0;
    snprintf(p, sizeof p, "%s/c/trace.0.bin", dir);
    CHECK(access(p, F_OK) == 0); /* the newest run's file is never the one to go */
    d9t_rm_rf(dir);
    free(dir);
    return kept;
}

/* The writer takes the ledger's word unchecked at its start, but checks it before deleting: a
 * file deleted behind the ledger's back must not make it delete another. */
static void test_checked_before_delete(void) {
    uint64_t deleted = 99;
    /* 2 150 bytes really there + 400 fit in 3 000 (the ledger's 3 150 would not) */
    CHECK(writer_after_deletion_behind_ledger(3000, &deleted));
    CHECK_EQ_U64(deleted, 0);
    /* 2 150 + 400 do not fit in 2 500: the oldest file goes, and only it */
    deleted = 99;
    CHECK(!writer_after_deletion_behind_ledger(2500, &deleted));
    CHECK_EQ_U64(deleted, 1);
}

/* Many runs named alike (the timestamp prefix of real runs), each written down twice with a
 * different mtime, some three times: every lookup finds the name's latest line, and names
 * that were never written down are not found. */
static void test_many_runs(void) {
    enum { RUNS = 700 };
    size_t cap = RUNS * 3 * 64, len = 0;
    char *text = malloc(cap);
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < RUNS; i++)
            if (pass < 2 || i % 7 == 0)
                len += (size_t)snprintf(text + len, cap - len, "r 20261203T120000Z-%d %d 0\n", i, 100 + pass);
    d9_ledger l = {0};
    CHECK(d9_ledger_parse(&l, text, len));
    CHECK_EQ_U64(l.n, 2 * RUNS + (RUNS + 6) / 7);
    size_t right = 0, absent = 0;
    char name[64];
    for (int i = 0; i < RUNS; i++) {
        snprintf(name, sizeof name, "20261203T120000Z-%d", i);
        d9_ledger_run *r = d9_ledger_latest(&l, name);
        right += r && strcmp(r->name, name) == 0 && r->dir_mtime_ns == (i % 7 == 0 ? 102 : 101);
        snprintf(name, sizeof name, "20261203T120000Z-%d", RUNS + i);
        absent += d9_ledger_latest(&l, name) == NULL;
    }
    CHECK_EQ_U64(right, RUNS);
    CHECK_EQ_U64(absent, RUNS);
    d9_ledger_free(&l);
    free(text);
}

int main(void) {
    test_parse();
    test_name_characters();
    test_numbers();
    test_edge_lines();
    test_many_runs();
    test_scan();
    test_checked_before_delete();
    return d9t_summary("test_run_ledger");
}
