/* SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104), for signing S3 requests (SigV4) and the
 * checksums S3 verifies, without linking a crypto library into libdial9. */
#ifndef D9_AWS_SHA256_H
#define D9_AWS_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define D9_SHA256_LEN 32

typedef struct d9_sha256 {
    uint32_t h[8];
    uint64_t bytes;
    uint8_t block[64];
    size_t used;
} d9_sha256;

void d9_sha256_init(d9_sha256 *s);
void d9_sha256_update(d9_sha256 *s, const void *data, size_t len);
void d9_sha256_final(d9_sha256 *s, uint8_t out[D9_SHA256_LEN]);
void d9_sha256_buf(const void *data, size_t len, uint8_t out[D9_SHA256_LEN]);
/* The SHA-256 of `len` bytes of file `fd` from `off` (pread, 64 KiB at a time: the file
 * offset is not moved). -1 with a message in err when it cannot be read or is shorter. */
int d9_sha256_file_range(int fd, uint64_t off, uint64_t len, uint8_t out[D9_SHA256_LEN], char *err,
                         size_t errlen);
void d9_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                    uint8_t out[D9_SHA256_LEN]);
/* Lowercase hex (2*len chars + NUL) and standard base64 with padding. */
void d9_hex(const uint8_t *in, size_t len, char *out);
void d9_base64(const uint8_t *in, size_t len, char *out);

#endif
