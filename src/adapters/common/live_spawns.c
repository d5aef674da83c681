/* Handles, events and watchers registered while nothing recorded (before d9_start: the
 * zero-code shim starts recording while the program already runs) have a task id but no spawn
 * in the trace. When a run starts, each live one spawns in it, before any of its polls, so
 * every poll's task has a spawn before it. The spawn is stamped at the start of the run:
 * the task existed before. */
#include "object_table.h"

static void spawn_one(const void *key, const d9a_object *obj, void *ctx) {
    (void)ctx;
    const d9_loc *loc = NULL;
    for (unsigned r = 0; r < D9A_ROLES && !loc; r++) loc = obj->loc[r];
    if (obj->task) d9__task_spawn_object(obj->task, loc, key);
}

static void spawn_live_tasks(void) { d9a_table_each(spawn_one, NULL); }

__attribute__((constructor)) static void register_live_spawns(void) {
    d9__on_recording_start(spawn_live_tasks);
}
