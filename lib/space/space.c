/*
 * space: knobs of the generic template, configuration index and text
 * (see space.h for the knob list and the text form).
 */
#include "space.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* auto_unroll_max_step (lower.c): 0 leaves every loop to the compiler, N
 * unrolls each loop nest of at most N iterations by pragma, and 1 (last,
 * so that the others keep their indices) keeps every other loop rolled
 * ('#pragma GCC unroll 1'), as a register tile that fills the register
 * file needs where GCC would unroll a kernel row's taps and spill */
static const int64_t unroll_vals[] = { 0, 16, 64, 512, 1 };
static const char *const order_labels[] = { "0", "1", "2" };

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Register tiles of 3 vectors or of 3, 6 or 12 rows keep 12 accumulators
 * busy, what an FMA unit with 4-cycle latency and 2 pipes needs at 16
 * vector registers (OpenBLAS's 4x24 and 6x16 on AVX2). */
#define SP_TILE3_MAX 48

/* Candidate factors of extent e: its divisors and the powers of two below
 * it, and for a spatial extent with no factor 3, 3 * 2^k up to
 * SP_TILE3_MAX: every one for an extent of at least 64, and for a smaller
 * one (a convolution's 56, 28 or 14 columns) those whose last tile pads the
 * extent by at most an eighth (lowering computes such tiles whole and
 * guards their write-back); ascending and unique. Returns the count written
 * to *out (arena). */
static int factor_cands(sp_space *s, int64_t e, int spatial, int64_t **outp)
{
	int n = 0, cap = 64;
	for (int64_t d = 1; d * d <= e; d++)
		cap += 2;
	int64_t *out = tk_arena_alloc(&s->arena, sizeof *out * (size_t)cap);
	*outp = out;
	for (int64_t d = 1; d * d <= e; d++)
		if (e % d == 0) {
			out[n++] = d;
			if (d * d != e)
				out[n++] = e / d;
		}
	for (int64_t d = 1; d <= e; d *= 2)
		out[n++] = d;
	if (spatial && e % 3)
		for (int64_t d = 3; d <= SP_TILE3_MAX && d < e; d *= 2)
			if (e >= 64 || 8 * ((e + d - 1) / d * d - e) <= e)
				out[n++] = d;
	qsort(out, (size_t)n, sizeof *out, cmp_i64);
	int m = 0;
	for (int i = 0; i < n; i++)
		if (m == 0 || out[m - 1] != out[i])
			out[m++] = out[i];
	return m;
}

static int64_t ceildiv(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

static int add_knob(sp_space *s, const char *name, int kind, int role)
{
	if (s->nknob == SP_MAXKNOB)
		return -1;
	sp_knob *k = &s->knob[s->nknob];
	memset(k, 0, sizeof *k);
	k->name = tk_arena_strdup(&s->arena, name);
	k->kind = kind;
	k->role = role;
	k->axis = k->read = -1;
	return s->nknob++;
}

static void split_knob(sp_space *s, const char *name, int axis, int64_t e, int nlevel)
{
	int64_t *f;
	int nf = factor_cands(s, e, nlevel == 3, &f);
	int ki = add_knob(s, name, KNOB_SPLIT, KR_TILE);
	if (ki < 0)
		return;
	sp_knob *k = &s->knob[ki];
	k->axis = axis;
	k->nlevel = nlevel;
	k->extent = e;
	int cap = nlevel == 2 ? nf : nf * nf;
	k->cand = tk_arena_alloc(&s->arena, sizeof(int64_t) * (size_t)(cap * nlevel));
	int n = 0;
	if (nlevel == 2) {
		for (int i = 0; i < nf; i++) {
			k->cand[n * 2] = ceildiv(e, f[i]);
			k->cand[n * 2 + 1] = f[i];
			n++;
		}
	} else {
		for (int i = 0; i < nf; i++)
			for (int j = 0; j < nf; j++) {
				if (f[i] * f[j] > e)
					continue;
				k->cand[n * 3] = ceildiv(e, f[i] * f[j]);
				k->cand[n * 3 + 1] = f[i];
				k->cand[n * 3 + 2] = f[j];
				n++;
			}
	}
	k->n = n;
}

static void enum_knob(sp_space *s, const char *name, int role, int n, const int64_t *vals,
                      const char *const *labels)
{
	int ki = add_knob(s, name, KNOB_ENUM, role);
	if (ki < 0)
		return;
	sp_knob *k = &s->knob[ki];
	k->n = n;
	k->cand = tk_arena_alloc(&s->arena, sizeof(int64_t) * (size_t)n);
	memcpy(k->cand, vals, sizeof(int64_t) * (size_t)n);
	if (labels) {
		k->label = tk_arena_alloc(&s->arena, sizeof(char *) * (size_t)n);
		for (int i = 0; i < n; i++)
			k->label[i] = tk_arena_strdup(&s->arena, labels[i]);
	}
}

/* A read is worth a pack knob when every index is an axis, an affine
 * expression or a constant (so a packed layout exists) and packing changes
 * something: a padded/strided dimension or a spatial axis to tile. */
static int packable(const te_prog *p, const te_stage *st, const te_read *rd)
{
	const te_tensor *t = &p->tensor[rd->tensor];
	int useful = 0;
	if (t->kind == TE_CONSTANT || t->ndim < 2)
		return 0;
	for (int d = 0; d < t->ndim; d++) {
		const te_expr *e = rd->idx[d];
		if (e->kind == TE_AXIS) {
			if (!st->axis[e->val].reduce && st->axis[e->val].extent > 1)
				useful = 1;
			continue;
		}
		if (e->kind == TE_CONST)
			continue;
		const te_expr *core = e->kind == TE_EDIV ? e->a : e;
		for (int a = 0; a < st->naxis; a++) {
			int ok;
			te_expr_coeff(core, a, &ok);
			if (!ok)
				return 0;
		}
		useful = 1;
	}
	return useful;
}

/* The read order 2 packs panel by panel: the last packable read indexed by
 * plain axes (a weight), among them a spatial and a reduction axis that
 * each have more than one point; -1 if none. *axes: the bit of every axis
 * indexing it. */
static int panel_read(const te_prog *p, const te_stage *st, unsigned *axes)
{
	int found = -1;
	*axes = 0;
	for (int r = 0; r < st->nread; r++) {
		const te_read *rd = &st->read[r];
		int plain = packable(p, st, rd), spatial = 0, reduce = 0;
		unsigned mask = 0;
		for (int d = 0; plain && d < p->tensor[rd->tensor].ndim; d++) {
			const te_expr *e = rd->idx[d];
			if (e->kind == TE_CONST)
				continue;
			if (e->kind != TE_AXIS) {
				plain = 0;
				break;
			}
			mask |= 1u << e->val;
			if (st->axis[e->val].extent > 1)
				*(st->axis[e->val].reduce ? &reduce : &spatial) = 1;
		}
		if (plain && spatial && reduce) {
			found = r;
			*axes = mask;
		}
	}
	return found;
}

int sp_space_create(const te_prog *p, sp_space **out)
{
	*out = NULL;
	sp_space *s = calloc(1, sizeof *s);
	if (!s)
		return tk_seterr(TK_ENOMEM, "out of memory");
	tk_arena_init(&s->arena);
	if (setjmp(s->arena.oom)) {
		sp_space_free(s);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	s->prog = p;
	int best = 0;
	for (int i = 1; i < p->nstage; i++)
		if (p->stage[i].flops > p->stage[best].flops)
			best = i;
	s->main_stage = best;
	const te_stage *st = &p->stage[best];
	char name[64];
	for (int a = 0; a < st->naxis; a++) {
		if (st->axis[a].extent == 1)
			continue;
		snprintf(name, sizeof name, "tile_%s", st->axis[a].name);
		split_knob(s, name, a, st->axis[a].extent, st->axis[a].reduce ? 2 : 3);
		if (a == st->vector && s->knob[s->nknob - 1].axis == a) {
			/* the block is the register tile's vector, whole: 1 x 1 x E */
			sp_knob *k = &s->knob[s->nknob - 1];
			k->n = 1;
			k->cand[0] = k->cand[1] = 1;
			k->cand[2] = st->axis[a].extent;
		}
	}
	s->panel_read = panel_read(p, st, &s->panel_axes);
	enum_knob(s, "order", KR_ORDER, s->panel_read >= 0 ? 3 : 2, (int64_t[]){ 0, 1, 2 },
	          order_labels);
	{
		int64_t vals[TE_MAXAXIS];
		const char *labels[TE_MAXAXIS];
		int n = 0;
		for (int a = st->nspatial - 1; a >= 0; a--)
			if (st->axis[a].extent > 1 && (st->vector < 0 || a == st->vector)) {
				vals[n] = a;
				labels[n++] = st->axis[a].name;
			}
		if (n == 0) {
			vals[n] = -1;
			labels[n++] = "none";
		}
		enum_knob(s, "vec", KR_VEC, n, vals, labels);
	}
	enum_knob(s, "unroll", KR_UNROLL, ArraySize(unroll_vals), unroll_vals, NULL);
	enum_knob(s, "unroll_explicit", KR_EXPLICIT, 2, (int64_t[]){ 0, 1 }, NULL);
	for (int r = 0; r < st->nread; r++) {
		if (!packable(p, st, &st->read[r]))
			continue;
		const char *tn = p->tensor[st->read[r].tensor].name;
		int dup = 0;
		for (int q = 0; q < st->nread; q++)
			if (q != r && st->read[q].tensor == st->read[r].tensor)
				dup = 1;
		if (dup)
			snprintf(name, sizeof name, "pack_%s%d", tn, r);
		else
			snprintf(name, sizeof name, "pack_%s", tn);
		enum_knob(s, name, KR_PACK, 2, (int64_t[]){ 0, 1 }, NULL);
		s->knob[s->nknob - 1].read = r;
	}
	if (s->nknob == SP_MAXKNOB) {
		sp_space_free(s);
		return tk_seterr(TK_EUNSUPP, "%s: too many knobs", p->key);
	}
	s->size = 1;
	for (int k = 0; k < s->nknob; k++) {
		if (s->size > (UINT64_MAX >> 1) / (uint64_t)s->knob[k].n) {
			sp_space_free(s);
			return tk_seterr(TK_EUNSUPP, "%s: search space larger than 2^63", p->key);
		}
		s->size *= (uint64_t)s->knob[k].n;
	}
	*out = s;
	return TK_OK;
}

void sp_space_free(sp_space *s)
{
	if (!s)
		return;
	tk_arena_free(&s->arena);
	free(s);
}

int sp_knob_find(const sp_space *s, const char *name)
{
	for (int k = 0; k < s->nknob; k++)
		if (!strcmp(s->knob[k].name, name))
			return k;
	return -1;
}

uint64_t sp_index(const sp_space *s, const sp_config *c)
{
	uint64_t idx = 0, stride = 1;
	for (int k = 0; k < s->nknob; k++) {
		idx += stride * (uint64_t)c->v[k];
		stride *= (uint64_t)s->knob[k].n;
	}
	return idx;
}

void sp_from_index(const sp_space *s, uint64_t idx, sp_config *c)
{
	memset(c, 0, sizeof *c);
	for (int k = 0; k < s->nknob; k++) {
		c->v[k] = (int)(idx % (uint64_t)s->knob[k].n);
		idx /= (uint64_t)s->knob[k].n;
	}
}

const char *sp_value_text(const sp_space *s, int k, const sp_config *c, char *buf, int nbuf)
{
	const sp_knob *kn = &s->knob[k];
	int v = c->v[k];
	if (kn->kind == KNOB_SPLIT) {
		int len = 0;
		buf[0] = 0;
		for (int l = 0; l < kn->nlevel && len < nbuf; l++)
			len += snprintf(buf + len, (size_t)(nbuf - len), "%s%lld", l ? "x" : "",
			                (long long)kn->cand[v * kn->nlevel + l]);
	} else if (kn->label) {
		snprintf(buf, (size_t)nbuf, "%s", kn->label[v]);
	} else {
		snprintf(buf, (size_t)nbuf, "%lld", (long long)kn->cand[v]);
	}
	return buf;
}

uint64_t sp_space_hash(const sp_space *s)
{
	uint64_t h = 0;
	char buf[128];
	sp_config c;
	memset(&c, 0, sizeof c);
	for (int k = 0; k < s->nknob; k++) {
		h = tk_hash64(s->knob[k].name, strlen(s->knob[k].name) + 1, h);
		for (int v = 0; v < s->knob[k].n; v++) {
			c.v[k] = v;
			sp_value_text(s, k, &c, buf, sizeof buf);
			h = tk_hash64(buf, strlen(buf) + 1, h);
		}
		c.v[k] = 0;
	}
	return h ? h : 1;
}

void sp_format(tk_sb *sb, const sp_space *s, const sp_config *c)
{
	char buf[96];
	for (int k = 0; k < s->nknob; k++)
		tk_sb_printf(sb, "%s%s=%s", k ? ";" : "", s->knob[k].name,
		             sp_value_text(s, k, c, buf, sizeof buf));
}

/* Index of value text val among knob k's candidates, -1 if none. */
static int find_value(const sp_space *s, int k, const char *val)
{
	const sp_knob *kn = &s->knob[k];
	char buf[96];
	sp_config c;
	for (int v = 0; v < kn->n; v++) {
		c.v[k] = v;
		if (!strcmp(sp_value_text(s, k, &c, buf, sizeof buf), val))
			return v;
	}
	return -1;
}

/* What a space belongs to, for messages: its task, or for a space without a
 * program (imported, an accelerator's) "this space". */
static const char *space_name(const sp_space *s)
{
	return s->prog ? s->prog->key : "this space";
}

int sp_parse(const sp_space *s, const char *text, sp_config *c)
{
	int seen[SP_MAXKNOB] = { 0 };
	char item[256];
	const char *p = text;
	memset(c, 0, sizeof *c);
	if (!text || !*text)
		return tk_seterr(TK_EINVAL, "empty configuration");
	while (*p) {
		const char *end = strchr(p, ';');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n == 0 || n >= sizeof item)
			return tk_seterr(TK_EINVAL, "configuration '%.60s': empty or overlong item", text);
		memcpy(item, p, n);
		item[n] = 0;
		char *eq = strchr(item, '=');
		if (!eq)
			return tk_seterr(TK_EINVAL, "configuration item '%s' is not knob=value", item);
		*eq = 0;
		int k = sp_knob_find(s, item);
		if (k < 0)
			return tk_seterr(TK_EINVAL, "unknown knob '%s' for %s", item, space_name(s));
		if (seen[k]++)
			return tk_seterr(TK_EINVAL, "knob '%s' given twice", item);
		int v = find_value(s, k, eq + 1);
		if (v < 0)
			return tk_seterr(TK_EINVAL, "'%s=%s' is not a candidate of %s", item, eq + 1,
			                 space_name(s));
		c->v[k] = v;
		p += n;
		if (*p == ';' && !*++p)
			return tk_seterr(TK_EINVAL, "configuration ends with ';'");
	}
	for (int k = 0; k < s->nknob; k++)
		if (!seen[k])
			return tk_seterr(TK_EINVAL, "configuration lacks knob '%s'", s->knob[k].name);
	return TK_OK;
}

int64_t sp_regtile(const sp_space *s, const sp_config *c, int vlen)
{
	int vec = -1;
	int64_t n = 1;
	for (int k = 0; k < s->nknob; k++)
		if (s->knob[k].role == KR_VEC)
			vec = (int)s->knob[k].cand[c->v[k]];
	for (int k = 0; k < s->nknob; k++) {
		const sp_knob *kn = &s->knob[k];
		if (kn->role != KR_TILE || kn->nlevel != 3)
			continue;
		int64_t f = kn->cand[c->v[k] * 3 + 2];
		n *= kn->axis == vec && vlen > 1 ? ceildiv(f, vlen) : f;
	}
	return n;
}

int64_t sp_panel(const sp_space *s, const sp_config *c)
{
	int64_t size = 1;
	int order = 0, packed = 0, restricted = 0;
	if (s->panel_read < 0)
		return 0;
	for (int k = 0; k < s->nknob; k++) {
		const sp_knob *kn = &s->knob[k];
		if (kn->role == KR_ORDER)
			order = kn->cand[c->v[k]] == 2;
		else if (kn->role == KR_PACK && kn->read == s->panel_read)
			packed = kn->cand[c->v[k]] == 1;
		else if (kn->role == KR_TILE && (s->panel_axes >> kn->axis & 1u)) {
			const int64_t *f = &kn->cand[c->v[k] * kn->nlevel];
			restricted |= f[0] > 1;
			for (int l = 1; l < kn->nlevel; l++)
				size *= f[l];
		}
	}
	return order && packed && restricted && size <= SP_PANEL_MAX_FLOATS ? size : 0;
}

void sp_limit_regtile(sp_space *s, int vlen, int nreg)
{
	s->reg_vlen = vlen;
	s->reg_max = nreg;
}

static int fits(const sp_space *s, const sp_config *c)
{
	return !s->reg_max || sp_regtile(s, c, s->reg_vlen) <= s->reg_max;
}

void sp_sample(const sp_space *s, tk_rng *r, sp_config *c)
{
	for (int tries = 0; tries < SP_REG_TRIES; tries++) {
		memset(c, 0, sizeof *c);
		for (int k = 0; k < s->nknob; k++)
			c->v[k] = (int)tk_rng_below(r, (uint32_t)s->knob[k].n);
		if (fits(s, c))
			return;
	}
}

void sp_neighbor(const sp_space *s, tk_rng *r, const sp_config *c, sp_config *out)
{
	int movable[SP_MAXKNOB], n = 0;
	*out = *c;
	for (int k = 0; k < s->nknob; k++)
		if (s->knob[k].n > 1)
			movable[n++] = k;
	if (n == 0)
		return;
	for (int tries = 0; tries < SP_REG_TRIES; tries++) {
		*out = *c;
		int k = movable[tk_rng_below(r, (uint32_t)n)];
		int v = (int)tk_rng_below(r, (uint32_t)s->knob[k].n - 1);
		out->v[k] = v >= c->v[k] ? v + 1 : v;
		if (fits(s, out))
			return;
	}
}

void sp_naive(const sp_space *s, sp_config *c)
{
	memset(c, 0, sizeof *c);
}
