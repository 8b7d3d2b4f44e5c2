/*
 * builtin: the cost models compiled into the binary (data/costmodels/,
 * trained by its build.sh from the offline dataset: one per hardware of
 * it), and the one nearest a target: the same CPU and ISA, else the same
 * vendor and ISA, else the same ISA. The bytes are a model file's, as
 * `tunekit train` writes it (cm_decode reads them, checksum and all).
 */
#ifndef TK_MODEL_BUILTIN_H
#define TK_MODEL_BUILTIN_H

#include <stddef.h>

typedef struct cm_builtin {
	const char *name;          /* "hw-4": the file's name less .model */
	const char *kind, *feature;/* the model's row and feature kind */
	const char *cpu, *isa;     /* the hardware it was trained on */
	int rows;                  /* its training rows (programs) */
	const unsigned char *data; /* the model file */
	size_t len;
} cm_builtin;

extern const cm_builtin cm_builtins[];
extern const int cm_nbuiltins;

/* How near a built-in model is to a target. */
enum { CM_NEAR_NONE, CM_NEAR_ISA, CM_NEAR_VENDOR, CM_NEAR_CPU };

/* The built-in model nearest to a target of this CPU (its model name with
 * family and model, as hardware keys have it) and ISA, the most training
 * rows among equals; *near says how near (CM_NEAR_*). NULL when none has
 * the ISA: a model of other vectors scores other programs. */
const cm_builtin *cm_builtin_nearest(const char *cpu, const char *isa, int *near);

/* "the same CPU", "the same vendor and ISA", "the same ISA" */
const char *cm_near_name(int near);

#endif
