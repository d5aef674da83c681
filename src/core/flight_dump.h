/* One dump's directory (docs/flight-recorder.md): {dump_dir}/{run_id}.dump{N}/ holding
 *   .dial9-dump          written first: this directory is a dump (empty)
 *   trace.{N}.bin        segments that decode alone (written as .active, renamed when whole;
 *                        on disk, hard links to the run's sealed files)
 *   manifest.json        written last (as .tmp, renamed): without it the dump is incomplete
 * Made on the flight thread only, through directory handles (sinks/trace_dir.h). */
#ifndef D9_CORE_FLIGHT_DUMP_H
#define D9_CORE_FLIGHT_DUMP_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define D9_DUMP_MARKER_NAME ".dial9-dump"
#define D9_DUMP_MANIFEST_NAME "manifest.json"

typedef struct d9_dump_dir {
    int fd;
    char path[PATH_MAX];
    uint64_t bytes;
    uint32_t segments;
} d9_dump_dir;

/* Create {root}/{name} (root made when missing) and its marker. 0, or -1 with a message. */
int d9_dump_dir_create(const char *root, const char *name, d9_dump_dir *out, char *err, size_t errlen);
/* A segment's bytes as trace.{seq}.bin. 0 or -errno. */
int d9_dump_dir_add_bytes(d9_dump_dir *dd, uint64_t seq, const uint8_t *data, size_t len);
/* A sealed file `name` of the run (in run_fd), pinned by a hard link under the same name
 * (copied when no link can be made: another filesystem). 0 or -errno (-ENOENT: rotated away). */
int d9_dump_dir_add_file(d9_dump_dir *dd, int run_fd, const char *name, uint64_t *size);
/* Write the manifest last and close. 0 or -errno; closed either way. */
int d9_dump_dir_finish(d9_dump_dir *dd, const char *manifest, size_t len);
void d9_dump_dir_abandon(d9_dump_dir *dd);

#endif
