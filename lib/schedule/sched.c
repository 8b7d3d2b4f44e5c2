/*
 * sched: loop naming, text form and parsing of primitive sequences.
 */
#include "sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[SC_NKIND] = {
	"split", "reorder", "fuse", "parallel", "vectorize", "unroll",
	"cache_write", "pack", "pragma",
};

const char *sc_kind_name(int kind)
{
	return kind >= 0 && kind < SC_NKIND ? kind_names[kind] : "?";
}

int sc_kind_find(const char *name)
{
	for (int k = 0; k < SC_NKIND; k++)
		if (!strcmp(kind_names[k], name))
			return k;
	return -1;
}

static void names_init(const te_prog *p, sc_names *nm)
{
	memset(nm, 0, sizeof *nm);
	for (int s = 0; s < p->nstage; s++) {
		const te_stage *st = &p->stage[s];
		nm->nloop[s] = st->naxis;
		for (int a = 0; a < st->naxis; a++) {
			nm->name[s][a] = st->axis[a].name;
			nm->extent[s][a] = st->axis[a].extent;
		}
	}
}

static int valid_loop(const sc_names *nm, int s, int l)
{
	return l >= 0 && l < nm->nloop[s];
}

/* Apply the naming effect of one primitive. */
static int names_apply(const te_prog *p, const sc_prim *pr, tk_arena *a, sc_names *nm)
{
	int s = pr->stage;
	if (s < 0 || s >= p->nstage)
		return tk_seterr(TK_EINVAL, "schedule: no stage %d", s);
	switch (pr->kind) {
	case SC_SPLIT: {
		if (!valid_loop(nm, s, pr->a) || pr->a >= p->stage[s].naxis)
			return tk_seterr(TK_EINVAL, "schedule: split of a loop that is not an axis");
		if (pr->n < 1 || pr->n >= SC_MAXFACTOR || nm->nloop[s] + pr->n + 1 > SC_MAXLOOP)
			return tk_seterr(TK_EINVAL, "schedule: bad split");
		int64_t prod = 1;
		for (int i = 0; i < pr->n; i++) {
			if (pr->f[i] < 1)
				return tk_seterr(TK_EINVAL, "schedule: split factor below 1");
			prod *= pr->f[i];
		}
		int64_t e = nm->extent[s][pr->a];
		const char *base = nm->name[s][pr->a];
		int l = nm->nloop[s];
		nm->name[s][l] = tk_arena_printf(a, "%s.0", base);
		nm->extent[s][l] = (e + prod - 1) / prod;
		for (int i = 0; i < pr->n; i++) {
			nm->name[s][l + 1 + i] = tk_arena_printf(a, "%s.%d", base, i + 1);
			nm->extent[s][l + 1 + i] = pr->f[i];
		}
		nm->nloop[s] += pr->n + 1;
		return TK_OK;
	}
	case SC_FUSE: {
		if (!valid_loop(nm, s, pr->a) || !valid_loop(nm, s, pr->b) || pr->a == pr->b ||
		    nm->nloop[s] == SC_MAXLOOP)
			return tk_seterr(TK_EINVAL, "schedule: bad fuse");
		int l = nm->nloop[s]++;
		nm->name[s][l] = tk_arena_printf(a, "%s+%s", nm->name[s][pr->a], nm->name[s][pr->b]);
		nm->extent[s][l] = nm->extent[s][pr->a] * nm->extent[s][pr->b];
		return TK_OK;
	}
	case SC_REORDER:
		if (pr->n < 1 || pr->n > SC_MAXLOOP)
			return tk_seterr(TK_EINVAL, "schedule: bad reorder");
		for (int i = 0; i < pr->n; i++)
			if (!valid_loop(nm, s, pr->order[i]))
				return tk_seterr(TK_EINVAL, "schedule: reorder of an unknown loop");
		return TK_OK;
	case SC_PACK:
		if (pr->a < 0 || pr->a >= p->stage[s].nread)
			return tk_seterr(TK_EINVAL, "schedule: pack of an unknown read");
		if (pr->n && !valid_loop(nm, s, pr->b))
			return tk_seterr(TK_EINVAL, "schedule: pack at an unknown loop");
		return TK_OK;
	case SC_PRAGMA:
		return TK_OK;
	case SC_PARALLEL:
	case SC_VECTORIZE:
	case SC_UNROLL:
	case SC_CACHE_WRITE:
		if (!valid_loop(nm, s, pr->a))
			return tk_seterr(TK_EINVAL, "schedule: %s of an unknown loop", sc_kind_name(pr->kind));
		return TK_OK;
	}
	return tk_seterr(TK_EINVAL, "schedule: unknown primitive %d", pr->kind);
}

int sc_names_build(const te_prog *p, const sc_sched *s, tk_arena *a, sc_names *out)
{
	names_init(p, out);
	for (int i = 0; i < s->nprim; i++) {
		int rc = names_apply(p, &s->prim[i], a, out);
		if (rc)
			return rc;
	}
	return TK_OK;
}

int sc_print(tk_sb *sb, const te_prog *p, const sc_sched *s)
{
	tk_arena a;
	sc_names nm;
	tk_arena_init(&a);
	if (setjmp(a.oom)) {
		tk_arena_free(&a);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	names_init(p, &nm);
	for (int i = 0; i < s->nprim; i++) {
		const sc_prim *pr = &s->prim[i];
		int st = pr->stage;
		const char *const *n = nm.name[st];
		tk_sb_printf(sb, "%s %s", sc_kind_name(pr->kind), p->tensor[p->stage[st].out].name);
		switch (pr->kind) {
		case SC_SPLIT:
			tk_sb_printf(sb, " %s", n[pr->a]);
			for (int j = 0; j < pr->n; j++)
				tk_sb_printf(sb, " %lld", (long long)pr->f[j]);
			break;
		case SC_REORDER:
			for (int j = 0; j < pr->n; j++)
				tk_sb_printf(sb, " %s", n[pr->order[j]]);
			break;
		case SC_FUSE:
			tk_sb_printf(sb, " %s %s", n[pr->a], n[pr->b]);
			break;
		case SC_PACK:
			tk_sb_printf(sb, " %s", p->tensor[p->stage[st].read[pr->a].tensor].name);
			if (pr->a > 0 || p->stage[st].nread > 1) {
				/* disambiguate when the tensor is read twice */
				int dup = 0;
				for (int q = 0; q < p->stage[st].nread; q++)
					if (q != pr->a && p->stage[st].read[q].tensor == p->stage[st].read[pr->a].tensor)
						dup = 1;
				if (dup)
					tk_sb_printf(sb, "#%d", pr->a);
			}
			if (pr->n)
				tk_sb_printf(sb, " at %s", n[pr->b]);
			break;
		case SC_PRAGMA:
			tk_sb_printf(sb, " unroll_max %lld explicit %lld", (long long)pr->f[0],
			             (long long)pr->f[1]);
			break;
		default:
			tk_sb_printf(sb, " %s", n[pr->a]);
		}
		tk_sb_putc(sb, '\n');
		int rc = names_apply(p, pr, &a, &nm);
		if (rc) {
			tk_arena_free(&a);
			return rc;
		}
	}
	tk_arena_free(&a);
	return sb->oom ? tk_seterr(TK_ENOMEM, "out of memory") : TK_OK;
}

static int find_name(const sc_names *nm, int s, const char *name)
{
	for (int l = nm->nloop[s] - 1; l >= 0; l--)
		if (!strcmp(nm->name[s][l], name))
			return l;
	return -1;
}

static int parse_line(const te_prog *p, char *line, int lineno, sc_names *nm, sc_prim *pr)
{
	char *tok[SC_MAXLOOP + 4];
	int nt = 0;
	char *save = NULL;
	for (char *t = strtok_r(line, " \t", &save); t && nt < ArraySize(tok);
	     t = strtok_r(NULL, " \t", &save))
		tok[nt++] = t;
	memset(pr, 0, sizeof *pr);
	if (nt < 2)
		return tk_seterr(TK_EINVAL, "schedule line %d: expected 'primitive stage ...'", lineno);
	pr->kind = sc_kind_find(tok[0]);
	if (pr->kind < 0)
		return tk_seterr(TK_EINVAL, "schedule line %d: unknown primitive '%s'", lineno, tok[0]);
	pr->stage = -1;
	for (int s = 0; s < p->nstage; s++)
		if (!strcmp(p->tensor[p->stage[s].out].name, tok[1]))
			pr->stage = s;
	if (pr->stage < 0)
		return tk_seterr(TK_EINVAL, "schedule line %d: no stage '%s'", lineno, tok[1]);
	int s = pr->stage;
	int64_t v;
	switch (pr->kind) {
	case SC_SPLIT:
		if (nt < 4 || nt - 3 >= SC_MAXFACTOR)
			return tk_seterr(TK_EINVAL, "schedule line %d: split LOOP FACTOR...", lineno);
		pr->a = find_name(nm, s, tok[2]);
		pr->n = nt - 3;
		for (int i = 0; i < pr->n; i++) {
			if (tk_parse_i64(tok[3 + i], &v) || v < 1)
				return tk_seterr(TK_EINVAL, "schedule line %d: bad factor '%s'", lineno, tok[3 + i]);
			pr->f[i] = v;
		}
		break;
	case SC_REORDER:
		pr->n = nt - 2;
		for (int i = 0; i < pr->n; i++)
			if ((pr->order[i] = find_name(nm, s, tok[2 + i])) < 0)
				return tk_seterr(TK_EINVAL, "schedule line %d: unknown loop '%s'", lineno, tok[2 + i]);
		break;
	case SC_FUSE:
		if (nt != 4)
			return tk_seterr(TK_EINVAL, "schedule line %d: fuse LOOP LOOP", lineno);
		pr->a = find_name(nm, s, tok[2]);
		pr->b = find_name(nm, s, tok[3]);
		break;
	case SC_PACK: {
		if (nt != 3 && (nt != 5 || strcmp(tok[3], "at")))
			return tk_seterr(TK_EINVAL, "schedule line %d: pack TENSOR [at LOOP]", lineno);
		if (nt == 5) {
			pr->n = 1;
			if ((pr->b = find_name(nm, s, tok[4])) < 0)
				return tk_seterr(TK_EINVAL, "schedule line %d: unknown loop '%s'", lineno, tok[4]);
		}
		char *hash = strchr(tok[2], '#');
		int want = -1;
		if (hash) {
			*hash = 0;
			if (tk_parse_i64(hash + 1, &v))
				return tk_seterr(TK_EINVAL, "schedule line %d: bad read number", lineno);
			want = (int)v;
		}
		pr->a = -1;
		for (int r = 0; r < p->stage[s].nread; r++)
			if (!strcmp(p->tensor[p->stage[s].read[r].tensor].name, tok[2]) &&
			    (want < 0 || want == r) && pr->a < 0)
				pr->a = r;
		break;
	}
	case SC_PRAGMA:
		if (nt != 6 || strcmp(tok[2], "unroll_max") || strcmp(tok[4], "explicit") ||
		    tk_parse_i64(tok[3], &pr->f[0]) || tk_parse_i64(tok[5], &pr->f[1]))
			return tk_seterr(TK_EINVAL, "schedule line %d: pragma unroll_max N explicit 0|1",
			                 lineno);
		break;
	default:
		if (nt != 3)
			return tk_seterr(TK_EINVAL, "schedule line %d: %s LOOP", lineno, tok[0]);
		pr->a = find_name(nm, s, tok[2]);
	}
	return TK_OK;
}

int sc_parse(const te_prog *p, const char *text, sc_sched *s)
{
	tk_arena a;
	sc_names nm;
	int rc = TK_OK;
	volatile int lineno = 0;
	char *copy = strdup(text);
	if (!copy)
		return tk_seterr(TK_ENOMEM, "out of memory");
	tk_arena_init(&a);
	if (setjmp(a.oom)) {
		tk_arena_free(&a);
		free(copy);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	names_init(p, &nm);
	s->nprim = 0;
	char *save = NULL;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		if (!*line)
			continue;
		if (s->nprim == SC_MAXPRIM) {
			rc = tk_seterr(TK_EINVAL, "schedule: more than %d primitives", SC_MAXPRIM);
			break;
		}
		sc_prim *pr = &s->prim[s->nprim];
		if ((rc = parse_line(p, line, lineno, &nm, pr)))
			break;
		if ((rc = names_apply(p, pr, &a, &nm))) {
			char why[256];
			snprintf(why, sizeof why, "%s", tk_errmsg());
			rc = tk_seterr(rc, "schedule line %d: %s", lineno, why);
			break;
		}
		s->nprim++;
	}
	tk_arena_free(&a);
	free(copy);
	return rc;
}

/* ---- the nest order ------------------------------------------------------ */

int sc_nest_pos(const int *order, int n, int l)
{
	for (int i = 0; i < n; i++)
		if (order[i] == l)
			return i;
	return -1;
}

/* Positions and sorting by bit masks of positions: a nest has at most
 * SC_MAXLOOP loops. Loop numbers are below SC_MAXLOOP too (a stage's). */
_Static_assert(SC_MAXLOOP <= 64, "a nest's positions fit a 64-bit mask");

int sc_nest_find(const int *order, int n, const int *loops, int k, int *pos)
{
	int at[SC_MAXLOOP];
	uint64_t seen = 0;
	for (int l = 0; l < SC_MAXLOOP; l++)
		at[l] = -1;
	for (int i = n - 1; i >= 0; i--) /* the first place of a loop, as sc_nest_pos */
		if (order[i] >= 0 && order[i] < SC_MAXLOOP)
			at[order[i]] = i;
	for (int j = 0; j < k; j++) {
		int l = loops[j];
		if ((pos[j] = l >= 0 && l < SC_MAXLOOP ? at[l] : -1) < 0)
			return -1;
		if (seen >> pos[j] & 1)
			return -2;
		seen |= (uint64_t)1 << pos[j];
	}
	return 0;
}

void sc_nest_split(int *order, int *n, int pos, int first, int nparts)
{
	memmove(&order[pos + nparts], &order[pos + 1], sizeof(int) * (size_t)(*n - pos - 1));
	for (int i = 0; i < nparts; i++)
		order[pos + i] = first + i;
	*n += nparts - 1;
}

void sc_nest_fuse(int *order, int *n, int pa, int pb, int l)
{
	order[pa] = l;
	memmove(&order[pb], &order[pb + 1], sizeof(int) * (size_t)(*n - pb - 1));
	(*n)--;
}

void sc_nest_reorder(int *order, const int *pos, const int *loops, int k)
{
	uint64_t m = 0;
	for (int i = 0; i < k; i++)
		m |= (uint64_t)1 << pos[i];
	for (int i = 0; i < k; i++, m &= m - 1) /* the positions, lowest first */
		order[__builtin_ctzll(m)] = loops[i];
}
