/* The kernel's boot id (/proc/sys/kernel/random/boot_id): which boot of this host a run, a
 * segment or an address belongs to. Read in one place for the run's metadata, its S3 keys and
 * the symbolizer's check that a trace's addresses are this boot's. */
#ifndef D9_COMMON_HOST_BOOT_ID_H
#define D9_COMMON_HOST_BOOT_ID_H

#include <stddef.h>

/* The boot id ("f858de2a-5e29-..."), or "" when it cannot be read. */
void d9_host_boot_id(char *out, size_t len);

#endif
