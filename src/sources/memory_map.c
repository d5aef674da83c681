#include "sources/memory_map.h"

void d9_memory_map_source_start(const d9_config *cfg, d9_collector *c) {
    (void)cfg;
    d9_collector_note_source(c, "memory_map", false, "not built yet");
}
