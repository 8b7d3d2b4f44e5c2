/*
 * winograd: the constant matrices of Winograd's minimal filtering
 * algorithm F(m, 3) (Lavin and Gray, "Fast Algorithms for Convolutional
 * Neural Networks", 2016), for m = 2 and m = 4.
 */
#ifndef TK_WINOGRAD_H
#define TK_WINOGRAD_H

#include <stdint.h>

/* Fill v (row-major, shape[0] x shape[1]) with generator gen ("winograd_g":
 * G, (m+2) x 3; "winograd_bt": B^T, (m+2) x (m+2); "winograd_at": A^T,
 * m x (m+2)) for output tile m. Returns NULL on success or a static message
 * naming the problem (unknown generator, unsupported m, wrong shape). With
 * v NULL it only checks. */
const char *winograd_fill(const char *gen, int64_t m, int ndim, const int64_t *shape,
                          float *v);

#endif
