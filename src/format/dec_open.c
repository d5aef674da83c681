/* The decoder's openers for paths, fds, FILE*s and memory, gzip and zstd included (dec_gzip.c
 * with zlib, dec_zstd.c with libzstd, each loaded with dlopen when first needed): built into
 * dial9_reader. libdial9 has neither input and opens plain memory only (d9_dec_open_plain_mem,
 * in decoder.c). */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "format/dec_input.h"
#include "format/dec_open_regular.h"
#include "format/decoder.h"

d9_input *d9_input_unwrap(d9_input_codec codec, d9_input *raw, const uint8_t *prefix, size_t prefix_len, char *err,
                          size_t errlen) {
    return codec == D9_INPUT_ZSTD ? d9_input_zstd(raw, prefix, prefix_len, err, errlen)
                                  : d9_input_gzip(raw, prefix, prefix_len, err, errlen);
}

d9_decoder *d9_dec_open_fd(int fd, bool take_ownership, const d9_dec_options *opt, char *err,
                           size_t errlen) {
    d9_input *in = d9_input_from_fd(fd, take_ownership);
    if (!in && take_ownership) close(fd);
    if (!in && err && errlen) snprintf(err, errlen, "out of memory");
    return in ? d9_dec_with_input(in, d9_input_unwrap, opt, err, errlen) : NULL;
}

d9_decoder *d9_dec_open_path(const char *path, const d9_dec_options *opt, char *err,
                             size_t errlen) {
    char why[512];
    int fd = d9_open_regular(path, O_RDONLY, why, sizeof why);
    if (fd < 0) {
        if (err && errlen) snprintf(err, errlen, "%s", why);
        return NULL;
    }
    return d9_dec_open_fd(fd, true, opt, err, errlen);
}

d9_decoder *d9_dec_open_file(FILE *f, const d9_dec_options *opt, char *err, size_t errlen) {
    d9_input *in = d9_input_from_file(f);
    if (!in && err && errlen) snprintf(err, errlen, "out of memory");
    return in ? d9_dec_with_input(in, d9_input_unwrap, opt, err, errlen) : NULL;
}

d9_decoder *d9_dec_open_mem(const void *data, size_t len, const d9_dec_options *opt, char *err,
                            size_t errlen) {
    return d9_dec_with_mem(data, len, d9_input_unwrap, opt, err, errlen);
}
