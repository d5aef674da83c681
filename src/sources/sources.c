#include "sources/sources.h"

#include "sources/memory_map.h"

void d9_sources_start(const d9_config *cfg, d9_collector *c) {
    d9_memory_map_source_start(cfg, c);
    d9_collector_note_source(c, "cpu_profile", false, "not built yet");
}

void d9_sources_stop(void) {}
