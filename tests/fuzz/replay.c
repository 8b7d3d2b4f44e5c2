/*
 * replay: runs a fuzz harness over files without libFuzzer, so that `make
 * test` feeds every corpus file (the seeds, and each input a fuzzing run
 * once crashed on) to the harness built with the ordinary compiler.
 * Usage: replay-NAME FILE... ; exits non-zero (abort) on a failed check.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			perror(argv[i]);
			return 1;
		}
		uint8_t *buf = NULL;
		size_t n = 0, cap = 0, got;
		do {
			if (n == cap && !(buf = realloc(buf, cap = cap ? 2 * cap : 4096)))
				return 1;
			got = fread(buf + n, 1, cap - n, f);
			n += got;
		} while (got > 0);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n);
		free(buf);
	}
	printf("%d inputs\n", argc - 1);
	return 0;
}
