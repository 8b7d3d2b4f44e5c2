/*
 * feature: the public entry points of feature.h (kind names, versions,
 * lengths, dispatch), the table of kinds they read, and the knob kind. The
 * loop-nest kinds (itervar, curve) live in itervar.c, the schedule
 * sequence kind (tlp) in tlp.c and the super-graph kind (graph) in
 * graph.c, whose top comments give their exact layout.
 *
 * knob (version 2): one group of values per knob of the space, in knob
 * order:
 *   KNOB_SPLIT            nlevel values: log2(factor) of each level,
 *                         outermost first (tile_i=4x8x16 -> 2, 3, 4);
 *   KNOB_ENUM, one-hot    n values, 1 at the chosen candidate, 0 elsewhere:
 *                         role KR_ORDER or KR_VEC, and any knob with labels
 *                         of which one is not a decimal number (imported
 *                         knobs with text values);
 *   KNOB_ENUM, numeric    1 value, log2(1 + |v|): unroll (0, 16, 64, 512 ->
 *                         0, 4.09, 6.02, 9.00), unroll_explicit and pack_*
 *                         (0 or 1), imported knobs whose labels are all
 *                         decimal numbers (v = the label's value).
 * Length: sum of those group sizes; it depends only on the space, so every
 * configuration of a space, template or imported, has the same length.
 * Knob features never lower the configuration: *valid is always 1.
 */
#include "feat_int.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- knob ------------------------------------------------------------------ */

/* A decimal number: [+-]digits[.digits][e[+-]digits] (or .digits). Faster
 * than strtod and refuses "nan", "inf" and hex, which are labels, not
 * magnitudes. */
static int is_decimal(const char *s)
{
	int digits = 0;
	if (*s == '+' || *s == '-')
		s++;
	for (; *s >= '0' && *s <= '9'; s++)
		digits++;
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++)
			digits++;
	if (!digits)
		return 0;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == 0;
}

static int knob_onehot(const sp_knob *kn)
{
	if (kn->kind != KNOB_ENUM)
		return 0;
	if (kn->role == KR_ORDER || kn->role == KR_VEC)
		return 1;
	if (kn->label)
		for (int i = 0; i < kn->n; i++)
			if (!kn->label[i] || !is_decimal(kn->label[i]))
				return 1;
	return 0;
}

static int knob_length(const sp_space *sp)
{
	int n = 0;
	for (int k = 0; k < sp->nknob; k++) {
		const sp_knob *kn = &sp->knob[k];
		n += kn->kind == KNOB_SPLIT ? kn->nlevel : knob_onehot(kn) ? kn->n : 1;
	}
	return n;
}

static int knob_extract(const sp_space *sp, const sp_config *c, float *out, int *valid)
{
	int n = 0;
	for (int k = 0; k < sp->nknob; k++) {
		const sp_knob *kn = &sp->knob[k];
		int v = c->v[k];
		assert(v >= 0 && v < kn->n);
		if (kn->kind == KNOB_SPLIT) {
			for (int l = 0; l < kn->nlevel; l++)
				out[n++] = (float)log2((double)kn->cand[v * kn->nlevel + l]);
		} else if (knob_onehot(kn)) {
			for (int i = 0; i < kn->n; i++)
				out[n++] = i == v ? 1.0f : 0.0f;
		} else {
			double x = kn->label ? strtod(kn->label[v], NULL) : (double)kn->cand[v];
			out[n++] = (float)log2(1.0 + fabs(x));
		}
	}
	*valid = 1;
	return TK_OK;
}

/* ---- the table of kinds ------------------------------------------------------- */

static int itervar_length(const sp_space *sp)
{
	int nloop, nslot;
	feat_nest_shape(sp, &nloop, &nslot);
	return nloop * (FEAT_LOOP_FIXED + FEAT_SLOT_VALUES * nslot);
}

static int curve_length(const sp_space *sp)
{
	int nloop, nslot;
	feat_nest_shape(sp, &nloop, &nslot);
	return nslot * 2 * FEAT_CURVE_SAMPLES;
}

static int tlp_length(const sp_space *sp)
{
	return FEAT_TLP_L * FEAT_TLP_E;
}

static int graph_length(const sp_space *sp)
{
	return FEAT_GRAPH_LEN;
}

/* hidden: the length of a template space's vectors; a space without a
 * program (imported, or a simulated accelerator's) has its target's */
static int hidden_length(const sp_space *sp)
{
	return sp->prog ? feat_hidden_length(sp) : 0;
}

static int hidden_check(const sp_space *sp)
{
	if (!sp->prog)
		return tk_seterr(TK_EUNSUPP, "hidden features of a space without a program come from"
		                 " its target (a simulated accelerator's compiler statistics)");
	return TK_OK;
}

static int hidden_extract(const sp_space *sp, const sp_config *c, float *out, int *valid)
{
	(void)sp, (void)c, (void)out, (void)valid;
	return tk_seterr(TK_EUNSUPP, "hidden features come from compiling the configuration"
	                 " (extract-features --kind hidden, or the ml2 tuner)");
}

/* One row per kind, in FEAT_* order. extract writes all length(sp) values
 * and sets *valid; a kind that needs_prog is only called with a program. */
static const struct feat_row {
	const char *name;
	int version;      /* bumped whenever the definition changes */
	int needs_prog;   /* template tasks only */
	int (*length)(const sp_space *sp);
	int (*extract)(const sp_space *sp, const sp_config *c, float *out, int *valid);
	/* whether the kind applies to sp: TK_OK or an error with its message;
	 * NULL: always */
	int (*check)(const sp_space *sp);
} kinds[FEAT_NKIND] = {
	/* knob and itervar 2: the order knob's third value and its longer nest */
	{ "knob", 2, 0, knob_length, knob_extract, NULL },
	{ "itervar", 2, 1, itervar_length, feat_itervar, NULL },
	{ "curve", 1, 1, curve_length, feat_curve, NULL },
	/* tlp 2: cache_write's tile */
	{ "tlp", 2, 1, tlp_length, feat_tlp, NULL },
	{ "graph", 1, 1, graph_length, feat_graph, feat_graph_check },
	{ "hidden", 2, 0, hidden_length, hidden_extract, hidden_check },
};

/* ---- entry points -------------------------------------------------------------- */

const char *feat_kind_name(int kind)
{
	assert(kind >= 0 && kind < FEAT_NKIND);
	return kinds[kind].name;
}

int feat_kind_parse(const char *name)
{
	for (int k = 0; name && k < FEAT_NKIND; k++)
		if (!strcmp(name, kinds[k].name))
			return k;
	return -1;
}

int feat_version(int kind)
{
	assert(kind >= 0 && kind < FEAT_NKIND);
	return kinds[kind].version;
}

int feat_seq_width(int kind)
{
	assert(kind >= 0 && kind < FEAT_NKIND);
	return kind == FEAT_TLP ? FEAT_TLP_E : 0;
}

static int unsupported(int kind)
{
	return tk_seterr(TK_EUNSUPP, "%s features need a template task (this space is imported)",
	                 kinds[kind].name);
}

int feat_length(int kind, const sp_space *sp, int *n)
{
	assert(kind >= 0 && kind < FEAT_NKIND && sp && n);
	*n = 0;
	if (kinds[kind].needs_prog && !sp->prog)
		return unsupported(kind);
	int rc = kinds[kind].check ? kinds[kind].check(sp) : TK_OK;
	if (!rc)
		*n = kinds[kind].length(sp);
	return rc;
}

int feat_extract(int kind, const sp_space *sp, const sp_config *c, float *out, int *valid)
{
	int ok = 0, rc;
	assert(kind >= 0 && kind < FEAT_NKIND && sp && c && out);
	if (kinds[kind].needs_prog && !sp->prog)
		rc = unsupported(kind);
	else if (!(rc = kinds[kind].check ? kinds[kind].check(sp) : TK_OK))
		rc = kinds[kind].extract(sp, c, out, &ok);
	if (valid)
		*valid = rc == TK_OK && ok;
	return rc;
}
