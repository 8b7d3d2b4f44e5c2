/*
 * sha256: the SHA-256 digest (FIPS 180-4), for the compile cache's keys,
 * for checking a cached object's content before it is loaded, and for the
 * checksum of a model file's payload. Incremental: init, update any number
 * of times, final.
 */
#ifndef TK_SHA256_H
#define TK_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_HEX 65 /* 64 hex digits and the NUL */

typedef struct sha256_ctx {
	uint32_t h[8];
	uint64_t nbyte;      /* bytes hashed so far */
	unsigned char buf[64];
	size_t nbuf;         /* bytes waiting in buf */
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *p, size_t n);
/* Finish and write the digest to out[32]; c must be initialised again to be
 * reused. */
void sha256_final(sha256_ctx *c, unsigned char out[32]);
/* The digest of p[0..n) as 64 lowercase hex digits in hex[SHA256_HEX]. */
void sha256_hex(const void *p, size_t n, char hex[SHA256_HEX]);
/* The digest of the whole file open on fd, read with pread from offset 0
 * (the descriptor's offset is left alone), as hex. 0, or -1 with errno set. */
int sha256_fd(int fd, char hex[SHA256_HEX]);
/* Format a digest as lowercase hex in hex[SHA256_HEX]. */
void sha256_tohex(const unsigned char d[32], char hex[SHA256_HEX]);

#endif
