/* The unwind tables of the objects this process has loaded (the executable, its libraries,
 * the vDSO): each object's .eh_frame_hdr and .eh_frame, copied once into our own memory while
 * the dynamic loader holds the object (dl_iterate_phdr), so a library unloaded later can
 * never make a lookup read unmapped memory; and the executable address ranges, which say
 * whether an address can be a return address at all. Refreshed when the loader's adds/subs
 * counters change. Objects whose file has a .debug_frame (code built without .eh_frame) get a
 * copy of it too, read from the file when its build id matches the loaded object's. One
 * instance is not thread-safe (see d9_unwind_tables_acquire). */
#ifndef D9_SOURCES_UNWIND_TABLES_H
#define D9_SOURCES_UNWIND_TABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct d9_unwind_object {
    uint64_t text_lo, text_hi;     /* the executable PT_LOAD segments' span */
    uint64_t copy_vaddr;           /* run-time address of copy[0] */
    uint64_t copy_len;
    uint8_t *copy;                 /* .eh_frame_hdr .. end of its segment; NULL: no tables */
    uint64_t hdr_vaddr;            /* run-time address of .eh_frame_hdr */
    uint64_t table_vaddr;          /* its binary-search table (datarel sdata4 pairs) */
    uint32_t fde_count;
    /* .debug_frame, read from the object's file (same build id) when it has one: the tables of
     * code built without .eh_frame (-fno-asynchronous-unwind-tables -g). Offsets are section
     * offsets; its addresses are link-time, plus `bias`. */
    uint8_t *dbg;
    uint64_t dbg_len, bias;
    struct d9_dbg_fde *dbg_fdes;   /* sorted by lo (cfi_unwind.c builds it) */
    uint32_t dbg_count;
} d9_unwind_object;

typedef struct d9_dbg_fde {
    uint64_t lo, hi;               /* run-time code range */
    uint64_t off;                  /* the FDE's offset in .debug_frame */
} d9_dbg_fde;

typedef struct d9_unwind_range {
    uint64_t lo, hi;               /* an executable segment, [lo, hi) */
} d9_unwind_range;

typedef struct d9_unwind_tables {
    d9_unwind_object *objs;        /* sorted by text_lo */
    size_t nobjs;
    d9_unwind_range *exec;         /* sorted, every executable PT_LOAD of every object */
    size_t nexec;
    unsigned long long adds, subs; /* the loader's counters when last built */
    bool built;
    uint64_t bytes;                /* memory held by the copies */
    uint64_t generation;           /* bumped at every rebuild */
    void *row_cache;               /* cfi_unwind.c's cache of decoded rows (owned, lazily made) */
} d9_unwind_tables;

/* Build (first call) or rebuild when a library was loaded or unloaded since; a cheap check
 * otherwise (one dl_iterate_phdr callback). False when out of memory (the old tables stay). */
bool d9_unwind_tables_refresh(d9_unwind_tables *t);
void d9_unwind_tables_free(d9_unwind_tables *t);

/* The object whose executable span holds `pc`, NULL when none. */
const d9_unwind_object *d9_unwind_tables_find(const d9_unwind_tables *t, uint64_t pc);

/* Whether `addr` lies in an executable segment of a loaded object. */
bool d9_unwind_tables_is_code(const d9_unwind_tables *t, uint64_t addr);

/* `len` bytes at run-time address `vaddr` of object `o`'s copy, or NULL when outside it. */
static inline const uint8_t *d9_unwind_object_bytes(const d9_unwind_object *o, uint64_t vaddr, uint64_t len) {
    if (!o->copy || vaddr < o->copy_vaddr || len > o->copy_len || vaddr - o->copy_vaddr > o->copy_len - len)
        return NULL;
    return o->copy + (vaddr - o->copy_vaddr);
}

/* The process-wide tables, shared by the sources that unwind: locked and refreshed by
 * acquire, unlocked by release (the sources run on the recorder's thread, so the lock is
 * uncontended; it guards against tests and benchmarks that unwind from other threads). */
d9_unwind_tables *d9_unwind_tables_acquire(void);
void d9_unwind_tables_release(void);
/* In a child after fork(): the lock may have been held by the parent's recorder thread. */
void d9_unwind_tables_forget_after_fork(void);

#endif
