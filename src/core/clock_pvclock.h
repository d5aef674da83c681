/* What a kvm-clock guest's vDSO knows of the TSC: the hypervisor's pvclock page for CPU 0
 * (struct pvclock_vcpu_time_info), mapped read-only into every process for the vDSO, whose
 * flags byte carries PVCLOCK_TSC_STABLE_BIT when the host keeps the TSCs of all vCPUs in step.
 * With that bit the vDSO's clock_gettime is itself a TSC read scaled by the page (one page for
 * all CPUs, which is only right if the TSCs agree); without it the vDSO makes a system call.
 * docs/clock.md says why `auto` takes the TSC on that bit. */
#ifndef D9_CORE_CLOCK_PVCLOCK_H
#define D9_CORE_CLOCK_PVCLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* struct pvclock_vcpu_time_info: version u32 @0, tsc_timestamp u64 @8, system_time u64 @16,
 * tsc_to_system_mul u32 @24, tsc_shift s8 @28, flags u8 @29 (Linux's pvclock-abi.h, the
 * hypervisor's ABI: the same on every kernel). */
#define D9_PVCLOCK_INFO_BYTES 32
#define D9_PVCLOCK_TSC_STABLE_BIT 0x01
#define D9_PVCLOCK_GUEST_STOPPED 0x02

typedef enum d9_pvclock_verdict {
    D9_PVCLOCK_STABLE,   /* a well-formed page with PVCLOCK_TSC_STABLE_BIT */
    D9_PVCLOCK_UNSTABLE, /* well-formed, without the bit */
    D9_PVCLOCK_TORN,     /* the host was updating it (odd version): read again */
    D9_PVCLOCK_GARBAGE,  /* not a pvclock page: no scale, a shift or a flag no hypervisor sets */
} d9_pvclock_verdict;

/* Judge the bytes of one struct pvclock_vcpu_time_info. */
d9_pvclock_verdict d9_pvclock_judge(const uint8_t info[D9_PVCLOCK_INFO_BYTES]);

/* Where the running kernel maps the pvclock page, from the text of /proc/self/maps: the first
 * page of [vvar_vclock] (Linux 6.14 on: the vDSO's data in [vvar], its clock pages apart), else
 * the second page of a [vvar] of 2 pages or more (before: vvar, pvclock, hvclock[, timens]).
 * 0 when neither is there (no vDSO, another architecture's layout). */
uintptr_t d9_pvclock_page_in_maps(const char *maps_text);

/* Read this process's pvclock page into `info` without touching it: the kernel copies it into
 * a pipe, so a page it will not map (the vDSO's pvclock mode never used: SIGBUS on a load)
 * is EFAULT here, not a signal. Two copies must agree on an even version. Returns the verdict
 * on what was read, or -1 with `why` when there is no page to read. */
int d9_pvclock_read_self(uint8_t info[D9_PVCLOCK_INFO_BYTES], char *why, size_t why_len);

#endif
