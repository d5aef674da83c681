/* Byte sources for the decoder: an fd, a FILE*, a memory buffer, and gzip and zstd
 * decompressors that wrap any of them. Each reads in whatever pieces the caller asks for, so the decoder's
 * memory stays bounded whatever the input size. */
#ifndef D9_FORMAT_DEC_INPUT_H
#define D9_FORMAT_DEC_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct d9_input d9_input;

struct d9_input {
    /* Up to n bytes into buf: > 0 bytes read, 0 at the end, -1 on an error (message in err). */
    long (*read)(d9_input *in, uint8_t *buf, size_t n);
    void (*close)(d9_input *in);
    uint64_t raw_bytes;  /* bytes taken from the underlying file or memory */
    bool incomplete;     /* gzip, zstd: the input ended before the compressed stream did */
    char err[160];
};

d9_input *d9_input_from_fd(int fd, bool owned);
d9_input *d9_input_from_file(FILE *f);
d9_input *d9_input_from_mem(const void *data, size_t len);

/* The compression the first bytes announce (n of them): gzip (1f 8b), zstd (a frame: 28 b5 2f
 * fd), or none. */
typedef enum d9_input_codec { D9_INPUT_PLAIN, D9_INPUT_GZIP, D9_INPUT_ZSTD } d9_input_codec;
d9_input_codec d9_input_codec_of(const uint8_t *b, size_t n);
/* Inflate gzip data (dec_gzip.c, dial9_reader only; libz.so.1 loaded when first needed,
 * common/libz_loader.h): `prefix` (bytes already read from `raw`, copied) then the rest of
 * `raw`. Takes ownership of raw (also when it returns NULL). Concatenated gzip members are read
 * one after the other. NULL with the reason in err: zlib cannot be loaded, or no memory. */
d9_input *d9_input_gzip(d9_input *raw, const uint8_t *prefix, size_t prefix_len, char *err, size_t errlen);
/* Decompress zstd data (dec_zstd.c, dial9_reader only; libzstd.so.1 loaded when first needed,
 * common/libzstd_loader.h), the same way; concatenated frames are read one after the other. A
 * frame whose window is over 8 MiB (zstd --long, or levels above 19) is refused with a message:
 * memory stays bounded whatever the input claims. */
d9_input *d9_input_zstd(d9_input *raw, const uint8_t *prefix, size_t prefix_len, char *err, size_t errlen);
/* d9_input_gzip or d9_input_zstd, as `codec` says (not D9_INPUT_PLAIN; dec_open.c, dial9_reader
 * only): the unwrap function of the reader's openers. */
d9_input *d9_input_unwrap(d9_input_codec codec, d9_input *raw, const uint8_t *prefix, size_t prefix_len, char *err,
                          size_t errlen);

/* The decoder's constructors behind the openers of decoder.h (dec_open.c passes a function
 * that picks d9_input_gzip or d9_input_zstd; libdial9, which holds neither input, passes NULL:
 * compressed data is then an error). The function says in err why it returns NULL. */
typedef d9_input *(*d9_unwrap_fn)(d9_input_codec codec, d9_input *raw, const uint8_t *prefix, size_t prefix_len,
                                  char *err, size_t errlen);
struct d9_decoder;
struct d9_dec_options;
/* Takes ownership of in (also on failure). */
struct d9_decoder *d9_dec_with_input(d9_input *in, d9_unwrap_fn unwrap,
                                     const struct d9_dec_options *opt, char *err, size_t errlen);
struct d9_decoder *d9_dec_with_mem(const void *data, size_t len, d9_unwrap_fn unwrap,
                                   const struct d9_dec_options *opt, char *err, size_t errlen);

static inline long d9_input_read(d9_input *in, uint8_t *buf, size_t n) { return in->read(in, buf, n); }
void d9_input_close(d9_input *in);

#endif
