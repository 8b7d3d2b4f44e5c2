/*
 * template: the generic schedule template. Turns a configuration of a
 * task's space (space.h) into the primitive sequence that realises it.
 *
 * Main stage, with spatial axes S and reduction axes R, each split by its
 * tile knob into levels (S0 S1 S2 and R0 R1):
 *
 *     order 0:  S0 S1 R0 R1 S2      the register tile S2 accumulates a whole
 *     order 1:  S0 R0 S1 R1 S2      reduction (0) or a block of it (1)
 *     order 2:  S0w R0 S0n S1 R1 S2 S0w: the outer blocks of the axes the
 *                                   panel read (space.h) depends on
 *
 * S0 (S0w) is fused and parallel (ignored on one thread), the vectorised
 * axis's S2 part is innermost, the other S2 parts are unrolled, the
 * accumulator tile is a cache_write below the last S1 loop, packed inputs
 * are copied before the nest (the panel read under order 2: inside the last
 * R0 loop, the panel one of its iterations reads), and the unroll pragma
 * covers the rest. Other stages (Winograd's transforms, the final crop) get
 * a fixed schedule: parallel outer loop, a scalar accumulator, and a
 * vectorised inner loop when there is no reduction.
 */
#include <string.h>

#include "sched.h"

static sc_prim *add(sc_sched *s, int kind, int stage, int a)
{
	if (s->nprim == SC_MAXPRIM)
		return NULL;
	sc_prim *p = &s->prim[s->nprim++];
	memset(p, 0, sizeof *p);
	p->kind = kind;
	p->stage = stage;
	p->a = a;
	return p;
}

static int fixed_stage(sc_sched *s, const te_prog *p, int si)
{
	const te_stage *st = &p->stage[si];
	int outer = -1;
	for (int a = 0; a < st->nspatial; a++)
		if (st->axis[a].extent > 1) {
			outer = a;
			break;
		}
	if (outer >= 0 && !add(s, SC_PARALLEL, si, outer))
		return -1;
	if (st->naxis > st->nspatial) {
		if (!add(s, SC_CACHE_WRITE, si, st->nspatial - 1))
			return -1;
	} else if (st->axis[st->nspatial - 1].extent > 1) {
		if (!add(s, SC_VECTORIZE, si, st->nspatial - 1))
			return -1;
	}
	return 0;
}

int sc_from_config(const sp_space *sp, const sp_config *c, sc_sched *out)
{
	const te_prog *p = sp->prog;
	const int ms = sp->main_stage;
	const te_stage *st = &p->stage[ms];
	int64_t f[TE_MAXAXIS][SP_MAXLEVEL];
	int split[TE_MAXAXIS] = { 0 };
	int order = 0, vec = -1, unroll = 0, expl = 0;
	int pack[TE_MAXREAD] = { 0 };
	out->nprim = 0;

	for (int k = 0; k < sp->nknob; k++) {
		const sp_knob *kn = &sp->knob[k];
		int v = c->v[k];
		switch (kn->role) {
		case KR_TILE:
			split[kn->axis] = 1;
			memcpy(f[kn->axis], &kn->cand[v * kn->nlevel], sizeof(int64_t) * (size_t)kn->nlevel);
			break;
		case KR_ORDER: order = (int)kn->cand[v]; break;
		case KR_VEC: vec = (int)kn->cand[v]; break;
		case KR_UNROLL: unroll = (int)kn->cand[v]; break;
		case KR_EXPLICIT: expl = (int)kn->cand[v]; break;
		case KR_PACK: pack[kn->read] = (int)kn->cand[v]; break;
		}
	}

	for (int si = 0; si < p->nstage; si++)
		if (si != ms && fixed_stage(out, p, si))
			goto full;

	/* splits: loop numbers follow sc_names_build's rule */
	int nloop = st->naxis;
	int part[TE_MAXAXIS][SP_MAXLEVEL];
	for (int a = 0; a < st->naxis; a++) {
		if (!split[a]) {
			for (int l = 0; l < SP_MAXLEVEL; l++)
				part[a][l] = -1;
			part[a][0] = a;
			continue;
		}
		int nlev = st->axis[a].reduce ? 2 : 3;
		sc_prim *pr = add(out, SC_SPLIT, ms, a);
		if (!pr)
			goto full;
		pr->n = nlev - 1;
		for (int l = 1; l < nlev; l++)
			pr->f[l - 1] = f[a][l];
		for (int l = 0; l < SP_MAXLEVEL; l++)
			part[a][l] = l < nlev ? nloop + l : -1;
		nloop += nlev;
	}

	/* levels */
	/* order 2: S0 holds the outer blocks of the axes the panel read depends
	 * on, N0 the other outer blocks (inside R0) */
	int panel = order == 2 ? sp->panel_read : -1;
	int S0[TE_MAXAXIS], N0[TE_MAXAXIS], S1[TE_MAXAXIS], S2[TE_MAXAXIS], R0[TE_MAXAXIS],
	    R1[TE_MAXAXIS];
	int n0 = 0, k0 = 0, n1 = 0, n2 = 0, m0 = 0, m1 = 0;
	for (int a = 0; a < st->naxis; a++) {
		if (st->axis[a].reduce) {
			R0[m0++] = part[a][0];
			if (part[a][1] >= 0)
				R1[m1++] = part[a][1];
		} else {
			if (panel >= 0 && !(sp->panel_axes >> a & 1))
				N0[k0++] = part[a][0];
			else
				S0[n0++] = part[a][0];
			if (part[a][1] >= 0)
				S1[n1++] = part[a][1];
			if (part[a][2] >= 0 && a != vec)
				S2[n2++] = part[a][2];
		}
	}
	if (vec >= 0 && part[vec][2] >= 0)
		S2[n2++] = part[vec][2];

	sc_prim *ro = add(out, SC_REORDER, ms, 0);
	if (!ro)
		goto full;
	int n = 0;
#define PUT(arr, cnt) for (int i = 0; i < (cnt); i++) ro->order[n++] = (arr)[i]
	PUT(S0, n0);
	if (order == 0) {
		PUT(S1, n1);
		PUT(R0, m0);
	} else {
		PUT(R0, m0);
		PUT(N0, k0);
		PUT(S1, n1);
	}
	PUT(R1, m1);
	PUT(S2, n2);
#undef PUT
	ro->n = n;

	/* fuse S0 into one parallel loop */
	int fused = S0[0];
	for (int i = 1; i < n0; i++) {
		sc_prim *fu = add(out, SC_FUSE, ms, fused);
		if (!fu)
			goto full;
		fu->b = S0[i];
		fused = nloop++;
	}

	/* accumulator below the last S1 loop (or the last loop before R1) */
	int attach = n1 ? S1[n1 - 1] : k0 ? N0[k0 - 1] : order == 0 || !m0 ? fused : R0[m0 - 1];
	if (!add(out, SC_PARALLEL, ms, fused))
		goto full;
	if (vec >= 0 && part[vec][2] >= 0 && !add(out, SC_VECTORIZE, ms, part[vec][2]))
		goto full;
	for (int i = 0; i < n2; i++)
		if (!(vec >= 0 && S2[i] == part[vec][2]) && !add(out, SC_UNROLL, ms, S2[i]))
			goto full;
	if (!add(out, SC_CACHE_WRITE, ms, attach))
		goto full;
	for (int r = 0; r < st->nread; r++) {
		sc_prim *pk = pack[r] ? add(out, SC_PACK, ms, r) : NULL;
		if (pack[r] && !pk)
			goto full;
		if (pack[r] && r == panel) {
			pk->n = 1;
			pk->b = m0 ? R0[m0 - 1] : fused;
		}
	}
	sc_prim *pg = add(out, SC_PRAGMA, ms, 0);
	if (!pg)
		goto full;
	pg->f[0] = unroll;
	pg->f[1] = expl;
	return TK_OK;
full:
	return tk_seterr(TK_EINVAL, "%s: schedule longer than %d primitives", p->key, SC_MAXPRIM);
}
