/* The host's boot id (host_boot_id.h). */
#include "common/host_boot_id.h"

#include <stdio.h>
#include <string.h>

void d9_host_boot_id(char *out, size_t len) {
    if (!len) return;
    out[0] = 0;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (!f) return;
    if (!fgets(out, (int)len, f)) out[0] = 0;
    out[strcspn(out, "\n")] = 0;
    fclose(f);
}
