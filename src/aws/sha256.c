/* SHA-256 as specified in FIPS 180-4; HMAC as in RFC 2104. */
#include "aws/sha256.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void compress_block(uint32_t h[8], const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void d9_sha256_init(d9_sha256 *s) {
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof iv);
    s->bytes = 0;
    s->used = 0;
}

void d9_sha256_update(d9_sha256 *s, const void *data, size_t len) {
    const uint8_t *p = data;
    s->bytes += len;
    if (s->used) {
        size_t take = 64 - s->used < len ? 64 - s->used : len;
        memcpy(s->block + s->used, p, take);
        s->used += take; p += take; len -= take;
        if (s->used < 64) return;
        compress_block(s->h, s->block);
        s->used = 0;
    }
    for (; len >= 64; p += 64, len -= 64) compress_block(s->h, p);
    memcpy(s->block, p, len);
    s->used = len;
}

void d9_sha256_final(d9_sha256 *s, uint8_t out[D9_SHA256_LEN]) {
    uint64_t bits = s->bytes * 8;
    s->block[s->used++] = 0x80;
    if (s->used > 56) {
        memset(s->block + s->used, 0, 64 - s->used);
        compress_block(s->h, s->block);
        s->used = 0;
    }
    memset(s->block + s->used, 0, 56 - s->used);
    for (int i = 0; i < 8; i++) s->block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
    compress_block(s->h, s->block);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->h[i];
    }
}

void d9_sha256_buf(const void *data, size_t len, uint8_t out[D9_SHA256_LEN]) {
    d9_sha256 s;
    d9_sha256_init(&s);
    d9_sha256_update(&s, data, len);
    d9_sha256_final(&s, out);
}

void d9_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                    uint8_t out[D9_SHA256_LEN]) {
    uint8_t k[64] = {0}, pad[64], inner[D9_SHA256_LEN];
    if (key_len > 64) d9_sha256_buf(key, key_len, k); /* long keys are hashed first */
    else memcpy(k, key, key_len);
    d9_sha256 s;
    for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x36;
    d9_sha256_init(&s);
    d9_sha256_update(&s, pad, 64);
    d9_sha256_update(&s, msg, msg_len);
    d9_sha256_final(&s, inner);
    for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x5c;
    d9_sha256_init(&s);
    d9_sha256_update(&s, pad, 64);
    d9_sha256_update(&s, inner, sizeof inner);
    d9_sha256_final(&s, out);
}

void d9_hex(const uint8_t *in, size_t len, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * len] = 0;
}

void d9_base64(const uint8_t *in, size_t len, char *out) {
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < len ? in[i + 2] : 0);
        out[o++] = a[v >> 18 & 63];
        out[o++] = a[v >> 12 & 63];
        out[o++] = i + 1 < len ? a[v >> 6 & 63] : '=';
        out[o++] = i + 2 < len ? a[v & 63] : '=';
    }
    out[o] = 0;
}

int d9_sha256_file_range(int fd, uint64_t off, uint64_t len, uint8_t out[D9_SHA256_LEN], char *err,
                         size_t errlen) {
    enum { PIECE = 64 * 1024 };
    unsigned char *buf = malloc(PIECE);
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    d9_sha256 s;
    d9_sha256_init(&s);
    for (uint64_t done = 0; done < len;) {
        size_t want = len - done < PIECE ? (size_t)(len - done) : PIECE;
        ssize_t n = pread(fd, buf, want, (off_t)(off + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            snprintf(err, errlen, "read: %s", n < 0 ? strerror(errno) : "the file shrank while being read");
            free(buf);
            return -1;
        }
        d9_sha256_update(&s, buf, (size_t)n);
        done += (uint64_t)n;
    }
    free(buf);
    d9_sha256_final(&s, out);
    return 0;
}
