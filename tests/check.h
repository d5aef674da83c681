/* A minimal test harness: CHECK macros that count, and a summary line. Each test program
 * returns nonzero when any check failed, so ctest sees it. */
#ifndef D9_TESTS_CHECK_H
#define D9_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int d9t_failed, d9t_passed;

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (cond) d9t_passed++;                                                            \
        else { d9t_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                 \
    do {                                                                                   \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                   \
        if (a_ == b_) d9t_passed++;                                                        \
        else { d9t_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%" PRIu64 " vs %" PRIu64 ")\n", \
                                     __FILE__, __LINE__, #a, #b, a_, b_); }                \
    } while (0)

#define CHECK_STR(a, b)                                                                    \
    do {                                                                                   \
        const char *a_ = (a), *b_ = (b);                                                   \
        if (a_ && b_ && strcmp(a_, b_) == 0) d9t_passed++;                                 \
        else { d9t_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s == \"%s\" (got \"%s\")\n", \
                                     __FILE__, __LINE__, #a, b_ ? b_ : "(null)", a_ ? a_ : "(null)"); } \
    } while (0)

/* Tests that need ../shared skip with exit code 0 and say so. */
static inline const char *d9t_shared_dir(void) {
    const char *d = getenv("D9_SHARED_DIR");
    return d && *d ? d : "../shared";
}

static inline int d9t_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, d9t_passed, d9t_failed);
    return d9t_failed ? 1 : 0;
}

#endif
