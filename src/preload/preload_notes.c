/* What the shim says about itself in every segment's metadata: which loop libraries it
 * interposes, which it cannot (linked statically) and how parks are found.
 *
 * The recorder has no public call for extra metadata yet, so the shim registers a function
 * at its plugin point (core/recorder_hooks.h): each d9_start calls it while it prepares the
 * first segment, and the notes are added to the collector's metadata right after the kernel
 * sources noted theirs. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/collector.h"
#include "core/recorder_hooks.h"
#include "core/run_metadata.h"
#include "preload.h"

#define MAX_NOTES 12

typedef struct note {
    char key[48];
    char value[320];
    bool is_source, active;
} note;

static note g_notes[MAX_NOTES];
static int g_count;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void add(const char *key, bool is_source, bool active, const char *fmt, va_list ap) {
    pthread_mutex_lock(&g_lock);
    note *n = NULL;
    for (int i = 0; i < g_count && !n; i++)
        if (!strcmp(g_notes[i].key, key)) n = &g_notes[i];
    if (!n && g_count < MAX_NOTES) n = &g_notes[g_count++];
    if (n) {
        snprintf(n->key, sizeof n->key, "%s", key);
        vsnprintf(n->value, sizeof n->value, fmt, ap);
        n->is_source = is_source;
        n->active = active;
    }
    pthread_mutex_unlock(&g_lock);
}

void d9p_note_source(const char *name, bool active, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add(name, true, active, fmt, ap);
    va_end(ap);
}

void d9p_note(const char *key, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add(key, false, false, fmt, ap);
    va_end(ap);
}

static void add_notes(d9_collector *c) {
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_count; i++) {
        const note *n = &g_notes[i];
        if (n->is_source) d9_collector_note_source(c, n->key, n->active, n->value);
        else d9_run_metadata_set(d9_collector_metadata(c), n->key, "%s", n->value);
    }
    pthread_mutex_unlock(&g_lock);
    d9p_heap_note_run(c); /* a run that profiles the heap without the heap library says so */
}

void d9p_notes_register(void) { d9_recorder_set_on_sources_started(add_notes); }
