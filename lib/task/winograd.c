/*
 * winograd: constants of F(2,3) and F(4,3) (see winograd.h).
 */
#include "winograd.h"

#include <string.h>

static const float g2[4 * 3] = {
	1, 0, 0,
	0.5f, 0.5f, 0.5f,
	0.5f, -0.5f, 0.5f,
	0, 0, 1,
};
static const float bt2[4 * 4] = {
	1, 0, -1, 0,
	0, 1, 1, 0,
	0, -1, 1, 0,
	0, 1, 0, -1,
};
static const float at2[2 * 4] = {
	1, 1, 1, 0,
	0, 1, -1, -1,
};
static const float g4[6 * 3] = {
	1.0f / 4, 0, 0,
	-1.0f / 6, -1.0f / 6, -1.0f / 6,
	-1.0f / 6, 1.0f / 6, -1.0f / 6,
	1.0f / 24, 1.0f / 12, 1.0f / 6,
	1.0f / 24, -1.0f / 12, 1.0f / 6,
	0, 0, 1,
};
static const float bt4[6 * 6] = {
	4, 0, -5, 0, 1, 0,
	0, -4, -4, 1, 1, 0,
	0, 4, -4, -1, 1, 0,
	0, -2, -1, 2, 1, 0,
	0, 2, -1, -2, 1, 0,
	0, 4, 0, -5, 0, 1,
};
static const float at4[4 * 6] = {
	1, 1, 1, 1, 1, 0,
	0, 1, -1, 2, -2, 0,
	0, 1, 1, 4, 4, 0,
	0, 1, -1, 8, -8, 1,
};

const char *winograd_fill(const char *gen, int64_t m, int ndim, const int64_t *shape,
                          float *v)
{
	const float *src;
	int64_t rows, cols;
	if (m != 2 && m != 4)
		return "Winograd output tile m must be 2 or 4";
	if (!strcmp(gen, "winograd_g")) {
		src = m == 2 ? g2 : g4;
		rows = m + 2;
		cols = 3;
	} else if (!strcmp(gen, "winograd_bt")) {
		src = m == 2 ? bt2 : bt4;
		rows = cols = m + 2;
	} else if (!strcmp(gen, "winograd_at")) {
		src = m == 2 ? at2 : at4;
		rows = m;
		cols = m + 2;
	} else {
		return "unknown constant generator";
	}
	if (ndim != 2 || shape[0] != rows || shape[1] != cols)
		return "constant tensor has the wrong shape for its generator";
	if (v)
		memcpy(v, src, (size_t)(rows * cols) * sizeof *v);
	return NULL;
}
