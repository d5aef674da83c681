/* The host's boot id (host_boot_id.h). */
#include "common/host_boot_id.h"

#include <string.h>

#include "common/small_file.h"

void d9_host_boot_id(char *out, size_t len) {
    if (!len) return;
    d9_read_small_file("/proc/sys/kernel/random/boot_id", out, len);
    out[strcspn(out, "\n")] = 0;
}
