/* Protocol buffers wire-format writer (see protobuf.h). */
#include "export/protobuf.h"

#include <string.h>

void d9_pb_bytes(d9_buf *b, uint32_t field, const void *p, size_t n) {
    d9_pb_tag(b, field, D9_PB_LEN);
    d9_put_varint(b, n);
    d9_put_bytes(b, p, n);
}

void d9_pb_string(d9_buf *b, uint32_t field, const char *s) {
    d9_pb_bytes(b, field, s, strlen(s));
}

size_t d9_pb_begin(d9_buf *b, uint32_t field) {
    d9_pb_tag(b, field, D9_PB_LEN);
    return b->len;
}

void d9_pb_end(d9_buf *b, size_t pos) {
    if (b->failed || pos > b->len) return;
    size_t content = b->len - pos;
    size_t n = d9_varint_size(content);
    if (!d9_buf_reserve(b, n)) return;
    memmove(b->data + pos + n, b->data + pos, content);
    uint8_t *p = b->data + pos;
    uint64_t v = content;
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p = (uint8_t)v;
    b->len += n;
}
