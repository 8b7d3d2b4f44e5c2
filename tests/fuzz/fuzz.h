/*
 * fuzz: helpers shared by the libFuzzer harnesses (make fuzz). Each harness
 * feeds one kind of untrusted input to the library function that reads it
 * and checks what must hold for any input: no crash, no sanitizer report,
 * and an error code from the documented set.
 */
#ifndef TK_FUZZ_H
#define TK_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"

/* The input as a NUL-terminated string (malloc'd; inputs with a NUL byte
 * are cut there, as a command-line argument would be). */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = 0;
	return s;
}

/* The input written to a private temporary file, the same path for the
 * whole process (for readers that take a path). */
static inline const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix)
{
	static char path[256];
	if (!path[0]) {
		snprintf(path, sizeof path, "%s/tunekit-fuzz-%ld%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
		         (long)getpid(), suffix);
	}
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f))
		abort();
	return path;
}

/* An error code a reader may return for bad input. */
static inline void fuzz_check_rc(int rc)
{
	if (rc != TK_OK && rc != TK_EINVAL && rc != TK_ECORRUPT && rc != TK_ENOMEM &&
	    rc != TK_EIO && rc != TK_ENOTFOUND)
		abort();
}

#endif
