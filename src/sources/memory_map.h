/* The memory-map source: the process's executable mappings (path, address range, file offset,
 * GNU build id) as MemoryMapEvent, in full at every segment start and again when they change
 * (dlopen), so a trace can be symbolized after the process is gone. */
#ifndef D9_SOURCES_MEMORY_MAP_H
#define D9_SOURCES_MEMORY_MAP_H

#include "core/collector.h"
#include "dial9/dial9.h"

/* Add the source to the collector (and note it in the metadata). */
void d9_memory_map_source_start(const d9_config *cfg, d9_collector *c);

#endif
