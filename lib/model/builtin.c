/*
 * builtin: the nearest of the built-in cost models (the table itself is
 * generated from data/costmodels/models.tsv into gen/costmodels.c).
 */
#include "builtin.h"

#include <string.h>

/* The vendor: the CPU name's first word ("AMD", "Intel(R)"). */
static size_t vendor_len(const char *cpu)
{
	return strcspn(cpu, " ");
}

static int nearness(const cm_builtin *b, const char *cpu, const char *isa)
{
	size_t v = vendor_len(cpu);
	if (strcmp(b->isa, isa))
		return CM_NEAR_NONE;
	if (!strcmp(b->cpu, cpu))
		return CM_NEAR_CPU;
	if (v && vendor_len(b->cpu) == v && !strncmp(b->cpu, cpu, v))
		return CM_NEAR_VENDOR;
	return CM_NEAR_ISA;
}

const cm_builtin *cm_builtin_nearest(const char *cpu, const char *isa, int *near)
{
	const cm_builtin *best = NULL;
	int bn = CM_NEAR_NONE;
	for (int i = 0; i < cm_nbuiltins; i++) {
		int n = nearness(&cm_builtins[i], cpu, isa);
		if (n > bn || (n == bn && n != CM_NEAR_NONE && cm_builtins[i].rows > best->rows)) {
			best = &cm_builtins[i];
			bn = n;
		}
	}
	*near = bn;
	return best;
}

const char *cm_near_name(int near)
{
	switch (near) {
	case CM_NEAR_CPU: return "the same CPU";
	case CM_NEAR_VENDOR: return "the same vendor and ISA";
	case CM_NEAR_ISA: return "the same ISA";
	}
	return "nothing in common";
}
