/* The version: written once in dial9/version.h; the library reports the same (d9_version),
 * the build names the shared library after its major version (SOVERSION), and the CLI prints
 * it. */
#include <limits.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"

int main(void) {
    CHECK_EQ_U64(d9_version(), DIAL9_VERSION);
    CHECK_STR(d9_version_string(), DIAL9_VERSION_STRING);
    CHECK_EQ_U64(DIAL9_VERSION, ((unsigned)DIAL9_VERSION_MAJOR << 16) | (DIAL9_VERSION_MINOR << 8) | DIAL9_VERSION_PATCH);
    char expect[64];
    snprintf(expect, sizeof expect, "%d.%d.%d", DIAL9_VERSION_MAJOR, DIAL9_VERSION_MINOR, DIAL9_VERSION_PATCH);
    CHECK_STR(DIAL9_VERSION_STRING, expect);

    const char *build = getenv("D9_BUILD_DIR");
    if (!build) {
        printf("D9_BUILD_DIR unset: the shared library's name is not checked\n");
        return d9t_summary("api_version");
    }
    /* libdial9.so.MAJOR -> libdial9.so.MAJOR.MINOR.PATCH */
    char link[PATH_MAX], target[PATH_MAX];
    snprintf(link, sizeof link, "%s/libdial9.so.%d", build, DIAL9_VERSION_MAJOR);
    ssize_t n = readlink(link, target, sizeof target - 1);
    CHECK(n > 0);
    if (n > 0) {
        target[n] = '\0';
        char want[64];
        snprintf(want, sizeof want, "libdial9.so.%s", DIAL9_VERSION_STRING);
        CHECK_STR(target, want);
    }
    /* `dial9 --version` */
    char cmd[PATH_MAX + 32], line[256] = "";
    snprintf(cmd, sizeof cmd, "'%s/dial9' --version", build);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    if (p) {
        if (!fgets(line, sizeof line, p)) line[0] = '\0';
        pclose(p);
    }
    snprintf(expect, sizeof expect, "dial9 %s ", DIAL9_VERSION_STRING);
    CHECK(strncmp(line, expect, strlen(expect)) == 0);
    return d9t_summary("api_version");
}
