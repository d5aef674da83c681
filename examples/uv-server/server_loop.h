/* One event loop of the server: its thread, its SO_REUSEPORT listener, its counters. */
#ifndef UV_SERVER_SERVER_LOOP_H
#define UV_SERVER_SERVER_LOOP_H

#include <stdint.h>
#include <uv.h>

typedef struct server_loop {
    uv_loop_t loop;
    uv_tcp_t listener;
    uv_async_t stop;          /* sent from the main thread: close everything, leave uv_run */
    uv_thread_t thread;
    unsigned index;
    const char *file_path;    /* what /file serves */
    /* Touched only by this loop's thread while it runs; read after it is joined. */
    uint64_t connections;
    uint64_t requests;
} server_loop;

#endif
