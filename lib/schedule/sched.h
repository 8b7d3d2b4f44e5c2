/*
 * sched: schedules as sequences of primitives, kept as data.
 *
 * A configuration of the template (template.c) becomes a list of schedule
 * primitives on the stages of a program, in the vocabulary of TVM:
 *
 *     split O y 4 2        y -> y.0 y.1 y.2 with inner extents 4 and 2
 *     reorder O b y.0 ...  new order of (some of) the stage's loops
 *     fuse O y.0 x.0       two adjacent loops -> one loop "y.0+x.0"
 *     parallel O y.0+x.0   annotate a loop (ignored on 1-thread targets)
 *     vectorize O x.2
 *     unroll O y.2
 *     cache_write O x.1    accumulate in a local tile below loop x.1
 *     pack O W             copy input W into a tile-ordered, padded layout
 *     pack O W at y.0+x.0  the same inside that loop, only the panel one of
 *                          its iterations reads (in a local buffer)
 *     pragma O unroll_max 64 explicit 1
 *
 * The text form (one primitive per line) is what the record store keeps
 * with each configuration and what sequence models read. lower.c applies the
 * sequence to build the loop-nest IR: the sequence is the schedule, not a
 * description of it.
 */
#ifndef TK_SCHED_H
#define TK_SCHED_H

#include <stdint.h>

#include "space/space.h"
#include "task/te.h"
#include "util/util.h"

#define SC_MAXPRIM 64
#define SC_MAXLOOP 48   /* loops (itervars) of one stage */
#define SC_MAXFACTOR 4

enum {
	SC_SPLIT, SC_REORDER, SC_FUSE, SC_PARALLEL, SC_VECTORIZE, SC_UNROLL,
	SC_CACHE_WRITE, SC_PACK, SC_PRAGMA, SC_NKIND
};

/* Loops of a stage are numbered: 0..naxis-1 are the stage's axes; each
 * split appends its parts, each fuse appends the fused loop, in primitive
 * order. */
typedef struct sc_prim {
	int kind;
	int stage;
	int a;                        /* SPLIT/FUSE/annotations/CACHE_WRITE: loop; PACK: read */
	int b;                        /* FUSE: second loop; PACK with n = 1: the loop it is at */
	int n;                        /* SPLIT: factors; REORDER: loops; PACK: 1 if at a loop */
	int64_t f[SC_MAXFACTOR];      /* SPLIT: inner extents (outer part derived);
	                                 PRAGMA: unroll_max, explicit */
	int order[SC_MAXLOOP];        /* REORDER */
} sc_prim;

typedef struct sc_sched {
	int nprim;
	sc_prim prim[SC_MAXPRIM];
} sc_sched;

/* Name of a primitive kind ("split", ...), and the kind of a name (-1). */
const char *sc_kind_name(int kind);
int sc_kind_find(const char *name);

/* Loop names of every stage after applying s: names[stage][loop], with
 * nloop[stage] entries, arena-allocated. Used for printing and parsing. */
typedef struct sc_names {
	int nloop[TE_MAXSTAGE];
	const char *name[TE_MAXSTAGE][SC_MAXLOOP];
	int64_t extent[TE_MAXSTAGE][SC_MAXLOOP];
} sc_names;

/* Compute loop names and extents for s over p. TK_EINVAL when a primitive
 * refers to a loop that does not exist or exceeds the limits. */
int sc_names_build(const te_prog *p, const sc_sched *s, tk_arena *a, sc_names *out);

/* Text form of s into sb, one primitive per line. */
int sc_print(tk_sb *sb, const te_prog *p, const sc_sched *s);
/* Parse the text form. TK_EINVAL with the offending line on error. */
int sc_parse(const te_prog *p, const char *text, sc_sched *s);

/* The template: the primitive sequence of configuration c of space sp.
 * TK_OK, or TK_EINVAL if the sequence would exceed the limits. */
int sc_from_config(const sp_space *sp, const sp_config *c, sc_sched *out);

/* The nest of one stage: its loops' numbers, outermost first, as split,
 * fuse and reorder leave it (lower.c builds the loop nest from it; the tlp
 * features read it). The caller checks the primitive first. */
int sc_nest_pos(const int *order, int n, int l);    /* -1 if l is not there */
/* the loop at pos becomes its nparts parts, numbered first.. */
void sc_nest_split(int *order, int *n, int pos, int first, int nparts);
/* the loops at pa and pb (lower.c: pb = pa + 1) become loop l, at pa */
void sc_nest_fuse(int *order, int *n, int pa, int pb, int l);
/* The positions pos[0..k) of loops[0..k): 0, -1 if a loop is not in the
 * nest, -2 if two of them are the same loop (pos is then partial). */
int sc_nest_find(const int *order, int n, const int *loops, int k, int *pos);
/* loops[0..k) (distinct, at positions pos[0..k)) take those positions,
 * sorted, in the order listed: TVM's reorder */
void sc_nest_reorder(int *order, const int *pos, const int *loops, int k);

#endif
