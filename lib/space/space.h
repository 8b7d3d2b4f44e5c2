/*
 * space: the configuration space of a task, in AutoTVM's sense: a list of
 * knobs, each with a finite list of candidate values. A configuration picks
 * one candidate per knob; it has a canonical text form
 *
 *     tile_i=4x8x16;tile_j=8x4x16;tile_r=32x16;order=0;vec=j;unroll=64;...
 *
 * and an index in the space (mixed radix, first knob least significant).
 *
 * The knobs of the generic template (one set per task, chosen on the stage
 * with the most work):
 *   tile_<axis>      split of each spatial axis into outer x middle x inner
 *                    (inner = the register tile) and of each reduction axis
 *                    into outer x inner. Factors come from the divisors of
 *                    the extent and the powers of two below it; the outer
 *                    factor is the ceiling, so non-dividing tiles occur and
 *                    are handled with loop tails.
 *   order            loop structure: 0 = S0 S1 R0 R1 S2 (the reduction runs
 *                    whole inside a register tile), 1 = S0 R0 S1 R1 S2 (the
 *                    reduction is blocked outside the middle spatial loops),
 *                    2 = S0w R0 S0 S1 R1 S2 where the task has a panel read
 *                    (a weight indexed by plain axes, e.g. B of a GEMM): the
 *                    outer blocks of the axes it depends on outermost, then
 *                    the reduction blocks, then the other outer blocks; the
 *                    weight, if packed, is copied one panel (what an
 *                    iteration of the R0 loops reads) at a time, inside
 *                    them, the panel staying in cache for the loops below
 *   vec              the spatial axis whose inner part is innermost and
 *                    vectorised. An operator may fix it (`vector AXIS` in
 *                    its declaration: the block of a blocked layout); then
 *                    vec has that one candidate and tile_AXIS only 1x1xE
 *   unroll           auto_unroll_max_step: 0, 16, 64, 512
 *   unroll_explicit  1: unroll the register tile (and loops a padding check
 *                    depends on) in the generated C, the rest by pragma;
 *                    0: leave it all to the compiler (lower.c, emit_c.h)
 *   pack_<input>     copy an input into a tile-ordered (and padded) layout
 *                    before the main loop nest (order 2: the panel read in
 *                    panels, see above)
 * The space depends only on the task, never on the target, so records from
 * different hardware share configurations (transfer learning needs it).
 */
#ifndef TK_SPACE_H
#define TK_SPACE_H

#include <stdint.h>

#include "task/te.h"
#include "util/util.h"

#define SP_MAXKNOB 24
#define SP_MAXLEVEL 3

enum { KNOB_SPLIT, KNOB_ENUM };

/* What a knob controls, for the template. */
enum {
	KR_TILE,     /* split of axis `axis` of the main stage */
	KR_ORDER,
	KR_VEC,      /* values are axis numbers, -1 for none */
	KR_UNROLL,
	KR_EXPLICIT,
	KR_PACK      /* pack read `read` of the main stage */
};

typedef struct sp_knob {
	const char *name;
	int kind;           /* KNOB_SPLIT or KNOB_ENUM */
	int role;           /* KR_* */
	int axis;           /* KR_TILE: axis of the main stage */
	int read;           /* KR_PACK: read index in the main stage body */
	int nlevel;         /* KNOB_SPLIT: number of factors (2 or 3) */
	int64_t extent;     /* KNOB_SPLIT: extent of the axis */
	int n;              /* number of candidates, >= 1 */
	int64_t *cand;      /* SPLIT: n*nlevel factors, outermost first; ENUM: n values */
	const char **label; /* ENUM: text of each value (NULL: print the number) */
} sp_knob;

typedef struct sp_space {
	tk_arena arena;     /* owns knob names, candidates, labels */
	const te_prog *prog;/* borrowed: must outlive the space */
	int main_stage;
	int panel_read;     /* read of the main stage order 2 packs in panels, -1: no order 2 */
	unsigned panel_axes;/* bit a: the panel read is indexed by axis a */
	int nknob;
	sp_knob knob[SP_MAXKNOB];
	uint64_t size;      /* number of configurations */
	int reg_vlen, reg_max; /* sp_limit_regtile(); reg_max 0: no limit */
} sp_space;

typedef struct sp_config {
	int v[SP_MAXKNOB];  /* candidate index per knob */
} sp_config;

/* Build the space of p. *out is freed with sp_space_free(). TK_EUNSUPP if the
 * space has more than 2^63 points or too many knobs. */
int sp_space_create(const te_prog *p, sp_space **out);
void sp_space_free(sp_space *s);

/* Knob number by name, -1 if absent. */
int sp_knob_find(const sp_space *s, const char *name);

uint64_t sp_index(const sp_space *s, const sp_config *c);
/* idx must be < s->size. */
void sp_from_index(const sp_space *s, uint64_t idx, sp_config *c);

/* Parse canonical text (knobs in any order, all present). TK_EINVAL with a
 * message naming the bad part for unknown or missing knobs and values that
 * are not candidates. */
int sp_parse(const sp_space *s, const char *text, sp_config *c);
/* Canonical text into sb. */
void sp_format(tk_sb *sb, const sp_space *s, const sp_config *c);

/* The value text of knob k in c ("4x8x16", "j", "64"). Returns buf. */
const char *sp_value_text(const sp_space *s, int k, const sp_config *c, char *buf, int nbuf);
/* A hash of the knobs' names and value texts, in order: equal for two
 * spaces with the same knobs and candidates (the same kernel's search
 * space, measured on two devices or at two problem sizes), whether built
 * from a template or imported. Never 0. */
uint64_t sp_space_hash(const sp_space *s);

/* Uniformly random configuration (among those within the register limit,
 * below, when one is set). */
void sp_sample(const sp_space *s, tk_rng *r, sp_config *c);
/* A neighbour: c with one knob (with more than one candidate) changed to a
 * different random candidate (within the register limit when one is set).
 * c itself if every knob has one candidate. */
void sp_neighbor(const sp_space *s, tk_rng *r, const sp_config *c, sp_config *out);

/* ---- the register tile ------------------------------------------------------
 * The accumulator tile of c (the inner tile factors of the spatial axes) in
 * vector registers of vlen lanes: the vectorised axis's factor rounded up
 * to whole vectors, times the other factors. 1 for a space without tiles. */
int64_t sp_regtile(const sp_space *s, const sp_config *c, int vlen);
/* From now on sp_sample and sp_neighbor draw configurations whose register
 * tile is at most nreg vectors of vlen lanes: a tile that does not fit the
 * register file spills its accumulators on every step of the reduction.
 * They draw up to SP_REG_TRIES times and then take what they drew, so a
 * space with few fitting configurations is still searched. nreg 0 lifts the
 * limit. Indices, text and the space itself are unchanged: the limit is a
 * rule of the samplers, which is why a target can set it. */
void sp_limit_regtile(sp_space *s, int vlen, int nreg);
#define SP_REG_TRIES 64

/* ---- the panel of order 2 ----------------------------------------------------
 * Under order 2 a packed panel read is copied one panel at a time, inside
 * the outermost blocks: the panel spans, for each axis indexing the read,
 * the parts after the first of its tile knob (the whole axis without one).
 * Lowering makes no panel larger than SP_PANEL_MAX_FLOATS (a core's L2),
 * nor one that no outer part restricts; it copies such a read whole before
 * the nest instead. sp_panel is the panel's size in floats as lowering
 * computes it up to the padding of non-dividing splits, 0 when c makes no
 * panel: not order 2, the panel read not packed, nothing restricted, over
 * the limit, or no panel read in the space. */
#define SP_PANEL_MAX_FLOATS (128 << 10)
int64_t sp_panel(const sp_space *s, const sp_config *c);

/* The naive configuration: every split [E,1,1], order 0, first vec axis, no
 * unroll, no packing: the plain loop nest. */
void sp_naive(const sp_space *s, sp_config *c);

/* ---- imported spaces (custom.c) --------------------------------------------
 * A space that is the Cartesian product of named parameters with listed
 * values, with no program behind it (prog == NULL, main_stage -1): Kernel
 * Tuner's tune_params. Every knob is KNOB_ENUM with role KR_CUSTOM, its
 * labels the values as text and cand[] the values when they are integers
 * (else the value's position). Configuration text and index work as for
 * template spaces. */
enum { KR_CUSTOM = 100 };

/* Build from nknob names, each with nval[k] value strings val[k][...].
 * TK_EINVAL for duplicate names or values, empty lists, too many knobs. */
int sp_space_custom(int nknob, const char *const *name, const int *nval,
                    const char *const *const *val, sp_space **out);
/* A space of the knobs knob[0..nknob) and no program (prog NULL, main_stage
 * -1), for a target whose configurations are not loop nests (lib/vta).
 * Each description gives name, kind, n and cand (KNOB_SPLIT: nlevel and
 * n*nlevel factors, outermost first; KNOB_ENUM: n values, label optional);
 * they are copied, and every knob gets role KR_CUSTOM. Configuration text,
 * index, sampling and knob features work as for any space. TK_EINVAL for
 * no knob or too many, a knob without candidates; TK_ENOMEM. */
int sp_space_knobs(int nknob, const sp_knob *knob, sp_space **out);
/* The JSON form stored in task.space: {"knobs": [{"name": ..., "values":
 * [...]}, ...]} (values as JSON numbers when numeric). Caller frees. */
char *sp_space_to_json(const sp_space *s);
int sp_space_from_json(const char *json, sp_space **out);

#endif
