/* Escaping control characters in text output (see text_escape.h). */
#include "cli/text_escape.h"

#include <stdlib.h>

/* A C1 control is c2 followed by 80..9f: the c2 is held until the next byte says which. */
typedef struct escaper {
    FILE *out;
    bool lines;
    bool held_c2;
} escaper;

static void put_byte(escaper *e, unsigned char c) {
    if (e->held_c2) {
        e->held_c2 = false;
        if (c >= 0x80 && c <= 0x9f) {
            fprintf(e->out, "\\xc2\\x%02x", c);
            return;
        }
        putc(0xc2, e->out);
    }
    if (c == 0xc2) {
        e->held_c2 = true;
        return;
    }
    if ((c < 0x20 && !(e->lines && (c == '\n' || c == '\t'))) || c == 0x7f) {
        switch (c) {
        case '\n': fputs("\\n", e->out); break;
        case '\t': fputs("\\t", e->out); break;
        case '\r': fputs("\\r", e->out); break;
        default: fprintf(e->out, "\\x%02x", c);
        }
        return;
    }
    putc(c, e->out);
}

static void release(escaper *e) {
    if (e->held_c2) putc(0xc2, e->out); /* a c2 at the end: not a control */
    e->held_c2 = false;
}

void d9_put_escaped(FILE *out, const char *s, size_t len, bool lines) {
    escaper e = {.out = out, .lines = lines};
    for (size_t i = 0; i < len; i++) put_byte(&e, (unsigned char)s[i]);
    release(&e);
}

static ssize_t stream_write(void *cookie, const char *buf, size_t size) {
    escaper *e = cookie;
    for (size_t i = 0; i < size; i++) put_byte(e, (unsigned char)buf[i]);
    return ferror(e->out) ? -1 : (ssize_t)size;
}

static int stream_close(void *cookie) {
    escaper *e = cookie;
    release(e);
    free(e);
    return 0;
}

FILE *d9_escaping_stream(FILE *out) {
    escaper *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->out = out;
    e->lines = true;
    FILE *f = fopencookie(e, "w", (cookie_io_functions_t){.write = stream_write, .close = stream_close});
    if (!f) free(e);
    return f;
}
