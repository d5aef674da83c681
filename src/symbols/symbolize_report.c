#include "symbols/symbolize_report.h"

#include <pthread.h>
#include <string.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static d9_symbolize_report g_report;

void d9_symbolize_report_reset(void) {
    pthread_mutex_lock(&g_lock);
    memset(&g_report, 0, sizeof g_report);
    pthread_mutex_unlock(&g_lock);
}

void d9_symbolize_report_add(const d9_symbolize_report *d) {
    pthread_mutex_lock(&g_lock);
    g_report.files_symbolized += d->files_symbolized;
    g_report.files_failed += d->files_failed;
    g_report.files_skipped += d->files_skipped;
    g_report.files_dropped += d->files_dropped;
    g_report.addresses += d->addresses;
    g_report.named += d->named;
    g_report.entries += d->entries;
    g_report.bytes_appended += d->bytes_appended;
    g_report.no_room += d->no_room;
    g_report.files_from_writer += d->files_from_writer;
    g_report.files_given_short += d->files_given_short;
    if (d->last_error[0]) memcpy(g_report.last_error, d->last_error, sizeof g_report.last_error);
    pthread_mutex_unlock(&g_lock);
}

void d9_symbolize_report_get(d9_symbolize_report *out) {
    pthread_mutex_lock(&g_lock);
    *out = g_report;
    pthread_mutex_unlock(&g_lock);
}
