/*
 * onnx: the reader of ONNX models and its shape inference (see onnx.h).
 *
 * Shape key: N batch, C input channels, M output channels, H W spatial
 * sizes, K the reduction length of a matrix product.
 *
 * The file is mapped and walked as protobuf wire format: ModelProto (its
 * graph and opset_import), GraphProto (node, initializer, input, output),
 * NodeProto and AttributeProto field by field; graph inputs, outputs and
 * opset entries are unpacked with protobuf-c. A TensorProto (initializer,
 * or a Constant's value) is read for its name, type and dimensions, and for
 * its values only when it has at most ONNX_MAXVAL elements: weights are
 * never copied. Every allocation comes from one arena, freed at the end.
 *
 * The blocked layout's variant (onnx_read_layout) is a second walk over
 * the inferred graph in the order of inference, after shapes are known:
 * each tensor carries its block, each node's task is counted again (a
 * Conv's as its blocked operator), and reorders are counted where a
 * consumer needs another block than its input holds.
 */
#include "onnx.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "task/te.h"
#include "util/util.h"

#define MAXD ONNX_MAXDIM
#define MAXV ONNX_MAXVAL
#define DIM_MAX ((int64_t)1 << 31)    /* a dimension beyond is absurd */
#define ELEM_MAX ((int64_t)1 << 48)   /* and so is a tensor of more elements */

/* TensorProto.DataType */
enum {
	DT_UNDEF = 0, DT_FLOAT = 1, DT_UINT8 = 2, DT_INT8 = 3, DT_UINT16 = 4, DT_INT16 = 5,
	DT_INT32 = 6, DT_INT64 = 7, DT_STRING = 8, DT_BOOL = 9, DT_FLOAT16 = 10, DT_DOUBLE = 11,
	DT_UINT32 = 12, DT_UINT64 = 13, DT_BFLOAT16 = 16
};

/* AttributeProto.AttributeType */
enum { AT_FLOAT = 1, AT_INT = 2, AT_STRING = 3, AT_TENSOR = 4, AT_GRAPH = 5,
       AT_FLOATS = 6, AT_INTS = 7, AT_STRINGS = 8 };

/* A tensor of the graph. */
typedef struct val {
	const char *name;
	int known;               /* shape known */
	int dtype;
	int ndim;
	int64_t dim[MAXD];
	int hv;                  /* values known (at most MAXV elements) */
	int64_t *iv;             /* [nelem] as integers */
	double *fv;              /* [nelem] as reals */
	int producer;            /* node index; -1: graph input or initializer */
	int input;               /* a graph input without an initializer */
	int weight;              /* an initializer or a Constant's output */
	int graph_out;
	int nuse, nfill;         /* consuming node inputs */
	int *use;                /* [nuse] node indices */
	int64_t block;           /* blocked layout: channels per block; 0 plain */
	uint32_t reordered;      /* bit b: a reorder to block b is counted */
} val;

typedef struct attr {
	const char *name;
	int type;
	int64_t i;
	double f;
	const char *s;           /* NUL-terminated copy */
	int nints, nfloats;
	int64_t *ints;
	double *floats;
	val *t;                  /* AT_TENSOR */
} attr;

typedef struct node {
	const char *name, *op, *domain;
	int nin, nout, nattr;
	val **in, **out;         /* NULL for an omitted optional input or output */
	attr *attr;
	int missing;             /* inputs not yet inferred */
	const char *task;        /* key of its task, NULL if none */
} node;

typedef struct task_ent {
	char *key;
	double weight;
	int node;
	const char *note;        /* comment instead of "node NAME (OP)", or NULL */
} task_ent;

typedef struct ox {
	tk_arena a;
	const char *where;
	int64_t opset;
	val **tab;               /* open addressing by name */
	size_t cap, nval;
	node *nodes;
	int nnode, capnode;
	task_ent *task;
	int ntask, captask;
	int *ttab;               /* task indices + 1 by key, open addressing */
	size_t tcap;
	const char *symbolic;    /* the first symbolic dimension without --input */
	val **input;             /* graph inputs in the model's order */
	int ninput, capinput;
	val **output;            /* graph outputs in the model's order */
	int noutput, capoutput;
	int shapes;              /* onnx_output_shapes(): no task needed */
	int layout;              /* ONNX_LAYOUT_* */
	int *order;              /* [norder] nodes in the order inferred */
	int norder;
} ox;

/* ---- protobuf wire format -------------------------------------------- */

typedef struct pb {
	const uint8_t *p, *end;
} pb;

typedef struct pbf {
	uint32_t field;
	int wt;                  /* 0 varint, 1 fixed64, 2 bytes, 5 fixed32 */
	uint64_t v;              /* varint and fixed values */
	const uint8_t *data;     /* bytes */
	size_t len;
} pbf;

static int pb_varint(pb *r, uint64_t *out)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			return -1;
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

/* The next field of the message in r: 1 and *f, 0 at the end, -1 when
 * the bytes are not protobuf (a bad tag, a length past the end, a group). */
static int pb_next(pb *r, pbf *f)
{
	uint64_t tag;
	if (r->p >= r->end)
		return 0;
	if (pb_varint(r, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
		return -1;
	f->field = (uint32_t)(tag >> 3);
	f->wt = (int)(tag & 7);
	f->data = NULL;
	f->len = 0;
	switch (f->wt) {
	case 0:
		return pb_varint(r, &f->v) ? -1 : 1;
	case 1:
		if (r->end - r->p < 8)
			return -1;
		f->v = 0;
		for (int i = 7; i >= 0; i--)
			f->v = f->v << 8 | r->p[i];
		r->p += 8;
		return 1;
	case 5:
		if (r->end - r->p < 4)
			return -1;
		f->v = (uint64_t)r->p[0] | (uint64_t)r->p[1] << 8 | (uint64_t)r->p[2] << 16 |
		       (uint64_t)r->p[3] << 24;
		r->p += 4;
		return 1;
	case 2: {
		uint64_t len;
		if (pb_varint(r, &len) || len > (uint64_t)(r->end - r->p))
			return -1;
		f->data = r->p;
		f->len = (size_t)len;
		r->p += len;
		return 1;
	}
	}
	return -1;
}

/* ---- errors and memory ------------------------------------------------- */

/* A printable copy of an ONNX name for messages and comments: control
 * characters become '?', at most 200 bytes. */
static const char *pname(ox *o, const char *s)
{
	size_t n = strlen(s);
	if (n > 200)
		n = 200;
	char *c = tk_arena_alloc(&o->a, n + 1);
	for (size_t i = 0; i < n; i++)
		c[i] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
	return c;
}

static int bad(ox *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(ox *o, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return tk_seterr(TK_EINVAL, "%s: %s", o->where, msg);
}

/* An error at a node: "WHERE: node 'NAME' (OP): message". */
static int fail(ox *o, const node *nd, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(ox *o, const node *nd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return tk_seterr(TK_EINVAL, "%s: node '%s' (%s): %s", o->where, pname(o, nd->name),
	                 pname(o, nd->op), msg);
}

static char *bytes_str(ox *o, const uint8_t *p, size_t n)
{
	char *s = tk_arena_alloc(&o->a, n + 1);
	memcpy(s, p, n);
	return s;
}

/* Grow an arena array of *cap elements of size sz to hold n + 1. */
static void *agrow(ox *o, void *old, int n, int *cap, size_t sz)
{
	if (n < *cap)
		return old;
	int ncap = *cap ? 2 * *cap : 16;
	void *p = tk_arena_alloc(&o->a, sz * (size_t)ncap);
	if (n)
		memcpy(p, old, sz * (size_t)n);
	*cap = ncap;
	return p;
}

/* ---- tensors by name ------------------------------------------------- */

static val *lookup(ox *o, const char *name, int create)
{
	if (o->nval * 2 >= o->cap) {
		size_t ncap = o->cap ? 2 * o->cap : 1024;
		val **t = tk_arena_alloc(&o->a, sizeof *t * ncap);
		for (size_t i = 0; i < o->cap; i++)
			if (o->tab[i]) {
				size_t h = tk_hash64(o->tab[i]->name, strlen(o->tab[i]->name), 0) & (ncap - 1);
				while (t[h])
					h = (h + 1) & (ncap - 1);
				t[h] = o->tab[i];
			}
		o->tab = t;
		o->cap = ncap;
	}
	size_t h = tk_hash64(name, strlen(name), 0) & (o->cap - 1);
	while (o->tab[h]) {
		if (!strcmp(o->tab[h]->name, name))
			return o->tab[h];
		h = (h + 1) & (o->cap - 1);
	}
	if (!create)
		return NULL;
	val *v = tk_arena_alloc(&o->a, sizeof *v);
	v->name = tk_arena_strdup(&o->a, name);
	v->producer = -1;
	o->tab[h] = v;
	o->nval++;
	return v;
}

static int64_t nelem(const val *v)
{
	int64_t n = 1;
	for (int i = 0; i < v->ndim; i++)
		n *= v->dim[i];
	return n;
}

static int is_float(int dt)
{
	return dt == DT_FLOAT || dt == DT_DOUBLE || dt == DT_FLOAT16 || dt == DT_BFLOAT16;
}

/* Check dims (each in [0, DIM_MAX], the product under ELEM_MAX). */
static int dims_ok(int ndim, const int64_t *dim)
{
	int64_t n = 1;
	if (ndim < 0 || ndim > MAXD)
		return 0;
	for (int i = 0; i < ndim; i++) {
		if (dim[i] < 0 || dim[i] > DIM_MAX)
			return 0;
		if (dim[i] && n > ELEM_MAX / dim[i])
			return 0;
		n *= dim[i] ? dim[i] : 1;
	}
	return 1;
}

static void alloc_vals(ox *o, val *v)
{
	int64_t n = nelem(v);
	v->iv = tk_arena_alloc(&o->a, sizeof *v->iv * (size_t)(n ? n : 1));
	v->fv = tk_arena_alloc(&o->a, sizeof *v->fv * (size_t)(n ? n : 1));
	v->hv = 1;
}

/* A real as an integer, saturated (NaN: 0). */
static int64_t f2i(double f)
{
	if (f != f)
		return 0;
	return f >= 9.2e18 ? INT64_MAX : f <= -9.2e18 ? INT64_MIN : (int64_t)f;
}

/* Set value i of v from a real (the integer view truncates). */
static void set_f(val *v, int64_t i, double f)
{
	v->fv[i] = f;
	v->iv[i] = f2i(f);
}

static void set_i(val *v, int64_t i, int64_t x)
{
	v->iv[i] = x;
	v->fv[i] = (double)x;
}

/* Integer arithmetic of constant values as two's complement wraps: the
 * values come from the file, and C's signed overflow is undefined. */
static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

/* ---- TensorProto ------------------------------------------------------- */

static int elem_size(int dt)
{
	switch (dt) {
	case DT_FLOAT: case DT_INT32: case DT_UINT32: return 4;
	case DT_DOUBLE: case DT_INT64: case DT_UINT64: return 8;
	case DT_INT16: case DT_UINT16: case DT_FLOAT16: case DT_BFLOAT16: return 2;
	case DT_INT8: case DT_UINT8: case DT_BOOL: return 1;
	}
	return 0;
}

/* Read a TensorProto in p[0, n) into t: name (when want_name), dtype,
 * dims, and the values of a tensor of at most MAXV elements whose values
 * are in the file. A message for a malformed tensor in *why. */
static int tensor_read(ox *o, const uint8_t *p, size_t n, val *t, int want_name, const char **why)
{
	pb r = { p, p + n }, q;
	pbf f;
	int got, ext = 0;
	const uint8_t *raw = NULL;
	size_t rawlen = 0;
	int has_raw = 0;
	t->ndim = 0;
	t->dtype = DT_UNDEF;
	while ((got = pb_next(&r, &f)) > 0) {
		switch (f.field) {
		case 1: /* dims */
			if (f.wt == 0) {
				if (t->ndim >= MAXD)
					return (*why = "more than 8 dimensions"), -1;
				t->dim[t->ndim++] = (int64_t)f.v;
			} else if (f.wt == 2) {
				q = (pb){ f.data, f.data + f.len };
				while (q.p < q.end) {
					uint64_t d;
					if (pb_varint(&q, &d))
						return (*why = "malformed dims"), -1;
					if (t->ndim >= MAXD)
						return (*why = "more than 8 dimensions"), -1;
					t->dim[t->ndim++] = (int64_t)d;
				}
			} else
				return (*why = "malformed dims"), -1;
			break;
		case 2:
			if (f.wt != 0)
				return (*why = "malformed data_type"), -1;
			t->dtype = (int)f.v;
			break;
		case 8:
			if (f.wt != 2)
				return (*why = "malformed name"), -1;
			if (want_name)
				t->name = bytes_str(o, f.data, f.len);
			break;
		case 9:
			if (f.wt != 2)
				return (*why = "malformed raw_data"), -1;
			raw = f.data;
			rawlen = f.len;
			has_raw = 1;
			break;
		case 14:
			ext = f.v == 1;
			break;
		}
	}
	if (got < 0)
		return (*why = "malformed tensor"), -1;
	for (int i = 0; i < t->ndim; i++)
		if (t->dim[i] < 0 || t->dim[i] > DIM_MAX)
			return (*why = "absurd dimension"), -1;
	if (!dims_ok(t->ndim, t->dim))
		return (*why = "absurd dimensions"), -1;
	t->known = 1;
	int64_t ne = nelem(t);
	int es = elem_size(t->dtype);
	if (has_raw && es && !ext && (uint64_t)rawlen != (uint64_t)ne * (uint64_t)es)
		return (*why = "raw_data does not hold the tensor's shape"), -1;
	if (ne > MAXV || ext || t->dtype == DT_FLOAT16 || t->dtype == DT_BFLOAT16 || !es)
		return 0;
	if (has_raw) {
		alloc_vals(o, t);
		for (int64_t i = 0; i < ne; i++) {
			const uint8_t *e = raw + i * es;
			uint64_t u = 0;
			for (int b = es - 1; b >= 0; b--)
				u = u << 8 | e[b];
			switch (t->dtype) {
			case DT_FLOAT: { uint32_t w = (uint32_t)u; float x; memcpy(&x, &w, 4); set_f(t, i, x); break; }
			case DT_DOUBLE: { double x; memcpy(&x, &u, 8); set_f(t, i, x); break; }
			case DT_INT64: set_i(t, i, (int64_t)u); break;
			case DT_INT32: set_i(t, i, (int32_t)(uint32_t)u); break;
			case DT_INT16: set_i(t, i, (int16_t)(uint16_t)u); break;
			case DT_INT8: set_i(t, i, (int8_t)(uint8_t)u); break;
			case DT_UINT64: set_i(t, i, (int64_t)u); break;
			default: set_i(t, i, (int64_t)u); break;
			}
		}
		return 0;
	}
	/* typed fields: float_data 4, int32_data 5, int64_data 7, double_data
	 * 10, uint64_data 11; packed (as onnx.proto declares them), or not, or
	 * in several packed runs: protobuf allows each */
	int fld = t->dtype == DT_FLOAT ? 4 : t->dtype == DT_DOUBLE ? 10 : t->dtype == DT_INT64 ? 7
	        : t->dtype == DT_UINT64 || t->dtype == DT_UINT32 ? 11 : 5;
	int scalar_wt = fld == 4 ? 5 : fld == 10 ? 1 : 0, sz = fld == 4 ? 4 : 8;
	uint64_t u[MAXV];
	int64_t count = 0;
	r = (pb){ p, p + n };
	while (pb_next(&r, &f) > 0) {
		if ((int)f.field != fld)
			continue;
		if (f.wt == scalar_wt) {
			if (count < MAXV)
				u[count] = f.v;
			count++;
			continue;
		}
		if (f.wt != 2)
			return (*why = "malformed values"), -1;
		q = (pb){ f.data, f.data + f.len };
		while (q.p < q.end) {
			uint64_t x = 0;
			if (scalar_wt == 0) {
				if (pb_varint(&q, &x))
					return (*why = "malformed values"), -1;
			} else {
				if (q.end - q.p < sz)
					return (*why = "malformed values"), -1;
				for (int b = sz - 1; b >= 0; b--)
					x = x << 8 | q.p[b];
				q.p += sz;
			}
			if (count < MAXV)
				u[count] = x;
			count++;
		}
	}
	if (count == 0 && ne > 0)
		return 0; /* no values in the file: shape only */
	if (count != ne)
		return (*why = "its values do not match its shape"), -1;
	alloc_vals(o, t);
	for (int64_t i = 0; i < ne; i++) {
		if (fld == 4) {
			uint32_t w = (uint32_t)u[i];
			float x;
			memcpy(&x, &w, 4);
			set_f(t, i, x);
		} else if (fld == 10) {
			double x;
			memcpy(&x, &u[i], 8);
			set_f(t, i, x);
		} else
			set_i(t, i, fld == 5 ? (int64_t)(int32_t)u[i] : (int64_t)u[i]);
	}
	return 0;
}

/* ---- nodes and attributes --------------------------------------------- */

static int read_attr(ox *o, const uint8_t *p, size_t n, attr *at, const char **why)
{
	pb r = { p, p + n }, q;
	pbf f;
	int got, nints = 0, nfloats = 0;
	/* count repeated ints and floats first */
	while ((got = pb_next(&r, &f)) > 0) {
		if (f.field == 8) {
			if (f.wt == 0)
				nints++;
			else if (f.wt == 2) {
				q = (pb){ f.data, f.data + f.len };
				uint64_t u;
				while (q.p < q.end)
					if (pb_varint(&q, &u))
						return (*why = "malformed ints"), -1;
					else
						nints++;
			}
		} else if (f.field == 7)
			nfloats += f.wt == 5 ? 1 : f.wt == 2 ? (int)(f.len / 4) : 0;
	}
	if (got < 0)
		return (*why = "malformed attribute"), -1;
	at->ints = tk_arena_alloc(&o->a, sizeof *at->ints * (size_t)(nints + 1));
	at->floats = tk_arena_alloc(&o->a, sizeof *at->floats * (size_t)(nfloats + 1));
	at->name = "";
	r = (pb){ p, p + n };
	while (pb_next(&r, &f) > 0) {
		switch (f.field) {
		case 1:
			if (f.wt == 2)
				at->name = bytes_str(o, f.data, f.len);
			break;
		case 20: at->type = (int)f.v; break;
		case 3: at->i = (int64_t)f.v; break;
		case 2: {
			uint32_t w = (uint32_t)f.v;
			float x;
			memcpy(&x, &w, 4);
			at->f = x;
			break;
		}
		case 4:
			if (f.wt == 2)
				at->s = bytes_str(o, f.data, f.len);
			break;
		case 5:
			if (f.wt != 2)
				return (*why = "malformed tensor attribute"), -1;
			at->t = tk_arena_alloc(&o->a, sizeof *at->t);
			if (tensor_read(o, f.data, f.len, at->t, 0, why))
				return -1;
			break;
		case 7:
			if (f.wt == 5) {
				uint32_t w = (uint32_t)f.v;
				float x;
				memcpy(&x, &w, 4);
				at->floats[at->nfloats++] = x;
			} else if (f.wt == 2) {
				for (size_t i = 0; i + 4 <= f.len; i += 4) {
					uint32_t w = (uint32_t)f.data[i] | (uint32_t)f.data[i + 1] << 8 |
					             (uint32_t)f.data[i + 2] << 16 | (uint32_t)f.data[i + 3] << 24;
					float x;
					memcpy(&x, &w, 4);
					at->floats[at->nfloats++] = x;
				}
			}
			break;
		case 8:
			if (f.wt == 0)
				at->ints[at->nints++] = (int64_t)f.v;
			else if (f.wt == 2) {
				q = (pb){ f.data, f.data + f.len };
				uint64_t u;
				while (q.p < q.end && !pb_varint(&q, &u))
					at->ints[at->nints++] = (int64_t)u;
			}
			break;
		}
	}
	return 0;
}

static int read_node(ox *o, const uint8_t *p, size_t n)
{
	pb r = { p, p + n };
	pbf f;
	int got, nin = 0, nout = 0, nattr = 0;
	while ((got = pb_next(&r, &f)) > 0) {
		if (f.field == 1)
			nin++;
		else if (f.field == 2)
			nout++;
		else if (f.field == 5)
			nattr++;
	}
	if (got < 0)
		return bad(o, "node %d: malformed", o->nnode);
	o->nodes = agrow(o, o->nodes, o->nnode, &o->capnode, sizeof *o->nodes);
	node *nd = &o->nodes[o->nnode];
	memset(nd, 0, sizeof *nd);
	nd->name = nd->op = nd->domain = "";
	nd->in = tk_arena_alloc(&o->a, sizeof *nd->in * (size_t)(nin + 1));
	nd->out = tk_arena_alloc(&o->a, sizeof *nd->out * (size_t)(nout + 1));
	nd->attr = tk_arena_alloc(&o->a, sizeof *nd->attr * (size_t)(nattr + 1));
	r = (pb){ p, p + n };
	while (pb_next(&r, &f) > 0) {
		if (f.wt != 2 && (f.field <= 5 || f.field == 7))
			return bad(o, "node %d: malformed", o->nnode);
		switch (f.field) {
		case 1:
		case 2: {
			char *s = bytes_str(o, f.data, f.len);
			val *v = *s ? lookup(o, s, 1) : NULL;
			if (f.field == 1)
				nd->in[nd->nin++] = v;
			else
				nd->out[nd->nout++] = v;
			break;
		}
		case 3: nd->name = bytes_str(o, f.data, f.len); break;
		case 4: nd->op = bytes_str(o, f.data, f.len); break;
		case 7: nd->domain = bytes_str(o, f.data, f.len); break;
		case 5: {
			const char *why;
			if (read_attr(o, f.data, f.len, &nd->attr[nd->nattr], &why))
				return bad(o, "node %d: %s", o->nnode, why);
			nd->nattr++;
			break;
		}
		}
	}
	if (!*nd->name) {
		/* messages name a node: without a name, by its first output */
		nd->name = tk_arena_printf(&o->a, "#%d%s%s", o->nnode, nd->nout && nd->out[0] ? " -> " : "",
		                           nd->nout && nd->out[0] ? nd->out[0]->name : "");
	}
	for (int i = 0; i < nd->nout; i++)
		if (nd->out[i]) {
			if (nd->out[i]->producer >= 0 || nd->out[i]->weight || nd->out[i]->input)
				return fail(o, nd, "output '%s' has another producer", pname(o, nd->out[i]->name));
			nd->out[i]->producer = o->nnode;
		}
	o->nnode++;
	return TK_OK;
}

static const attr *get_attr(const node *nd, const char *name)
{
	for (int i = nd->nattr - 1; i >= 0; i--)
		if (!strcmp(nd->attr[i].name, name))
			return &nd->attr[i];
	return NULL;
}

static int64_t attr_i(const node *nd, const char *name, int64_t dflt)
{
	const attr *a = get_attr(nd, name);
	return a ? a->i : dflt;
}

static const char *attr_s(const node *nd, const char *name, const char *dflt)
{
	const attr *a = get_attr(nd, name);
	return a && a->s ? a->s : dflt;
}

/* ---- graph ------------------------------------------------------------- */

/* A graph input (ValueInfoProto) with the overrides of --input. */
static int read_input(ox *o, const uint8_t *p, size_t n, const onnx_input *in, int nin, int *used)
{
	Onnx__ValueInfoProto *vi = onnx__value_info_proto__unpack(NULL, n, p);
	int rc = TK_OK;
	if (!vi)
		return bad(o, "a graph input is malformed");
	if (!vi->name || !*vi->name) {
		rc = bad(o, "a graph input has no name");
		goto out;
	}
	val *v = lookup(o, vi->name, 1);
	if (v->weight) /* an initializer listed as an input (IR < 4): its own shape */
		goto out;
	if (v->input || v->producer >= 0) {
		rc = bad(o, "graph input '%s' listed twice or produced by a node", pname(o, vi->name));
		goto out;
	}
	v->input = 1;
	o->input = agrow(o, o->input, o->ninput, &o->capinput, sizeof *o->input);
	o->input[o->ninput++] = v;
	const onnx_input *ov = NULL;
	for (int i = 0; i < nin; i++)
		if (!strcmp(in[i].name, vi->name)) {
			ov = &in[i];
			used[i] = 1;
		}
	Onnx__TypeProto *tp = vi->type;
	if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
		rc = bad(o, "graph input '%s' is not a tensor", pname(o, vi->name));
		goto out;
	}
	v->dtype = tp->tensor_type->elem_type;
	Onnx__TensorShapeProto *sh = tp->tensor_type->shape;
	if (ov) {
		if (sh && (int)sh->n_dim != ov->ndim) {
			rc = bad(o, "--input %s: %d dimensions, the model's input has %d", pname(o, vi->name),
			         ov->ndim, (int)sh->n_dim);
			goto out;
		}
		v->ndim = ov->ndim;
		memcpy(v->dim, ov->dim, sizeof v->dim);
	} else {
		if (!sh) {
			rc = bad(o, "graph input '%s' has no shape: give it with --input %s=D1xD2x...",
			         pname(o, vi->name), pname(o, vi->name));
			goto out;
		}
		if (sh->n_dim > MAXD) {
			rc = bad(o, "graph input '%s' has more than %d dimensions", pname(o, vi->name), MAXD);
			goto out;
		}
		v->ndim = (int)sh->n_dim;
		for (size_t i = 0; i < sh->n_dim; i++) {
			Onnx__TensorShapeProto__Dimension *d = sh->dim[i];
			if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
				const char *sym = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
				                  && d->dim_param ? d->dim_param : "?";
				/* reported after the names of --input are checked */
				if (!o->symbolic)
					o->symbolic = tk_arena_printf(&o->a, "graph input '%s': dimension %d is "
					        "symbolic ('%s'): give the shape with --input %s=D1xD2x...",
					        pname(o, vi->name), (int)i, pname(o, sym), pname(o, vi->name));
				goto out;
			}
			v->dim[i] = d->dim_value;
		}
	}
	if (!dims_ok(v->ndim, v->dim)) {
		rc = bad(o, "graph input '%s' has an absurd shape", pname(o, vi->name));
		goto out;
	}
	v->known = 1;
out:
	onnx__value_info_proto__free_unpacked(vi, NULL);
	return rc;
}

static int read_output(ox *o, const uint8_t *p, size_t n)
{
	Onnx__ValueInfoProto *vi = onnx__value_info_proto__unpack(NULL, n, p);
	if (!vi)
		return bad(o, "a graph output is malformed");
	if (vi->name && *vi->name) {
		val *v = lookup(o, vi->name, 1);
		v->graph_out = 1;
		o->output = agrow(o, o->output, o->noutput, &o->capoutput, sizeof *o->output);
		o->output[o->noutput++] = v;
	}
	onnx__value_info_proto__free_unpacked(vi, NULL);
	return TK_OK;
}

static int read_graph(ox *o, const uint8_t *p, size_t n, const onnx_input *in, int nin)
{
	pb r = { p, p + n };
	pbf f;
	int got, rc = TK_OK;
	int *used = tk_arena_alloc(&o->a, sizeof *used * (size_t)(nin + 1));
	/* initializers first: an input of the same name is theirs */
	while ((got = pb_next(&r, &f)) > 0) {
		if (f.field == 5) {
			const char *why;
			val tmp;
			memset(&tmp, 0, sizeof tmp);
			if (f.wt != 2 || tensor_read(o, f.data, f.len, &tmp, 1, &why) ||
			    (!tmp.name && (why = "no name", 1)))
				return bad(o, "initializer %s%s%s: %s", tmp.name ? "'" : "", tmp.name ? pname(o, tmp.name) : "", tmp.name ? "'" : "",
				           f.wt != 2 ? "malformed" : why);
			if (tmp.dtype == DT_UNDEF)
				return bad(o, "initializer '%s' has no data type", pname(o, tmp.name));
			val *v = lookup(o, tmp.name, 1);
			if (v->weight)
				return bad(o, "initializer '%s' given twice", pname(o, tmp.name));
			const char *name = v->name;
			*v = tmp;
			v->name = name;
			v->producer = -1;
			v->weight = 1;
		} else if (f.field == 15)
			return bad(o, "sparse initializers are not supported");
	}
	if (got < 0)
		return bad(o, "the graph is malformed");
	r = (pb){ p, p + n };
	while (pb_next(&r, &f) > 0) {
		if (f.wt != 2 && (f.field == 11 || f.field == 12 || f.field == 1))
			return bad(o, "the graph is malformed");
		if (f.field == 11 && (rc = read_input(o, f.data, f.len, in, nin, used)))
			return rc;
	}
	for (int i = 0; i < nin; i++)
		if (!used[i])
			return bad(o, "--input %s: the graph has no input of that name", pname(o, in[i].name));
	if (o->symbolic)
		return bad(o, "%s", o->symbolic);
	r = (pb){ p, p + n };
	while (pb_next(&r, &f) > 0) {
		if (f.field == 1 && (rc = read_node(o, f.data, f.len)))
			return rc;
		if (f.field == 12 && (rc = read_output(o, f.data, f.len)))
			return rc;
	}
	if (o->nnode == 0)
		return bad(o, "the graph has no nodes");
	return TK_OK;
}

/* ---- helpers of the operators ----------------------------------------- */

static val *IN(const node *nd, int k)
{
	return k < nd->nin ? nd->in[k] : NULL;
}

static int need(ox *o, const node *nd, int k, val **v)
{
	*v = IN(nd, k);
	if (!*v)
		return fail(o, nd, "input %d is missing", k);
	if (!(*v)->known)
		return fail(o, nd, "the shape of input '%s' is unknown", pname(o, (*v)->name));
	return TK_OK;
}

/* Values of input k: its shape known and its values too. */
static int need_vals(ox *o, const node *nd, int k, val **v)
{
	int rc = need(o, nd, k, v);
	if (!rc && !(*v)->hv)
		return fail(o, nd, "needs the values of input '%s', which are not constant", pname(o, (*v)->name));
	return rc;
}

/* Set output k's type and shape; values are allocated when vals and the
 * tensor is small. The output of a node that has none (omitted) is fine. */
static int set_out(ox *o, const node *nd, int k, int dtype, int ndim, const int64_t *dim, val **out)
{
	val *v = k < nd->nout ? nd->out[k] : NULL;
	if (out)
		*out = v;
	if (!v)
		return TK_OK;
	if (!dims_ok(ndim, dim)) {
		if (ndim > MAXD)
			return fail(o, nd, "output '%s' would have more than %d dimensions", pname(o, v->name), MAXD);
		return fail(o, nd, "output '%s' would have an absurd shape", pname(o, v->name));
	}
	v->known = 1;
	v->dtype = dtype;
	v->ndim = ndim;
	if (ndim)
		memcpy(v->dim, dim, sizeof *dim * (size_t)ndim);
	return TK_OK;
}

/* Allocate the values of v when it is small enough to carry them. */
static int want_vals(ox *o, val *v)
{
	if (!v || nelem(v) > MAXV)
		return 0;
	alloc_vals(o, v);
	return 1;
}

static void copy_vals(val *dst, const val *src)
{
	int64_t n = nelem(dst);
	memcpy(dst->iv, src->iv, sizeof *dst->iv * (size_t)n);
	memcpy(dst->fv, src->fv, sizeof *dst->fv * (size_t)n);
}

static void unflat(int64_t flat, int nd, const int64_t *dim, int64_t *idx)
{
	for (int i = nd - 1; i >= 0; i--) {
		idx[i] = dim[i] ? flat % dim[i] : 0;
		flat = dim[i] ? flat / dim[i] : 0;
	}
}

static int64_t flat_of(int nd, const int64_t *dim, const int64_t *idx)
{
	int64_t f = 0;
	for (int i = 0; i < nd; i++)
		f = f * dim[i] + idx[i];
	return f;
}

/* The flat index into v (broadcast to out's ndim) at out's multi-index. */
static int64_t bcast_idx(const val *v, int ondim, const int64_t *oidx)
{
	int64_t f = 0;
	for (int i = 0; i < v->ndim; i++) {
		int64_t x = oidx[ondim - v->ndim + i];
		f = f * v->dim[i] + (v->dim[i] == 1 ? 0 : x);
	}
	return f;
}

/* Normalise axis a of a rank-r tensor into [0, r). */
static int axis_norm(ox *o, const node *nd, int64_t a, int r, int *out)
{
	*out = 0;
	if (a < -r || a >= r)
		return fail(o, nd, "axis %lld out of range for rank %d", (long long)a, r);
	*out = (int)(a < 0 ? a + r : a);
	return TK_OK;
}

/* Multidirectional (numpy) broadcast of the shapes of vs[0, n). */
static int broadcast(ox *o, const node *nd, val *const *vs, int n, int *ndim, int64_t *dim)
{
	int r = 0;
	for (int i = 0; i < n; i++)
		if (vs[i] && vs[i]->ndim > r)
			r = vs[i]->ndim;
	for (int j = 0; j < r; j++)
		dim[j] = 1;
	for (int i = 0; i < n; i++) {
		if (!vs[i])
			continue;
		for (int j = 0; j < vs[i]->ndim; j++) {
			int64_t d = vs[i]->dim[j], *od = &dim[r - vs[i]->ndim + j];
			if (d == *od || d == 1)
				continue;
			if (*od == 1)
				*od = d;
			else
				return fail(o, nd, "shapes do not broadcast (%lld against %lld)", (long long)d,
				            (long long)*od);
		}
	}
	*ndim = r;
	return TK_OK;
}

/* The int64 list of an attribute (before opset `since`) or of input k
 * (from it); *present 0 when neither is given. */
static int axes_arg(ox *o, const node *nd, const char *aname, int since, int k, int64_t *ax, int *n,
                    int *present)
{
	*present = 0;
	*n = 0;
	if (o->opset < since) {
		const attr *a = get_attr(nd, aname);
		if (!a)
			return TK_OK;
		if (a->nints > MAXV)
			return fail(o, nd, "too many %s", aname);
		memcpy(ax, a->ints, sizeof *ax * (size_t)a->nints);
		*n = a->nints;
		*present = 1;
		return TK_OK;
	}
	val *v = IN(nd, k);
	if (!v)
		return TK_OK;
	int rc = need_vals(o, nd, k, &v);
	if (rc)
		return rc;
	*n = (int)nelem(v);
	memcpy(ax, v->iv, sizeof *ax * (size_t)*n);
	*present = 1;
	return TK_OK;
}

/* ---- tasks ------------------------------------------------------------- */

typedef struct kv {
	const char *k;
	int64_t v;
} kv;

static int kv_cmp(const void *a, const void *b)
{
	return strcmp(((const kv *)a)->k, ((const kv *)b)->k);
}

int onnx_conv_task(const onnx_conv *cv, char *buf, size_t n)
{
	assert(cv && buf && n > 0);
	kv p[24];
	int np = 0;
	const char *op;
	int two = cv->nsp == 2, dw = 0;
#define P(name, value) (p[np].k = (name), p[np++].v = (value))
	if (cv->nsp != 1 && cv->nsp != 2)
		return tk_seterr(TK_EINVAL, "a convolution of %d spatial axes", cv->nsp);
	if (two && !cv->transpose && cv->groups == cv->c && cv->k == cv->c) {
		op = "depthwise_conv2d";
		dw = 1;
	} else if (two)
		op = cv->transpose ? "conv2d_transpose" : "conv2d";
	else
		op = cv->transpose ? "conv1d_transpose" : "conv1d";
	int64_t stride = cv->stride[two ? 0 : 1], dil = cv->dilation[two ? 0 : 1];
	int64_t pad = cv->pad_begin[two ? 0 : 1];
	P("n", cv->n);
	P("c", cv->c);
	if (!dw)
		P("k", cv->k);
	if (two) {
		P("h", cv->in[0]);
		P("w", cv->in[1]);
		P("r", cv->kernel[0]);
		P("s", cv->kernel[1]);
	} else {
		P("w", cv->in[1]);
		P("r", cv->kernel[1]);
	}
	P("stride", stride);
	P("pad", pad);
	if (cv->groups != 1 && !dw)
		P("groups", cv->groups);
	if (dil != 1)
		P("dilation", dil);
	if (two) {
		if (cv->stride[1] != stride)
			P("stride_w", cv->stride[1]);
		if (cv->dilation[1] != dil)
			P("dilation_w", cv->dilation[1]);
		if (cv->pad_begin[1] != pad)
			P("pad_l", cv->pad_begin[1]);
		if (cv->pad_end[0] != pad)
			P("pad_b", cv->pad_end[0]);
		if (cv->pad_end[1] != cv->pad_begin[1])
			P("pad_r", cv->pad_end[1]);
		if (cv->transpose && cv->out_pad[0])
			P("out_pad", cv->out_pad[0]);
		if (cv->transpose && cv->out_pad[1] != cv->out_pad[0])
			P("out_pad_w", cv->out_pad[1]);
	} else {
		if (cv->pad_end[1] != pad)
			P("pad_r", cv->pad_end[1]);
		if (cv->transpose && cv->out_pad[1])
			P("out_pad", cv->out_pad[1]);
	}
#undef P
	qsort(p, (size_t)np, sizeof *p, kv_cmp);
	size_t used = (size_t)snprintf(buf, n, "%s:", op);
	for (int i = 0; i < np && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%s=%lld", i ? "," : "", p[i].k,
		                         (long long)p[i].v);
	if (used >= n)
		return tk_seterr(TK_EINVAL, "task string too long");
	return TK_OK;
}

/* Count one more occurrence of the task key (canonical) for node ni, with
 * the comment note (NULL: the node's name) if it is a new task. Returns the
 * key as stored. */
static const char *count_task(ox *o, int ni, const char *key, const char *note)
{
	if ((size_t)o->ntask * 2 >= o->tcap) {
		size_t ncap = o->tcap ? 2 * o->tcap : 256;
		int *t = tk_arena_alloc(&o->a, sizeof *t * ncap);
		for (int i = 0; i < o->ntask; i++) {
			size_t h = tk_hash64(o->task[i].key, strlen(o->task[i].key), 0) & (ncap - 1);
			while (t[h])
				h = (h + 1) & (ncap - 1);
			t[h] = i + 1;
		}
		o->ttab = t;
		o->tcap = ncap;
	}
	size_t h = tk_hash64(key, strlen(key), 0) & (o->tcap - 1);
	for (; o->ttab[h]; h = (h + 1) & (o->tcap - 1))
		if (!strcmp(o->task[o->ttab[h] - 1].key, key)) {
			o->task[o->ttab[h] - 1].weight += 1;
			return o->task[o->ttab[h] - 1].key;
		}
	o->ttab[h] = o->ntask + 1;
	o->task = agrow(o, o->task, o->ntask, &o->captask, sizeof *o->task);
	o->task[o->ntask].key = tk_arena_strdup(&o->a, key);
	o->task[o->ntask].weight = 1;
	o->task[o->ntask].node = ni;
	o->task[o->ntask].note = note;
	return o->task[o->ntask++].key;
}

/* Record the task of node ni; its output (te's) must have oelem elements
 * and end in the dims olast[0, nlast). */
static int add_task(ox *o, int ni, const char *task, int64_t oelem, const int64_t *olast, int nlast)
{
	node *nd = &o->nodes[ni];
	te_prog *prog;
	if (te_task_parse(task, &prog)) {
		char why[300];
		snprintf(why, sizeof why, "%s", tk_errmsg());
		return fail(o, nd, "tunekit cannot express it as a task (%s: %s)", task, why);
	}
	const te_tensor *t = &prog->tensor[prog->output];
	int ok = t->size == oelem && t->ndim >= nlast;
	for (int i = 0; ok && i < nlast; i++)
		ok = t->shape[t->ndim - nlast + i] == olast[i];
	if (!ok) {
		te_prog_free(prog);
		return fail(o, nd, "the task %s does not compute the node's output shape", task);
	}
	o->nodes[ni].task = count_task(o, ni, prog->key, NULL);
	te_prog_free(prog);
	return TK_OK;
}

/* ---- operators ---------------------------------------------------------- */

typedef int (*op_fn)(ox *o, int ni, node *nd);

static int op_same(ox *o, int ni, node *nd)
{
	val *x, *y;
	int rc = need(o, nd, 0, &x);
	if (rc || (rc = set_out(o, nd, 0, x->dtype, x->ndim, x->dim, &y)))
		return rc;
	const char *op = nd->op;
	int copy = !strcmp(op, "Identity") || !strcmp(op, "Dropout");
	if (x->hv && y && want_vals(o, y)) {
		int64_t n = nelem(y);
		for (int64_t i = 0; i < n; i++) {
			double f = x->fv[i];
			int64_t v = x->iv[i];
			if (copy) { y->iv[i] = v; y->fv[i] = f; }
			else if (!strcmp(op, "Neg")) { if (is_float(x->dtype)) set_f(y, i, -f); else set_i(y, i, wrap_sub(0, v)); }
			else if (!strcmp(op, "Abs")) { if (is_float(x->dtype)) set_f(y, i, fabs(f)); else set_i(y, i, v < 0 ? wrap_sub(0, v) : v); }
			else if (!strcmp(op, "Floor")) set_f(y, i, floor(f));
			else if (!strcmp(op, "Ceil")) set_f(y, i, ceil(f));
			else if (!strcmp(op, "Relu")) { if (is_float(x->dtype)) set_f(y, i, f > 0 ? f : 0); else set_i(y, i, v > 0 ? v : 0); }
			else if (!strcmp(op, "Sqrt")) set_f(y, i, sqrt(f));
			else if (!strcmp(op, "Not")) set_i(y, i, !v);
			else if (!strcmp(op, "Sign")) set_i(y, i, f > 0 ? 1 : f < 0 ? -1 : 0);
			else { y->hv = 0; break; }
		}
	}
	/* Dropout's mask, BatchNormalization's running statistics */
	for (int k = 1; k < nd->nout; k++) {
		if (!nd->out[k])
			continue;
		if (!strcmp(op, "Dropout")) {
			if ((rc = set_out(o, nd, k, DT_BOOL, x->ndim, x->dim, NULL)))
				return rc;
		} else if (!strcmp(op, "BatchNormalization") && x->ndim >= 2) {
			if ((rc = set_out(o, nd, k, x->dtype, 1, &x->dim[1], NULL)))
				return rc;
		} else
			return fail(o, nd, "output %d is not supported", k);
	}
	return TK_OK;
}

static int op_bool_same(ox *o, int ni, node *nd)
{
	val *x;
	int rc = need(o, nd, 0, &x);
	return rc ? rc : set_out(o, nd, 0, DT_BOOL, x->ndim, x->dim, NULL);
}

static int op_cast(ox *o, int ni, node *nd)
{
	val *x, *y;
	int to;
	int rc = need(o, nd, 0, &x);
	if (rc)
		return rc;
	if (!strcmp(nd->op, "CastLike")) {
		val *l;
		if ((rc = need(o, nd, 1, &l)))
			return rc;
		to = l->dtype;
	} else {
		/* an int, or before opset 6 the type's name */
		static const char *const names[] = { "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16",
			"INT16", "INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64" };
		const attr *a = get_attr(nd, "to");
		to = a ? (int)a->i : DT_UNDEF;
		for (int i = 0; a && a->s && i < (int)ArraySize(names); i++)
			if (!strcmp(a->s, names[i]))
				to = i;
	}
	if ((rc = set_out(o, nd, 0, to, x->ndim, x->dim, &y)))
		return rc;
	if (x->hv && want_vals(o, y)) {
		int64_t n = nelem(y);
		for (int64_t i = 0; i < n; i++) {
			if (to == DT_BOOL)
				set_i(y, i, x->fv[i] != 0);
			else if (is_float(to))
				set_f(y, i, is_float(x->dtype) ? x->fv[i] : (double)x->iv[i]);
			else if (is_float(x->dtype))
				set_f(y, i, trunc(x->fv[i]));
			else
				set_i(y, i, x->iv[i]);
		}
	}
	return TK_OK;
}

/* Broadcasting element-wise operators of any number of inputs. */
static int op_elementwise(ox *o, int ni, node *nd)
{
	val *xs[16], *y;
	int ndim, rc, n = nd->nin;
	int64_t dim[MAXD];
	const char *op = nd->op;
	if (n < 1 || n > 16)
		return fail(o, nd, "%d inputs", n);
	for (int i = 0; i < n; i++)
		if ((rc = need(o, nd, i, &xs[i])))
			return rc;
	if ((rc = broadcast(o, nd, xs, n, &ndim, dim)))
		return rc;
	int cmp = !strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "Greater") ||
	          !strcmp(op, "LessOrEqual") || !strcmp(op, "GreaterOrEqual") ||
	          !strcmp(op, "And") || !strcmp(op, "Or") || !strcmp(op, "Xor");
	int dt = cmp ? DT_BOOL : xs[0]->dtype;
	if (!strcmp(op, "Where"))
		dt = xs[1]->dtype;
	if ((rc = set_out(o, nd, 0, dt, ndim, dim, &y)))
		return rc;
	int all = 1;
	for (int i = 0; i < n; i++)
		all &= xs[i]->hv;
	if (!all || !y || !want_vals(o, y))
		return TK_OK;
	int fl = is_float(xs[0]->dtype) || (!strcmp(op, "Where") && is_float(xs[1]->dtype));
	int64_t ne = nelem(y), idx[MAXD];
	for (int64_t e = 0; e < ne; e++) {
		unflat(e, ndim, dim, idx);
		double a = xs[0]->fv[bcast_idx(xs[0], ndim, idx)];
		int64_t ia = xs[0]->iv[bcast_idx(xs[0], ndim, idx)];
		if (!strcmp(op, "Where")) {
			const val *pick = ia ? xs[1] : xs[2];
			int64_t j = bcast_idx(pick, ndim, idx);
			y->iv[e] = pick->iv[j];
			y->fv[e] = pick->fv[j];
			continue;
		}
		for (int k = 1; k < n || (n == 1 && k == 1); k++) {
			double b = n > 1 ? xs[k]->fv[bcast_idx(xs[k], ndim, idx)] : a;
			int64_t ib = n > 1 ? xs[k]->iv[bcast_idx(xs[k], ndim, idx)] : ia;
			if (n == 1)
				break;
			if (!strcmp(op, "Add") || !strcmp(op, "Sum")) { a += b; ia = wrap_add(ia, ib); }
			else if (!strcmp(op, "Sub")) { a -= b; ia = wrap_sub(ia, ib); }
			else if (!strcmp(op, "Mul")) { a *= b; ia = wrap_mul(ia, ib); }
			else if (!strcmp(op, "Div")) {
				a /= b;
				if (!fl && ib == 0)
					return fail(o, nd, "integer division by zero");
				if (!fl)
					ia = ib == -1 ? wrap_sub(0, ia) : ia / ib;
			} else if (!strcmp(op, "Mod")) {
				if (fl)
					a = fmod(a, b);
				else {
					if (ib == 0)
						return fail(o, nd, "integer division by zero");
					int64_t m = ib == -1 ? 0 : ia % ib;
					if (!attr_i(nd, "fmod", 0) && m && ((m < 0) != (ib < 0)))
						m += ib;
					ia = m;
				}
			} else if (!strcmp(op, "Min")) { a = a < b ? a : b; ia = ia < ib ? ia : ib; }
			else if (!strcmp(op, "Max")) { a = a > b ? a : b; ia = ia > ib ? ia : ib; }
			else if (!strcmp(op, "Pow")) { a = pow(a, b); ia = f2i(a); }
			else if (!strcmp(op, "Equal")) { ia = fl ? a == b : ia == ib; a = (double)ia; }
			else if (!strcmp(op, "Less")) { ia = fl ? a < b : ia < ib; a = (double)ia; }
			else if (!strcmp(op, "Greater")) { ia = fl ? a > b : ia > ib; a = (double)ia; }
			else if (!strcmp(op, "LessOrEqual")) { ia = fl ? a <= b : ia <= ib; a = (double)ia; }
			else if (!strcmp(op, "GreaterOrEqual")) { ia = fl ? a >= b : ia >= ib; a = (double)ia; }
			else if (!strcmp(op, "And")) { ia = ia && ib; a = (double)ia; }
			else if (!strcmp(op, "Or")) { ia = ia || ib; a = (double)ia; }
			else if (!strcmp(op, "Xor")) { ia = !ia != !ib; a = (double)ia; }
			else { y->hv = 0; return TK_OK; }
		}
		if (fl && !cmp)
			set_f(y, e, a);
		else
			set_i(y, e, ia);
	}
	return TK_OK;
}

/* Sizes of a convolution or pooling window along spatial axis i. */
typedef struct window {
	int nsp;
	int64_t kernel[MAXD], stride[MAXD], dil[MAXD], pb[MAXD], pe[MAXD];
} window;

static int window_attrs(ox *o, const node *nd, int nsp, const int64_t *kdefault, window *w)
{
	const attr *a;
	w->nsp = nsp;
	for (int i = 0; i < nsp; i++) {
		w->kernel[i] = kdefault ? kdefault[i] : 0;
		w->stride[i] = w->dil[i] = 1;
		w->pb[i] = w->pe[i] = 0;
	}
	if ((a = get_attr(nd, "kernel_shape"))) {
		if (a->nints != nsp)
			return fail(o, nd, "kernel_shape has %d values for %d spatial axes", a->nints, nsp);
		for (int i = 0; i < nsp; i++) {
			if (kdefault && a->ints[i] != kdefault[i])
				return fail(o, nd, "kernel_shape does not match the weight's shape");
			w->kernel[i] = a->ints[i];
		}
	} else if (!kdefault)
		return fail(o, nd, "no kernel_shape");
	if ((a = get_attr(nd, "strides"))) {
		if (a->nints != nsp)
			return fail(o, nd, "strides has %d values for %d spatial axes", a->nints, nsp);
		memcpy(w->stride, a->ints, sizeof *a->ints * (size_t)nsp);
	}
	if ((a = get_attr(nd, "dilations"))) {
		if (a->nints != nsp)
			return fail(o, nd, "dilations has %d values for %d spatial axes", a->nints, nsp);
		memcpy(w->dil, a->ints, sizeof *a->ints * (size_t)nsp);
	}
	if ((a = get_attr(nd, "pads"))) {
		if (a->nints != 2 * nsp)
			return fail(o, nd, "pads has %d values for %d spatial axes", a->nints, nsp);
		memcpy(w->pb, a->ints, sizeof *a->ints * (size_t)nsp);
		memcpy(w->pe, a->ints + nsp, sizeof *a->ints * (size_t)nsp);
	}
	for (int i = 0; i < nsp; i++)
		if (w->kernel[i] < 1 || w->kernel[i] > DIM_MAX || w->stride[i] < 1 || w->stride[i] > DIM_MAX ||
		    w->dil[i] < 1 || w->dil[i] > DIM_MAX || w->pb[i] < 0 || w->pe[i] < 0 ||
		    w->pb[i] > DIM_MAX || w->pe[i] > DIM_MAX)
			return fail(o, nd, "kernel, strides, dilations or pads out of range");
	return TK_OK;
}

/* Output sizes of a convolution or pooling over in[0, nsp), with auto_pad
 * (which sets w->pb, w->pe) and ceil_mode. */
static int window_out(ox *o, const node *nd, window *w, const int64_t *in, int ceil_mode, int64_t *out)
{
	const char *ap = attr_s(nd, "auto_pad", "NOTSET");
	for (int i = 0; i < w->nsp; i++) {
		int64_t ke = (w->kernel[i] - 1) * w->dil[i] + 1, s = w->stride[i];
		if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
			int64_t o1 = (in[i] + s - 1) / s, total = (o1 - 1) * s + ke - in[i];
			if (total < 0)
				total = 0;
			w->pb[i] = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
			w->pe[i] = total - w->pb[i];
		} else if (!strcmp(ap, "VALID"))
			w->pb[i] = w->pe[i] = 0;
		else if (strcmp(ap, "NOTSET"))
			return fail(o, nd, "unknown auto_pad '%s'", pname(o, ap));
		int64_t span = in[i] + w->pb[i] + w->pe[i] - ke;
		if (span < 0)
			return fail(o, nd, "the window (%lld) is larger than the padded input (%lld)",
			            (long long)ke, (long long)(in[i] + w->pb[i] + w->pe[i]));
		out[i] = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
		if (ceil_mode && (out[i] - 1) * s >= in[i] + w->pb[i])
			out[i]--;
	}
	return TK_OK;
}

static int op_conv(ox *o, int ni, node *nd)
{
	val *x, *wt;
	window w;
	int rc;
	int64_t odim[MAXD];
	if ((rc = need(o, nd, 0, &x)) || (rc = need(o, nd, 1, &wt)))
		return rc;
	int nsp = x->ndim - 2;
	if (nsp < 1 || wt->ndim != x->ndim)
		return fail(o, nd, "input of rank %d, weight of rank %d", x->ndim, wt->ndim);
	int64_t g = attr_i(nd, "group", 1), c = x->dim[1], m = wt->dim[0];
	if (g < 1 || c % g || wt->dim[1] * g != c || m % g)
		return fail(o, nd, "group %lld does not fit %lld input and %lld output channels",
		            (long long)g, (long long)c, (long long)m);
	if ((rc = window_attrs(o, nd, nsp, wt->dim + 2, &w)) || (rc = window_out(o, nd, &w, x->dim + 2, 0, odim + 2)))
		return rc;
	odim[0] = x->dim[0];
	odim[1] = m;
	if ((rc = set_out(o, nd, 0, x->dtype, x->ndim, odim, NULL)))
		return rc;
	if (nsp > 2)
		return fail(o, nd, "a %d-d convolution: tunekit has no such operator", nsp);
	onnx_conv cv = { .nsp = nsp, .n = x->dim[0], .c = c, .k = m, .groups = g };
	for (int i = 0; i < 2; i++) {
		int j = nsp == 2 ? i : 0;
		cv.in[i] = x->dim[2 + j];
		cv.kernel[i] = w.kernel[j];
		cv.stride[i] = w.stride[j];
		cv.dilation[i] = w.dil[j];
		cv.pad_begin[i] = w.pb[j];
		cv.pad_end[i] = w.pe[j];
	}
	char task[400];
	if ((rc = onnx_conv_task(&cv, task, sizeof task)))
		return fail(o, nd, "%s", tk_errmsg());
	int64_t ne = 1;
	for (int i = 0; i < x->ndim; i++)
		ne *= odim[i];
	return add_task(o, ni, task, ne, odim + 1, x->ndim - 1);
}

static int op_conv_transpose(ox *o, int ni, node *nd)
{
	val *x, *wt;
	window w;
	int rc;
	int64_t odim[MAXD], opad[MAXD] = { 0 };
	const attr *a;
	if ((rc = need(o, nd, 0, &x)) || (rc = need(o, nd, 1, &wt)))
		return rc;
	int nsp = x->ndim - 2;
	if (nsp < 1 || wt->ndim != x->ndim)
		return fail(o, nd, "input of rank %d, weight of rank %d", x->ndim, wt->ndim);
	int64_t g = attr_i(nd, "group", 1), c = x->dim[1];
	if (g < 1 || wt->dim[0] != c || c % g)
		return fail(o, nd, "group %lld does not fit the weight's shape", (long long)g);
	int64_t m = wt->dim[1] * g;
	if ((rc = window_attrs(o, nd, nsp, wt->dim + 2, &w)))
		return rc;
	if ((a = get_attr(nd, "output_padding"))) {
		if (a->nints != nsp)
			return fail(o, nd, "output_padding has %d values for %d spatial axes", a->nints, nsp);
		for (int i = 0; i < nsp; i++)
			if ((opad[i] = a->ints[i]) < 0 || opad[i] > DIM_MAX)
				return fail(o, nd, "output_padding out of range");
	}
	const char *ap = attr_s(nd, "auto_pad", "NOTSET");
	const attr *os = get_attr(nd, "output_shape");
	if (os && os->nints != nsp && os->nints != nsp + 2)
		return fail(o, nd, "output_shape has %d values for %d spatial axes", os->nints, nsp);
	int same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
	if (!same && strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
		return fail(o, nd, "unknown auto_pad '%s'", pname(o, ap));
	for (int i = 0; i < nsp; i++) {
		int64_t in = x->dim[2 + i], s = w.stride[i], ke = (w.kernel[i] - 1) * w.dil[i] + 1;
		int64_t natural = s * (in - 1) + opad[i] + ke;
		if (!strcmp(ap, "VALID"))
			w.pb[i] = w.pe[i] = 0;
		if (os || same) {
			int64_t target = os ? os->ints[os->nints - nsp + i] : in * s;
			int64_t total = natural - target;
			if (target < 1 || target > DIM_MAX)
				return fail(o, nd, "output_shape out of range");
			if (total < 0) {
				w.pb[i] = w.pe[i] = 0;
				opad[i] += -total;
			} else if (!strcmp(ap, "SAME_UPPER")) {
				w.pb[i] = total / 2;
				w.pe[i] = total - total / 2;
			} else {
				w.pb[i] = total - total / 2;
				w.pe[i] = total / 2;
			}
		}
		odim[2 + i] = s * (in - 1) + opad[i] + ke - w.pb[i] - w.pe[i];
		if (odim[2 + i] < 1)
			return fail(o, nd, "the output would be empty");
	}
	odim[0] = x->dim[0];
	odim[1] = m;
	if ((rc = set_out(o, nd, 0, x->dtype, x->ndim, odim, NULL)))
		return rc;
	if (nsp > 2)
		return fail(o, nd, "a %d-d transposed convolution: tunekit has no such operator", nsp);
	onnx_conv cv = { .nsp = nsp, .transpose = 1, .n = x->dim[0], .c = c, .k = m, .groups = g };
	for (int i = 0; i < 2; i++) {
		int j = nsp == 2 ? i : 0;
		cv.in[i] = x->dim[2 + j];
		cv.kernel[i] = w.kernel[j];
		cv.stride[i] = w.stride[j];
		cv.dilation[i] = w.dil[j];
		cv.pad_begin[i] = w.pb[j];
		cv.pad_end[i] = w.pe[j];
		cv.out_pad[i] = opad[j];
	}
	char task[400];
	if ((rc = onnx_conv_task(&cv, task, sizeof task)))
		return fail(o, nd, "%s", tk_errmsg());
	int64_t ne = 1;
	for (int i = 0; i < x->ndim; i++)
		ne *= odim[i];
	return add_task(o, ni, task, ne, odim + 1, x->ndim - 1);
}

/* Is the only consumer of v a Relu (directly, or through an Add of a
 * bias of n values: an initializer, a Constant, or a graph input as in a
 * model exported without its weights)? Then a dense task is dense_relu. */
static int relu_follows(ox *o, const val *v, int64_t n)
{
	for (int hop = 0; hop < 2; hop++) {
		if (!v || v->graph_out || v->nuse != 1)
			return 0;
		const node *c = &o->nodes[v->use[0]];
		if (!strcmp(c->op, "Relu"))
			return 1;
		if (hop || strcmp(c->op, "Add") || c->nin != 2 || c->nout < 1)
			return 0;
		const val *b = c->in[0] == v ? c->in[1] : c->in[0];
		if (!b || !(b->weight || b->input) || !b->known || nelem(b) != n || b->dim[b->ndim - 1] != n)
			return 0;
		v = c->out[0];
	}
	return 0;
}

static int dense_task(ox *o, int ni, int64_t m, int64_t n, int64_t k, const val *y)
{
	char task[200];
	snprintf(task, sizeof task, "%s:k=%lld,m=%lld,n=%lld", relu_follows(o, y, n) ? "dense_relu" : "dense",
	         (long long)k, (long long)m, (long long)n);
	return add_task(o, ni, task, m * n, &n, 1);
}

static int op_gemm(ox *o, int ni, node *nd)
{
	val *A, *B, *C = IN(nd, 2), *y;
	int rc;
	if ((rc = need(o, nd, 0, &A)) || (rc = need(o, nd, 1, &B)))
		return rc;
	if (A->ndim != 2 || B->ndim != 2)
		return fail(o, nd, "operands of rank %d and %d, not 2", A->ndim, B->ndim);
	int ta = attr_i(nd, "transA", 0) != 0, tb = attr_i(nd, "transB", 0) != 0;
	int64_t m = A->dim[ta], k = A->dim[!ta], kb = B->dim[tb], n = B->dim[!tb];
	if (k != kb)
		return fail(o, nd, "inner dimensions %lld and %lld differ", (long long)k, (long long)kb);
	int64_t odim[2] = { m, n };
	if (C) {
		if (!C->known)
			return fail(o, nd, "the shape of input '%s' is unknown", pname(o, C->name));
		for (int i = 0; i < C->ndim; i++) {
			int64_t d = C->dim[C->ndim - 1 - i];
			if (C->ndim > 2 || (d != 1 && d != odim[1 - i]))
				return fail(o, nd, "the bias does not broadcast to %lldx%lld", (long long)m, (long long)n);
		}
	}
	if ((rc = set_out(o, nd, 0, A->dtype, 2, odim, &y)))
		return rc;
	return dense_task(o, ni, m, n, k, y);
}

static int op_matmul(ox *o, int ni, node *nd)
{
	val *A, *B, *y;
	int rc;
	if ((rc = need(o, nd, 0, &A)) || (rc = need(o, nd, 1, &B)))
		return rc;
	if (A->ndim < 1 || B->ndim < 1)
		return fail(o, nd, "a scalar operand");
	int64_t ad[MAXD], bd[MAXD], odim[MAXD];
	int an = A->ndim, bn = B->ndim, dropa = 0, dropb = 0;
	memcpy(ad, A->dim, sizeof ad);
	memcpy(bd, B->dim, sizeof bd);
	if (an == 1) { ad[1] = ad[0]; ad[0] = 1; an = 2; dropa = 1; }
	if (bn == 1) { bd[1] = 1; bn = 2; dropb = 1; }
	int64_t m = ad[an - 2], k = ad[an - 1], kb = bd[bn - 2], n = bd[bn - 1];
	if (k != kb)
		return fail(o, nd, "inner dimensions %lld and %lld differ", (long long)k, (long long)kb);
	/* batch dimensions broadcast */
	int r = (an > bn ? an : bn) - 2;
	int64_t bb = 1, b = 1;
	for (int i = 0; i < r; i++) {
		int ia = i - (r - (an - 2)), ib = i - (r - (bn - 2));
		int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1;
		if (da != db && da != 1 && db != 1)
			return fail(o, nd, "batch dimensions %lld and %lld do not broadcast", (long long)da,
			            (long long)db);
		odim[i] = da == 1 ? db : da;
		bb *= db;
		b *= odim[i];
	}
	int on = r;
	if (!dropa)
		odim[on++] = m;
	if (!dropb)
		odim[on++] = n;
	if ((rc = set_out(o, nd, 0, A->dtype, on, odim, &y)))
		return rc;
	if (bb == 1)
		return dense_task(o, ni, b * m, n, k, y);
	char task[200];
	snprintf(task, sizeof task, "batch_matmul:b=%lld,k=%lld,m=%lld,n=%lld", (long long)b, (long long)k,
	         (long long)m, (long long)n);
	return add_task(o, ni, task, b * m * n, &n, 1);
}

/* Einsum of one operand (a transpose or a reduction: shapes only) or two.
 * Of two, a label in both operands and the output is a batch axis, in one
 * operand and the output an M or N axis, in both operands only a
 * contracted (K) axis: with a contracted axis it is a matrix product,
 * batch_matmul (or dense without batch axes) of the products of each kind,
 * whatever the order of the axes; without one, an element-wise product, no
 * task. Ellipses, repeated labels and sums over one operand of two are
 * refused. */
static int op_einsum(ox *o, int ni, node *nd)
{
	const char *eq = attr_s(nd, "equation", NULL);
	char term[3][MAXD + 1];
	int nterm = 0, len[3] = { 0 }, has_out = 0, rc;
	val *x[2], *y;
	int64_t size[128], odim[MAXD];
	if (!eq)
		return fail(o, nd, "no equation");
	if (nd->nin < 1 || nd->nin > 2)
		return fail(o, nd, "%d operands: tunekit follows one or two", nd->nin);
	for (const char *p = eq; *p; p++) {
		if (*p == ' ')
			continue;
		if (*p == '.')
			return fail(o, nd, "an ellipsis in the equation");
		if (*p == ',' || (*p == '-' && p[1] == '>')) {
			if (nterm == 2 || has_out)
				return fail(o, nd, "a malformed equation");
			if (*p == '-') {
				p++;
				has_out = 1;
			}
			nterm++;
			continue;
		}
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) || len[nterm] == MAXD)
			return fail(o, nd, "a malformed equation");
		term[nterm][len[nterm]++] = *p;
	}
	if (nterm + 1 - has_out != nd->nin)
		return fail(o, nd, "the equation does not have %d operands", nd->nin);
	for (int i = 0; i < 128; i++)
		size[i] = -1;
	for (int t = 0; t < nd->nin; t++) {
		if ((rc = need(o, nd, t, &x[t])))
			return rc;
		if (x[t]->ndim != len[t])
			return fail(o, nd, "operand %d has rank %d, the equation %d labels", t, x[t]->ndim, len[t]);
		for (int i = 0; i < len[t]; i++) {
			int c = term[t][i];
			for (int j = 0; j < i; j++)
				if (term[t][j] == c)
					return fail(o, nd, "a label repeated in one operand");
			if (size[c] >= 0 && size[c] != x[t]->dim[i])
				return fail(o, nd, "label %c is %lld and %lld", c, (long long)size[c],
				            (long long)x[t]->dim[i]);
			size[c] = x[t]->dim[i];
		}
	}
	int out = nd->nin, lout = 0;
	if (has_out) {
		lout = len[nterm]; /* nterm == out: the output's labels are in place */
	} else {
		/* implicit output: the labels seen once, in alphabetical order */
		for (int c = 'A'; c <= 'z'; c++) {
			int seen = 0;
			for (int t = 0; t < nd->nin; t++)
				seen += memchr(term[t], c, (size_t)len[t]) != NULL;
			if (seen == 1 && lout < MAXD)
				term[out][lout++] = (char)c;
		}
	}
	for (int i = 0; i < lout; i++) {
		int c = term[out][i];
		if (size[c] < 0)
			return fail(o, nd, "output label %c is in no operand", c);
		for (int j = 0; j < i; j++)
			if (term[out][j] == c)
				return fail(o, nd, "a label repeated in the output");
		odim[i] = size[c];
	}
	if ((rc = set_out(o, nd, 0, x[0]->dtype, lout, odim, &y)))
		return rc;
	if (nd->nin == 1)
		return TK_OK;
	int64_t b = 1, m = 1, n = 1, k = 1;
	int nk = 0;
	for (int c = 'A'; c <= 'z'; c++) {
		if (size[c] < 0)
			continue;
		int ina = memchr(term[0], c, (size_t)len[0]) != NULL;
		int inb = memchr(term[1], c, (size_t)len[1]) != NULL;
		int ino = memchr(term[out], c, (size_t)lout) != NULL;
		if (ina && inb && ino)
			b *= size[c];
		else if (ina && inb) {
			k *= size[c];
			nk++;
		} else if (ino)
			*(ina ? &m : &n) *= size[c];
		else
			return fail(o, nd, "label %c is summed over one operand only", c);
	}
	if (!nk)
		return TK_OK; /* an element-wise or outer product */
	if (b == 1)
		return dense_task(o, ni, m, n, k, y);
	char task[200];
	snprintf(task, sizeof task, "batch_matmul:b=%lld,k=%lld,m=%lld,n=%lld", (long long)b, (long long)k,
	         (long long)m, (long long)n);
	return add_task(o, ni, task, b * m * n, NULL, 0);
}

static int op_pool(ox *o, int ni, node *nd)
{
	val *x;
	window w;
	int rc;
	int64_t odim[MAXD];
	if ((rc = need(o, nd, 0, &x)))
		return rc;
	int nsp = x->ndim - 2;
	if (nsp < 1)
		return fail(o, nd, "input of rank %d", x->ndim);
	if ((rc = window_attrs(o, nd, nsp, NULL, &w)) ||
	    (rc = window_out(o, nd, &w, x->dim + 2, attr_i(nd, "ceil_mode", 0) != 0, odim + 2)))
		return rc;
	odim[0] = x->dim[0];
	odim[1] = x->dim[1];
	if ((rc = set_out(o, nd, 0, x->dtype, x->ndim, odim, NULL)))
		return rc;
	if (nd->nout > 1)
		return set_out(o, nd, 1, DT_INT64, x->ndim, odim, NULL);
	return TK_OK;
}

static int op_global_pool(ox *o, int ni, node *nd)
{
	val *x;
	int64_t odim[MAXD];
	int rc = need(o, nd, 0, &x);
	if (rc)
		return rc;
	if (x->ndim < 3)
		return fail(o, nd, "input of rank %d", x->ndim);
	for (int i = 0; i < x->ndim; i++)
		odim[i] = i < 2 ? x->dim[i] : 1;
	return set_out(o, nd, 0, x->dtype, x->ndim, odim, NULL);
}

static int op_layernorm(ox *o, int ni, node *nd)
{
	val *x;
	int ax, rc = need(o, nd, 0, &x);
	int64_t sdim[MAXD];
	if (rc || (rc = set_out(o, nd, 0, x->dtype, x->ndim, x->dim, NULL)))
		return rc;
	if ((rc = axis_norm(o, nd, attr_i(nd, "axis", -1), x->ndim, &ax)))
		return rc;
	for (int i = 0; i < x->ndim; i++)
		sdim[i] = i < ax ? x->dim[i] : 1;
	for (int k = 1; k < nd->nout && k < 3; k++)
		if ((rc = set_out(o, nd, k, DT_FLOAT, x->ndim, sdim, NULL)))
			return rc;
	return nd->nout > 3 ? fail(o, nd, "%d outputs", nd->nout) : TK_OK;
}

static int op_flatten(ox *o, int ni, node *nd)
{
	val *x, *y;
	int ax, rc = need(o, nd, 0, &x);
	if (rc)
		return rc;
	int64_t a = attr_i(nd, "axis", 1);
	if (a == x->ndim)
		ax = x->ndim;
	else if ((rc = axis_norm(o, nd, a, x->ndim, &ax)))
		return rc;
	int64_t d[2] = { 1, 1 };
	for (int i = 0; i < x->ndim; i++)
		d[i >= ax] *= x->dim[i];
	if ((rc = set_out(o, nd, 0, x->dtype, 2, d, &y)))
		return rc;
	if (x->hv && want_vals(o, y))
		copy_vals(y, x);
	return TK_OK;
}

static int op_reshape(ox *o, int ni, node *nd)
{
	val *x, *s, *y;
	int rc, infer = -1;
	int64_t d[MAXD], known = 1;
	if ((rc = need(o, nd, 0, &x)))
		return rc;
	int n;
	if (o->opset < 5) {
		const attr *a = get_attr(nd, "shape");
		if (!a)
			return fail(o, nd, "no shape");
		n = a->nints;
		if (n > MAXD)
			return fail(o, nd, "a shape of %d dimensions", n);
		memcpy(d, a->ints, sizeof *d * (size_t)n);
	} else {
		if ((rc = need_vals(o, nd, 1, &s)))
			return rc;
		if (s->ndim != 1 || s->dim[0] > MAXD)
			return fail(o, nd, "the shape input is not a short 1-d tensor");
		n = (int)s->dim[0];
		memcpy(d, s->iv, sizeof *d * (size_t)n);
	}
	int allowzero = attr_i(nd, "allowzero", 0) != 0;
	for (int i = 0; i < n; i++) {
		if (d[i] == 0 && !allowzero) {
			if (i >= x->ndim)
				return fail(o, nd, "shape value 0 at %d past the input's rank", i);
			d[i] = x->dim[i];
		}
		if (d[i] == -1) {
			if (infer >= 0)
				return fail(o, nd, "two dimensions are -1");
			infer = i;
			continue;
		}
		if (d[i] < 0 || d[i] > DIM_MAX)
			return fail(o, nd, "shape value %lld", (long long)d[i]);
		if (d[i] && known > ELEM_MAX / d[i])
			return fail(o, nd, "an absurd shape");
		known *= d[i];
	}
	int64_t total = nelem(x);
	if (infer >= 0) {
		if (known == 0 || total % known)
			return fail(o, nd, "cannot infer the -1 dimension (%lld elements into %lld)",
			            (long long)total, (long long)known);
		d[infer] = total / known;
	} else if (known != total)
		return fail(o, nd, "%lld elements cannot be reshaped to %lld", (long long)total, (long long)known);
	if ((rc = set_out(o, nd, 0, x->dtype, n, d, &y)))
		return rc;
	if (x->hv && want_vals(o, y))
		copy_vals(y, x);
	return TK_OK;
}

static int op_transpose(ox *o, int ni, node *nd)
{
	val *x, *y;
	int rc = need(o, nd, 0, &x), perm[MAXD], seen[MAXD] = { 0 };
	int64_t d[MAXD];
	if (rc)
		return rc;
	const attr *a = get_attr(nd, "perm");
	if (a && a->nints != x->ndim)
		return fail(o, nd, "perm of %d values for rank %d", a->nints, x->ndim);
	for (int i = 0; i < x->ndim; i++) {
		int64_t p = a ? a->ints[i] : x->ndim - 1 - i;
		if (p < 0 || p >= x->ndim || seen[p]++)
			return fail(o, nd, "perm is not a permutation");
		perm[i] = (int)p;
		d[i] = x->dim[p];
	}
	if ((rc = set_out(o, nd, 0, x->dtype, x->ndim, d, &y)))
		return rc;
	if (x->hv && want_vals(o, y)) {
		int64_t ne = nelem(y), oi[MAXD], ii[MAXD];
		for (int64_t e = 0; e < ne; e++) {
			unflat(e, x->ndim, d, oi);
			for (int i = 0; i < x->ndim; i++)
				ii[perm[i]] = oi[i];
			int64_t f = flat_of(x->ndim, x->dim, ii);
			y->iv[e] = x->iv[f];
			y->fv[e] = x->fv[f];
		}
	}
	return TK_OK;
}

static int op_concat(ox *o, int ni, node *nd)
{
	val *xs[256], *y;
	int rc, ax, n = nd->nin, all = 1;
	int64_t d[MAXD];
	if (n < 1 || n > 256)
		return fail(o, nd, "%d inputs", n);
	for (int i = 0; i < n; i++)
		if ((rc = need(o, nd, i, &xs[i])))
			return rc;
	if ((rc = axis_norm(o, nd, attr_i(nd, "axis", o->opset < 4 ? 1 : 0), xs[0]->ndim, &ax)))
		return rc;
	memcpy(d, xs[0]->dim, sizeof d);
	d[ax] = 0;
	for (int i = 0; i < n; i++) {
		if (xs[i]->ndim != xs[0]->ndim)
			return fail(o, nd, "inputs of ranks %d and %d", xs[0]->ndim, xs[i]->ndim);
		for (int j = 0; j < xs[0]->ndim; j++)
			if (j != ax && xs[i]->dim[j] != xs[0]->dim[j])
				return fail(o, nd, "inputs differ in dimension %d", j);
		d[ax] += xs[i]->dim[ax];
		if (d[ax] > DIM_MAX)
			return fail(o, nd, "an absurd shape");
		all &= xs[i]->hv;
	}
	if ((rc = set_out(o, nd, 0, xs[0]->dtype, xs[0]->ndim, d, &y)))
		return rc;
	if (all && want_vals(o, y)) {
		int64_t ne = nelem(y), idx[MAXD];
		for (int64_t e = 0; e < ne; e++) {
			unflat(e, y->ndim, d, idx);
			int i = 0;
			while (idx[ax] >= xs[i]->dim[ax])
				idx[ax] -= xs[i++]->dim[ax];
			int64_t f = flat_of(y->ndim, xs[i]->dim, idx);
			y->iv[e] = xs[i]->iv[f];
			y->fv[e] = xs[i]->fv[f];
		}
	}
	return TK_OK;
}

static int op_split(ox *o, int ni, node *nd)
{
	val *x;
	int rc, ax, ns, present;
	int64_t sp[MAXV];
	if ((rc = need(o, nd, 0, &x)) || (rc = axis_norm(o, nd, attr_i(nd, "axis", 0), x->ndim, &ax)))
		return rc;
	if ((rc = axes_arg(o, nd, "split", 13, 1, sp, &ns, &present)))
		return rc;
	int nout = nd->nout;
	if (nout < 1 || nout > MAXV)
		return fail(o, nd, "%d outputs", nout);
	if (!present) {
		int64_t d = x->dim[ax], each = (d + nout - 1) / nout;
		if (get_attr(nd, "num_outputs") == NULL && d % nout)
			return fail(o, nd, "%lld does not split into %d equal parts", (long long)d, nout);
		for (int i = 0; i < nout; i++) {
			sp[i] = d - i * each < each ? d - i * each : each;
			if (sp[i] < 0)
				sp[i] = 0;
		}
		ns = nout;
	}
	if (ns != nout)
		return fail(o, nd, "split has %d values for %d outputs", ns, nout);
	int64_t sum = 0, off = 0;
	for (int i = 0; i < ns; i++) {
		if (sp[i] < 0 || sp[i] > DIM_MAX)
			return fail(o, nd, "split value %lld", (long long)sp[i]);
		sum += sp[i];
	}
	if (sum != x->dim[ax])
		return fail(o, nd, "split sums to %lld, not %lld", (long long)sum, (long long)x->dim[ax]);
	for (int i = 0; i < nout; i++) {
		int64_t d[MAXD];
		val *y;
		memcpy(d, x->dim, sizeof d);
		d[ax] = sp[i];
		if ((rc = set_out(o, nd, i, x->dtype, x->ndim, d, &y)))
			return rc;
		if (x->hv && y && want_vals(o, y)) {
			int64_t ne = nelem(y), idx[MAXD];
			for (int64_t e = 0; e < ne; e++) {
				unflat(e, y->ndim, d, idx);
				idx[ax] += off;
				int64_t f = flat_of(x->ndim, x->dim, idx);
				y->iv[e] = x->iv[f];
				y->fv[e] = x->fv[f];
			}
		}
		off += sp[i];
	}
	return TK_OK;
}

static int op_slice(ox *o, int ni, node *nd)
{
	val *x, *y;
	int rc, nst = 0, nen = 0, nax = 0, nstep = 0, present;
	int64_t st[MAXV], en[MAXV], axv[MAXV], stepv[MAXV];
	if ((rc = need(o, nd, 0, &x)))
		return rc;
	if (o->opset < 10) {
		const attr *a;
		if (!(a = get_attr(nd, "starts")) || a->nints > MAXV)
			return fail(o, nd, "no starts");
		nst = a->nints;
		memcpy(st, a->ints, sizeof *st * (size_t)nst);
		if (!(a = get_attr(nd, "ends")) || a->nints > MAXV)
			return fail(o, nd, "no ends");
		nen = a->nints;
		memcpy(en, a->ints, sizeof *en * (size_t)nen);
		if ((a = get_attr(nd, "axes"))) {
			if (a->nints > MAXV)
				return fail(o, nd, "too many axes");
			nax = a->nints;
			memcpy(axv, a->ints, sizeof *axv * (size_t)nax);
		}
	} else {
		if ((rc = axes_arg(o, nd, "", 0, 1, st, &nst, &present)) || !present ||
		    (rc = axes_arg(o, nd, "", 0, 2, en, &nen, &present)) || !present)
			return rc ? rc : fail(o, nd, "no starts or ends");
		if ((rc = axes_arg(o, nd, "", 0, 3, axv, &nax, &present)) ||
		    (rc = axes_arg(o, nd, "", 0, 4, stepv, &nstep, &present)))
			return rc;
	}
	if (nen != nst || (nax && nax != nst) || (nstep && nstep != nst) || nst > x->ndim)
		return fail(o, nd, "starts, ends, axes and steps differ in length");
	int64_t d[MAXD], s0[MAXD], sstep[MAXD];
	memcpy(d, x->dim, sizeof d);
	for (int i = 0; i < x->ndim; i++) {
		s0[i] = 0;
		sstep[i] = 1;
	}
	for (int i = 0; i < nst; i++) {
		int ax;
		if ((rc = axis_norm(o, nd, nax ? axv[i] : i, x->ndim, &ax)))
			return rc;
		int64_t dim = x->dim[ax], step = nstep ? stepv[i] : 1, s = st[i], e = en[i];
		if (step == 0)
			return fail(o, nd, "a step of 0");
		if (s < 0)
			s = s < -dim ? 0 : s + dim;
		if (e < 0)
			e = e < -dim ? -1 : e + dim;
		if (step > 0) {
			s = s > dim ? dim : s;
			e = e > dim ? dim : e < 0 ? 0 : e;
			d[ax] = e > s ? (e - s - 1) / step + 1 : 0;
		} else {
			s = s > dim - 1 ? dim - 1 : s;
			e = e > dim - 1 ? dim - 1 : e;
			int64_t back = step < -DIM_MAX ? DIM_MAX + 1 : -step;
			d[ax] = s > e ? (s - e - 1) / back + 1 : 0;
		}
		s0[ax] = s;
		sstep[ax] = step;
	}
	if ((rc = set_out(o, nd, 0, x->dtype, x->ndim, d, &y)))
		return rc;
	if (x->hv && y && want_vals(o, y)) {
		int64_t ne = nelem(y), idx[MAXD];
		for (int64_t e = 0; e < ne; e++) {
			unflat(e, y->ndim, d, idx);
			for (int i = 0; i < y->ndim; i++)
				idx[i] = s0[i] + idx[i] * sstep[i];
			int64_t f = flat_of(x->ndim, x->dim, idx);
			y->iv[e] = x->iv[f];
			y->fv[e] = x->fv[f];
		}
	}
	return TK_OK;
}

static int op_squeeze(ox *o, int ni, node *nd)
{
	val *x, *y;
	int rc, nax, present, drop[MAXD] = { 0 }, n = 0;
	int64_t axv[MAXV], d[MAXD];
	if ((rc = need(o, nd, 0, &x)) || (rc = axes_arg(o, nd, "axes", 13, 1, axv, &nax, &present)))
		return rc;
	for (int i = 0; i < nax; i++) {
		int ax;
		if ((rc = axis_norm(o, nd, axv[i], x->ndim, &ax)))
			return rc;
		if (x->dim[ax] != 1)
			return fail(o, nd, "dimension %d is %lld, not 1", ax, (long long)x->dim[ax]);
		drop[ax] = 1;
	}
	for (int i = 0; i < x->ndim; i++)
		if (!(nax ? drop[i] : x->dim[i] == 1))
			d[n++] = x->dim[i];
	if ((rc = set_out(o, nd, 0, x->dtype, n, d, &y)))
		return rc;
	if (x->hv && want_vals(o, y))
		copy_vals(y, x);
	return TK_OK;
}

static int op_unsqueeze(ox *o, int ni, node *nd)
{
	val *x, *y;
	int rc, nax, present, ins[MAXD] = { 0 };
	int64_t axv[MAXV], d[MAXD];
	if ((rc = need(o, nd, 0, &x)) || (rc = axes_arg(o, nd, "axes", 13, 1, axv, &nax, &present)))
		return rc;
	int r = x->ndim + nax;
	if (!present || r > MAXD)
		return fail(o, nd, present ? "too many dimensions" : "no axes");
	for (int i = 0; i < nax; i++) {
		int ax;
		if ((rc = axis_norm(o, nd, axv[i], r, &ax)))
			return rc;
		if (ins[ax]++)
			return fail(o, nd, "axis %d given twice", ax);
	}
	for (int i = 0, j = 0; i < r; i++)
		d[i] = ins[i] ? 1 : x->dim[j++];
	if ((rc = set_out(o, nd, 0, x->dtype, r, d, &y)))
		return rc;
	if (x->hv && want_vals(o, y))
		copy_vals(y, x);
	return TK_OK;
}

static int op_gather(ox *o, int ni, node *nd)
{
	val *x, *id, *y;
	int rc, ax;
	int64_t d[MAXD];
	if ((rc = need(o, nd, 0, &x)) || (rc = need(o, nd, 1, &id)) ||
	    (rc = axis_norm(o, nd, attr_i(nd, "axis", 0), x->ndim, &ax)))
		return rc;
	int r = x->ndim - 1 + id->ndim;
	if (r > MAXD)
		return fail(o, nd, "too many dimensions");
	int n = 0;
	for (int i = 0; i < ax; i++)
		d[n++] = x->dim[i];
	for (int i = 0; i < id->ndim; i++)
		d[n++] = id->dim[i];
	for (int i = ax + 1; i < x->ndim; i++)
		d[n++] = x->dim[i];
	if ((rc = set_out(o, nd, 0, x->dtype, r, d, &y)))
		return rc;
	if (x->hv && id->hv && y && want_vals(o, y)) {
		int64_t ne = nelem(y), oi[MAXD], xi[MAXD];
		for (int64_t e = 0; e < ne; e++) {
			unflat(e, r, d, oi);
			int k = 0;
			for (int i = 0; i < ax; i++)
				xi[k++] = oi[i];
			int64_t j = flat_of(id->ndim, id->dim, oi + ax), at = id->iv[j];
			if (at < 0)
				at += x->dim[ax];
			if (at < 0 || at >= x->dim[ax])
				return fail(o, nd, "index %lld out of range", (long long)id->iv[j]);
			xi[k++] = at;
			for (int i = ax + 1; i < x->ndim; i++)
				xi[k++] = oi[i - 1 + id->ndim];
			int64_t f = flat_of(x->ndim, x->dim, xi);
			y->iv[e] = x->iv[f];
			y->fv[e] = x->fv[f];
		}
	}
	return TK_OK;
}

static int op_shape(ox *o, int ni, node *nd)
{
	val *x, *y;
	int rc = need(o, nd, 0, &x);
	if (rc)
		return rc;
	int64_t s = attr_i(nd, "start", 0), e = attr_i(nd, "end", x->ndim), r = x->ndim;
	if (s < 0) s += r;
	if (e < 0) e += r;
	s = s < 0 ? 0 : s > r ? r : s;
	e = e < 0 ? 0 : e > r ? r : e;
	int64_t n = e > s ? e - s : 0;
	if ((rc = set_out(o, nd, 0, DT_INT64, 1, &n, &y)))
		return rc;
	if (y && want_vals(o, y))
		for (int64_t i = 0; i < n; i++)
			set_i(y, i, x->dim[s + i]);
	return TK_OK;
}

static int op_size(ox *o, int ni, node *nd)
{
	val *x, *y;
	int rc = need(o, nd, 0, &x);
	if (rc || (rc = set_out(o, nd, 0, DT_INT64, 0, NULL, &y)))
		return rc;
	if (y && want_vals(o, y))
		set_i(y, 0, nelem(x));
	return TK_OK;
}

static int op_constant(ox *o, int ni, node *nd)
{
	val *y = nd->nout ? nd->out[0] : NULL;
	const attr *a;
	int rc;
	if (!y)
		return fail(o, nd, "no output");
	y->weight = 1;
	if ((a = get_attr(nd, "value")) && a->t) {
		if ((rc = set_out(o, nd, 0, a->t->dtype, a->t->ndim, a->t->dim, NULL)))
			return rc;
		if (a->t->hv && want_vals(o, y))
			copy_vals(y, a->t);
		return TK_OK;
	}
	int64_t n;
	if ((a = get_attr(nd, "value_int")) || (a = get_attr(nd, "value_float"))) {
		int fl = !strcmp(a->name, "value_float");
		if ((rc = set_out(o, nd, 0, fl ? DT_FLOAT : DT_INT64, 0, NULL, NULL)))
			return rc;
		want_vals(o, y);
		if (fl)
			set_f(y, 0, a->f);
		else
			set_i(y, 0, a->i);
		return TK_OK;
	}
	if ((a = get_attr(nd, "value_ints")) || (a = get_attr(nd, "value_floats"))) {
		int fl = !strcmp(a->name, "value_floats");
		n = fl ? a->nfloats : a->nints;
		if ((rc = set_out(o, nd, 0, fl ? DT_FLOAT : DT_INT64, 1, &n, NULL)))
			return rc;
		if (want_vals(o, y))
			for (int64_t i = 0; i < n; i++) {
				if (fl)
					set_f(y, i, a->floats[i]);
				else
					set_i(y, i, a->ints[i]);
			}
		return TK_OK;
	}
	if ((a = get_attr(nd, "value_string")))
		return set_out(o, nd, 0, DT_STRING, 0, NULL, NULL);
	return fail(o, nd, "no value tunekit can read (value, value_int(s), value_float(s))");
}

/* A shape from the values of input k (1-d int64). */
static int shape_input(ox *o, const node *nd, int k, int *n, int64_t *d)
{
	val *s;
	int rc = need_vals(o, nd, k, &s);
	if (rc)
		return rc;
	if (s->ndim != 1 || s->dim[0] > MAXD)
		return fail(o, nd, "the shape input is not a short 1-d tensor");
	*n = (int)s->dim[0];
	memcpy(d, s->iv, sizeof *d * (size_t)*n);
	for (int i = 0; i < *n; i++)
		if (d[i] < 0 || d[i] > DIM_MAX)
			return fail(o, nd, "shape value %lld", (long long)d[i]);
	return TK_OK;
}

static int op_constant_of_shape(ox *o, int ni, node *nd)
{
	int n, rc, dt = DT_FLOAT;
	int64_t d[MAXD];
	val *y;
	double f = 0;
	int64_t iv = 0;
	const attr *a = get_attr(nd, "value");
	if ((rc = shape_input(o, nd, 0, &n, d)))
		return rc;
	if (a && a->t) {
		dt = a->t->dtype;
		if (a->t->hv && nelem(a->t) == 1) {
			f = a->t->fv[0];
			iv = a->t->iv[0];
		}
	}
	if ((rc = set_out(o, nd, 0, dt, n, d, &y)))
		return rc;
	if (y && want_vals(o, y))
		for (int64_t i = 0; i < nelem(y); i++) {
			y->fv[i] = f;
			y->iv[i] = iv;
		}
	return TK_OK;
}

static int op_expand(ox *o, int ni, node *nd)
{
	val *x, *y, tmp;
	int rc, n, ndim;
	int64_t d[MAXD];
	if ((rc = need(o, nd, 0, &x)) || (rc = shape_input(o, nd, 1, &n, d)))
		return rc;
	memset(&tmp, 0, sizeof tmp);
	tmp.ndim = n;
	memcpy(tmp.dim, d, sizeof d);
	val *vs[2] = { x, &tmp };
	if ((rc = broadcast(o, nd, vs, 2, &ndim, d)) || (rc = set_out(o, nd, 0, x->dtype, ndim, d, &y)))
		return rc;
	if (x->hv && y && want_vals(o, y)) {
		int64_t ne = nelem(y), idx[MAXD];
		for (int64_t e = 0; e < ne; e++) {
			unflat(e, ndim, d, idx);
			int64_t f = bcast_idx(x, ndim, idx);
			y->iv[e] = x->iv[f];
			y->fv[e] = x->fv[f];
		}
	}
	return TK_OK;
}

static int op_tile(ox *o, int ni, node *nd)
{
	val *x, *rp;
	int rc;
	int64_t d[MAXD];
	if ((rc = need(o, nd, 0, &x)) || (rc = need_vals(o, nd, 1, &rp)))
		return rc;
	if (nelem(rp) != x->ndim)
		return fail(o, nd, "repeats has %lld values for rank %d", (long long)nelem(rp), x->ndim);
	for (int i = 0; i < x->ndim; i++) {
		if (rp->iv[i] < 0 || rp->iv[i] > DIM_MAX)
			return fail(o, nd, "repeat %lld", (long long)rp->iv[i]);
		d[i] = x->dim[i] * rp->iv[i];
	}
	return set_out(o, nd, 0, x->dtype, x->ndim, d, NULL);
}

static int op_range(ox *o, int ni, node *nd)
{
	val *s, *l, *dl, *y;
	int rc;
	if ((rc = need_vals(o, nd, 0, &s)) || (rc = need_vals(o, nd, 1, &l)) || (rc = need_vals(o, nd, 2, &dl)))
		return rc;
	if (nelem(s) != 1 || nelem(l) != 1 || nelem(dl) != 1)
		return fail(o, nd, "start, limit and delta must be scalars");
	int fl = is_float(s->dtype);
	double n;
	if (fl) {
		if (dl->fv[0] == 0)
			return fail(o, nd, "a delta of 0");
		n = ceil((l->fv[0] - s->fv[0]) / dl->fv[0]);
	} else {
		if (dl->iv[0] == 0)
			return fail(o, nd, "a delta of 0");
		n = ceil(((double)l->iv[0] - (double)s->iv[0]) / (double)dl->iv[0]);
	}
	if (!(n >= 0))
		n = 0;
	if (n > (double)DIM_MAX)
		return fail(o, nd, "an absurd length");
	int64_t len = (int64_t)n;
	if ((rc = set_out(o, nd, 0, s->dtype, 1, &len, &y)))
		return rc;
	if (y && want_vals(o, y))
		for (int64_t i = 0; i < len; i++) {
			if (fl)
				set_f(y, i, s->fv[0] + (double)i * dl->fv[0]);
			else
				set_i(y, i, wrap_add(s->iv[0], wrap_mul(i, dl->iv[0])));
		}
	return TK_OK;
}

static int op_reduce(ox *o, int ni, node *nd)
{
	val *x;
	int rc, nax, present, red[MAXD] = { 0 }, n = 0;
	int64_t axv[MAXV], d[MAXD];
	int since = !strcmp(nd->op, "ReduceSum") ? 13 : 18;
	if ((rc = need(o, nd, 0, &x)) || (rc = axes_arg(o, nd, "axes", since, 1, axv, &nax, &present)))
		return rc;
	int keep = attr_i(nd, "keepdims", 1) != 0;
	if (!nax && attr_i(nd, "noop_with_empty_axes", 0))
		return set_out(o, nd, 0, x->dtype, x->ndim, x->dim, NULL);
	for (int i = 0; i < nax; i++) {
		int ax;
		if ((rc = axis_norm(o, nd, axv[i], x->ndim, &ax)))
			return rc;
		red[ax] = 1;
	}
	for (int i = 0; i < x->ndim; i++) {
		if (!nax || red[i]) {
			if (keep)
				d[n++] = 1;
		} else
			d[n++] = x->dim[i];
	}
	return set_out(o, nd, 0, x->dtype, n, d, NULL);
}

static int op_argmax(ox *o, int ni, node *nd)
{
	val *x;
	int rc, ax, n = 0;
	int64_t d[MAXD];
	if ((rc = need(o, nd, 0, &x)) || (rc = axis_norm(o, nd, attr_i(nd, "axis", 0), x->ndim, &ax)))
		return rc;
	int keep = attr_i(nd, "keepdims", 1) != 0;
	for (int i = 0; i < x->ndim; i++)
		if (i != ax)
			d[n++] = x->dim[i];
		else if (keep)
			d[n++] = 1;
	return set_out(o, nd, 0, DT_INT64, n, d, NULL);
}

static int op_topk(ox *o, int ni, node *nd)
{
	val *x, *k;
	int rc, ax;
	int64_t d[MAXD], kk;
	if ((rc = need(o, nd, 0, &x)) || (rc = axis_norm(o, nd, attr_i(nd, "axis", -1), x->ndim, &ax)))
		return rc;
	if (o->opset < 10)
		kk = attr_i(nd, "k", -1);
	else {
		if ((rc = need_vals(o, nd, 1, &k)))
			return rc;
		if (nelem(k) != 1)
			return fail(o, nd, "k is not one value");
		kk = k->iv[0];
	}
	if (kk < 0 || kk > x->dim[ax])
		return fail(o, nd, "k = %lld out of range", (long long)kk);
	memcpy(d, x->dim, sizeof d);
	d[ax] = kk;
	if ((rc = set_out(o, nd, 0, x->dtype, x->ndim, d, NULL)))
		return rc;
	return set_out(o, nd, 1, DT_INT64, x->ndim, d, NULL);
}

static int op_resize(ox *o, int ni, node *nd)
{
	val *x, *sc = NULL, *sz = NULL;
	int rc, nax = 0;
	int64_t d[MAXD], axv[MAXD];
	double scale[MAXD];
	if ((rc = need(o, nd, 0, &x)))
		return rc;
	const attr *a = get_attr(nd, "axes");
	if (a) {
		if (a->nints > x->ndim)
			return fail(o, nd, "too many axes");
		nax = a->nints;
		for (int i = 0; i < nax; i++) {
			int ax;
			if ((rc = axis_norm(o, nd, a->ints[i], x->ndim, &ax)))
				return rc;
			axv[i] = ax;
		}
	} else {
		nax = x->ndim;
		for (int i = 0; i < nax; i++)
			axv[i] = i;
	}
	if (!strcmp(attr_s(nd, "coordinate_transformation_mode", ""), "tf_crop_and_resize"))
		return fail(o, nd, "tf_crop_and_resize is not supported");
	memcpy(d, x->dim, sizeof d);
	if (!strcmp(nd->op, "Upsample") && o->opset < 9) {
		if (!(a = get_attr(nd, "scales")) || a->nfloats != x->ndim)
			return fail(o, nd, "scales must have a value per dimension");
		for (int i = 0; i < x->ndim; i++)
			d[i] = f2i(floor(x->dim[i] * a->floats[i]));
	} else {
		int ksc = !strcmp(nd->op, "Upsample") || o->opset < 11 ? 1 : 2;
		if (IN(nd, ksc) && ((rc = need(o, nd, ksc, &sc))))
			return rc;
		if (ksc == 2 && IN(nd, 3) && (rc = need(o, nd, 3, &sz)))
			return rc;
		if (sz && nelem(sz) == 0)
			sz = NULL;
		if (sc && nelem(sc) == 0)
			sc = NULL;
		if (sz) {
			if (!sz->hv || nelem(sz) != nax)
				return fail(o, nd, "sizes are not %d constant values", nax);
			const char *pol = attr_s(nd, "keep_aspect_ratio_policy", "stretch");
			if (!strcmp(pol, "stretch")) {
				for (int i = 0; i < nax; i++)
					d[axv[i]] = sz->iv[i];
			} else {
				double s = strcmp(pol, "not_larger") ? 0 : 1e300;
				for (int i = 0; i < nax; i++) {
					double r = (double)sz->iv[i] / (double)x->dim[axv[i]];
					s = !strcmp(pol, "not_larger") ? (r < s ? r : s) : (r > s ? r : s);
				}
				for (int i = 0; i < nax; i++)
					d[axv[i]] = f2i(floor(s * (double)x->dim[axv[i]] + 0.5));
			}
		} else if (sc) {
			if (!sc->hv || nelem(sc) != nax)
				return fail(o, nd, "scales are not %d constant values", nax);
			for (int i = 0; i < nax; i++)
				scale[i] = sc->fv[i];
			for (int i = 0; i < nax; i++) {
				double v = floor((double)x->dim[axv[i]] * scale[i]);
				if (!(v >= 0 && v <= (double)DIM_MAX))
					return fail(o, nd, "scale %g out of range", scale[i]);
				d[axv[i]] = (int64_t)v;
			}
		} else
			return fail(o, nd, "neither scales nor sizes");
	}
	return set_out(o, nd, 0, x->dtype, x->ndim, d, NULL);
}

static int op_pad(ox *o, int ni, node *nd)
{
	val *x;
	int rc, np, present, nax = 0;
	int64_t pads[MAXV], d[MAXD], axv[MAXV];
	if ((rc = need(o, nd, 0, &x)))
		return rc;
	if (o->opset < 11) {
		const attr *a = get_attr(nd, "pads");
		if (!a)
			a = get_attr(nd, "paddings");
		if (!a || a->nints > MAXV)
			return fail(o, nd, "no pads");
		np = a->nints;
		memcpy(pads, a->ints, sizeof *pads * (size_t)np);
	} else {
		if ((rc = axes_arg(o, nd, "", 0, 1, pads, &np, &present)))
			return rc;
		if (!present)
			return fail(o, nd, "no pads");
		if ((rc = axes_arg(o, nd, "", 0, 3, axv, &nax, &present)))
			return rc;
	}
	int na = nax ? nax : x->ndim;
	if (np != 2 * na)
		return fail(o, nd, "pads has %d values for %d axes", np, na);
	memcpy(d, x->dim, sizeof d);
	for (int i = 0; i < na; i++) {
		int ax = i;
		if (nax && (rc = axis_norm(o, nd, axv[i], x->ndim, &ax)))
			return rc;
		/* in range before the sum: a pad of 2^63 - 1 overflowed it */
		if (pads[i] < -DIM_MAX || pads[i] > DIM_MAX || pads[na + i] < -DIM_MAX ||
		    pads[na + i] > DIM_MAX)
			return fail(o, nd, "pads out of range");
		d[ax] += pads[i] + pads[na + i];
		if (d[ax] < 0)
			return fail(o, nd, "pads out of range");
	}
	return set_out(o, nd, 0, x->dtype, x->ndim, d, NULL);
}

static int op_space_depth(ox *o, int ni, node *nd)
{
	val *x;
	int rc = need(o, nd, 0, &x);
	int64_t b = attr_i(nd, "blocksize", 0), d[MAXD];
	if (rc)
		return rc;
	if (x->ndim != 4 || b < 1 || b > 4096)
		return fail(o, nd, "input of rank %d, blocksize %lld", x->ndim, (long long)b);
	d[0] = x->dim[0];
	if (!strcmp(nd->op, "DepthToSpace")) {
		if (x->dim[1] % (b * b))
			return fail(o, nd, "channels not a multiple of blocksize^2");
		d[1] = x->dim[1] / (b * b);
		d[2] = x->dim[2] * b;
		d[3] = x->dim[3] * b;
	} else {
		if (x->dim[2] % b || x->dim[3] % b)
			return fail(o, nd, "spatial size not a multiple of blocksize");
		d[1] = x->dim[1] * b * b;
		d[2] = x->dim[2] / b;
		d[3] = x->dim[3] / b;
	}
	return set_out(o, nd, 0, x->dtype, 4, d, NULL);
}

/* GatherElements: the shape of the indices; Scatter*: that of the data. */
static int op_like_input(ox *o, int ni, node *nd)
{
	val *x, *x0;
	int k = !strcmp(nd->op, "GatherElements") ? 1 : 0;
	int rc = need(o, nd, k, &x);
	if (rc || (rc = need(o, nd, 0, &x0)))
		return rc;
	return set_out(o, nd, 0, x0->dtype, x->ndim, x->dim, NULL);
}

static const struct opent {
	const char *name;
	op_fn fn;
} ops[] = {
	/* sorted by name (strcmp) */
	{ "Abs", op_same },
	{ "Acos", op_same },
	{ "Acosh", op_same },
	{ "Add", op_elementwise },
	{ "And", op_elementwise },
	{ "ArgMax", op_argmax },
	{ "ArgMin", op_argmax },
	{ "Asin", op_same },
	{ "Asinh", op_same },
	{ "Atan", op_same },
	{ "Atanh", op_same },
	{ "AveragePool", op_pool },
	{ "BatchNormalization", op_same },
	{ "BitShift", op_elementwise },
	{ "Cast", op_cast },
	{ "CastLike", op_cast },
	{ "Ceil", op_same },
	{ "Celu", op_same },
	{ "Clip", op_same },
	{ "Concat", op_concat },
	{ "Constant", op_constant },
	{ "ConstantOfShape", op_constant_of_shape },
	{ "Conv", op_conv },
	{ "ConvTranspose", op_conv_transpose },
	{ "Cos", op_same },
	{ "Cosh", op_same },
	{ "CumSum", op_same },
	{ "DepthToSpace", op_space_depth },
	{ "Div", op_elementwise },
	{ "Dropout", op_same },
	{ "Einsum", op_einsum },
	{ "Elu", op_same },
	{ "Equal", op_elementwise },
	{ "Erf", op_same },
	{ "Exp", op_same },
	{ "Expand", op_expand },
	{ "EyeLike", op_same },
	{ "Flatten", op_flatten },
	{ "Floor", op_same },
	{ "Gather", op_gather },
	{ "GatherElements", op_like_input },
	{ "Gelu", op_same },
	{ "Gemm", op_gemm },
	{ "GlobalAveragePool", op_global_pool },
	{ "GlobalLpPool", op_global_pool },
	{ "GlobalMaxPool", op_global_pool },
	{ "Greater", op_elementwise },
	{ "GreaterOrEqual", op_elementwise },
	{ "GroupNormalization", op_same },
	{ "HardSigmoid", op_same },
	{ "HardSwish", op_same },
	{ "Hardmax", op_same },
	{ "Identity", op_same },
	{ "InstanceNormalization", op_same },
	{ "IsInf", op_bool_same },
	{ "IsNaN", op_bool_same },
	{ "LRN", op_same },
	{ "LayerNormalization", op_layernorm },
	{ "LeakyRelu", op_same },
	{ "Less", op_elementwise },
	{ "LessOrEqual", op_elementwise },
	{ "Log", op_same },
	{ "LogSoftmax", op_same },
	{ "LpNormalization", op_same },
	{ "LpPool", op_pool },
	{ "MatMul", op_matmul },
	{ "Max", op_elementwise },
	{ "MaxPool", op_pool },
	{ "Mean", op_elementwise },
	{ "Min", op_elementwise },
	{ "Mish", op_same },
	{ "Mod", op_elementwise },
	{ "Mul", op_elementwise },
	{ "Neg", op_same },
	{ "Not", op_same },
	{ "Or", op_elementwise },
	{ "PRelu", op_elementwise },
	{ "Pad", op_pad },
	{ "Pow", op_elementwise },
	{ "Range", op_range },
	{ "Reciprocal", op_same },
	{ "ReduceL1", op_reduce },
	{ "ReduceL2", op_reduce },
	{ "ReduceLogSum", op_reduce },
	{ "ReduceLogSumExp", op_reduce },
	{ "ReduceMax", op_reduce },
	{ "ReduceMean", op_reduce },
	{ "ReduceMin", op_reduce },
	{ "ReduceProd", op_reduce },
	{ "ReduceSum", op_reduce },
	{ "ReduceSumSquare", op_reduce },
	{ "Relu", op_same },
	{ "Reshape", op_reshape },
	{ "Resize", op_resize },
	{ "Round", op_same },
	{ "Scatter", op_like_input },
	{ "ScatterElements", op_like_input },
	{ "ScatterND", op_like_input },
	{ "Selu", op_same },
	{ "Shape", op_shape },
	{ "Shrink", op_same },
	{ "Sigmoid", op_same },
	{ "Sign", op_same },
	{ "Sin", op_same },
	{ "Sinh", op_same },
	{ "Size", op_size },
	{ "Slice", op_slice },
	{ "Softmax", op_same },
	{ "Softplus", op_same },
	{ "Softsign", op_same },
	{ "SpaceToDepth", op_space_depth },
	{ "Split", op_split },
	{ "Sqrt", op_same },
	{ "Squeeze", op_squeeze },
	{ "Sub", op_elementwise },
	{ "Sum", op_elementwise },
	{ "Tan", op_same },
	{ "Tanh", op_same },
	{ "ThresholdedRelu", op_same },
	{ "Tile", op_tile },
	{ "TopK", op_topk },
	{ "Transpose", op_transpose },
	{ "Trilu", op_same },
	{ "Unsqueeze", op_unsqueeze },
	{ "Upsample", op_resize },
	{ "Where", op_elementwise },
	{ "Xor", op_elementwise },
};

static op_fn find_op(const char *name)
{
	int lo = 0, hi = (int)ArraySize(ops) - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2, c = strcmp(name, ops[mid].name);
		if (!c)
			return ops[mid].fn;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* ---- the whole model --------------------------------------------------- */

/* A min-heap of node indices: of the nodes ready, the first in the file. */
static void heap_push(int *h, int *n, int x)
{
	int i = (*n)++;
	while (i > 0 && h[(i - 1) / 2] > x) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = x;
}

static int heap_pop(int *h, int *n)
{
	int top = h[0], x = h[--*n], i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= x)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
	return top;
}

/* Every node in topological order (Kahn): a node runs once all its inputs
 * are known, the first of those ready in the file first, so that a sorted
 * graph (as the ONNX spec wants them) runs in its own order and the tasks
 * come in the order of their first node. */
static int infer(ox *o)
{
	int *heap = tk_arena_alloc(&o->a, sizeof *heap * (size_t)o->nnode);
	int nheap = 0, ndone = 0, rc;
	o->order = tk_arena_alloc(&o->a, sizeof *o->order * (size_t)o->nnode);
	/* consumers of each tensor */
	for (int i = 0; i < o->nnode; i++)
		for (int j = 0; j < o->nodes[i].nin; j++)
			if (o->nodes[i].in[j])
				o->nodes[i].in[j]->nuse++;
	for (int i = 0; i < o->nnode; i++) {
		node *nd = &o->nodes[i];
		for (int j = 0; j < nd->nin; j++) {
			val *v = nd->in[j];
			if (!v)
				continue;
			if (!v->use)
				v->use = tk_arena_alloc(&o->a, sizeof *v->use * (size_t)v->nuse);
			v->use[v->nfill++] = i;
			if (v->producer < 0 && !v->known) {
				if (v->input || v->weight)
					return fail(o, nd, "input '%s' has no known shape", pname(o, v->name));
				return fail(o, nd, "input '%s' is no graph input, initializer or node output",
				            pname(o, v->name));
			}
			if (v->producer >= 0)
				nd->missing++;
		}
		if (!nd->missing)
			heap_push(heap, &nheap, i);
	}
	while (nheap > 0) {
		int ni = heap_pop(heap, &nheap);
		o->order[o->norder++] = ni;
		ndone++;
		node *nd = &o->nodes[ni];
		if (*nd->domain && strcmp(nd->domain, "ai.onnx"))
			return fail(o, nd, "an operator of domain '%s': tunekit cannot follow it", pname(o, nd->domain));
		op_fn fn = find_op(nd->op);
		if (!fn)
			return fail(o, nd, "tunekit cannot follow this operator");
		if ((rc = fn(o, ni, nd)))
			return rc;
		for (int k = 0; k < nd->nout; k++) {
			val *v = nd->out[k];
			if (!v)
				continue;
			if (!v->known)
				return fail(o, nd, "output %d is not supported", k);
			for (int u = 0; u < v->nuse; u++)
				if (--o->nodes[v->use[u]].missing == 0)
					heap_push(heap, &nheap, v->use[u]);
		}
	}
	if (ndone < o->nnode) {
		for (int i = 0; i < o->nnode; i++)
			if (o->nodes[i].missing)
				return fail(o, &o->nodes[i], "the graph has a cycle through this node");
	}
	return TK_OK;
}

/* ---- the blocked layout ------------------------------------------------- */

/* Channels per block of c channels, as data/networks/\*-nchwc.tsv choose
 * them: 16 where 16 divides c, all of them when c < 16, else the largest
 * of 8, 4, 2, 1 that divides c. */
static int64_t chan_block(int64_t c)
{
	assert(c >= 1);
	if (c % 16 == 0)
		return 16;
	if (c < 16)
		return c;
	int64_t b = 8;
	while (c % b)
		b /= 2;
	return b;
}

/* An activation the blocked layout may hold: a 4-d tensor (N C H W) that
 * no weight is. */
static int act(const val *v)
{
	return v && v->known && v->ndim == 4 && !v->weight;
}

/* A reorder of activation v to block `to` (1: plain NCHW) for node ni:
 * counted as a layout_transform task unless v is in that block already, or
 * was reordered to it before, or H*W is 1 (every block is then the same
 * memory). `why` names the consumer in the task's comment. */
static int reorder(ox *o, int ni, val *v, int64_t to, const char *why)
{
	int64_t from = v->block ? v->block : 1;
	assert(to >= 1 && to <= 16);
	if (from == to || v->dim[2] * v->dim[3] == 1 || (v->reordered >> to & 1))
		return TK_OK;
	v->reordered |= 1u << to;
	char task[200];
	snprintf(task, sizeof task, "layout_transform:n=%lld,c=%lld,h=%lld,w=%lld,ib=%lld,ob=%lld",
	         (long long)v->dim[0], (long long)v->dim[1], (long long)v->dim[2],
	         (long long)v->dim[3], (long long)from, (long long)to);
	te_prog *prog;
	if (te_task_parse(task, &prog))
		return fail(o, &o->nodes[ni], "%s", tk_errmsg());
	char note[600];
	snprintf(note, sizeof note, "reorder %s from block %lld to %lld for %s", pname(o, v->name),
	         (long long)from, (long long)to, why);
	count_task(o, ni, prog->key, tk_arena_strdup(&o->a, note));
	te_prog_free(prog);
	return TK_OK;
}

static int op_in(const char *op, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(op, *list))
			return 1;
	return 0;
}

/* Operators that keep the layout of input 0 (the others are weights); so
 * does a Pad of the spatial axes alone. */
static const char *const keep_unary[] = {
	"Abs", "AveragePool", "BatchNormalization", "Ceil", "Celu", "Clip", "Dropout", "Elu", "Erf",
	"Exp", "Floor", "Gelu", "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "HardSigmoid",
	"HardSwish", "Identity", "LeakyRelu", "Log", "LpPool", "MaxPool", "Mish", "Neg", "Reciprocal",
	"Relu", "Round", "Selu", "Sigmoid", "Softplus", "Softsign", "Sqrt", "Tanh", NULL
};
/* Elementwise operators of several activations. */
static const char *const keep_nary[] = {
	"Add", "Div", "Max", "Mean", "Min", "Mul", "PRelu", "Pow", "Sub", "Sum", NULL
};
/* Operators that read a tensor's shape, not its data. */
static const char *const shape_only[] = { "Shape", "Size", NULL };

/* How operand v of an elementwise node with output y reads in y's blocked
 * layout: 2 the same shape (v must be in y's block), 1 a scalar, a weight
 * or one value per channel (any layout reads alike), 0 not at all. */
static int operand_kind(const val *v, const val *y)
{
	if (!v->known || nelem(v) == 1)
		return 1;
	if (v->ndim > 4)
		return 0;
	int same = v->ndim == 4, per_channel = 1;
	for (int i = 0; i < v->ndim; i++) {
		int a = 4 - v->ndim + i;
		int64_t d = v->dim[i];
		same &= d == y->dim[a];
		per_channel &= d == 1 || (a == 1 && d == y->dim[1]);
	}
	if (same)
		return v->weight ? 1 : 2;
	return per_channel;
}

/* The layout of node ni's output, and the reorders and the task of node ni
 * in the blocked variant, in the order of inference. */
static int layout_node(ox *o, int ni)
{
	node *nd = &o->nodes[ni];
	val *x = nd->nin ? nd->in[0] : NULL, *y = nd->nout ? nd->out[0] : NULL;
	const char *op = nd->op;
	char why[300], task[400];
	int rc;
	snprintf(why, sizeof why, "node %s (%s)", pname(o, nd->name), pname(o, op));
	if (!strcmp(op, "Conv") && nd->task && act(x) && act(y)) {
		int dw = !strncmp(nd->task, "depthwise_conv2d:", 17);
		if (dw || (!strncmp(nd->task, "conv2d:", 7) && !strstr(nd->task, "groups="))) {
			int64_t cb = chan_block(x->dim[1]), kb = dw ? cb : chan_block(y->dim[1]);
			if ((rc = reorder(o, ni, x, cb, why)))
				return rc;
			if (dw)
				snprintf(task, sizeof task, "depthwise_conv2d_nchwc:%s,cb=%lld",
				         strchr(nd->task, ':') + 1, (long long)cb);
			else
				snprintf(task, sizeof task, "conv2d_nchwc:%s,cb=%lld,kb=%lld",
				         strchr(nd->task, ':') + 1, (long long)cb, (long long)kb);
			y->block = kb;
			return add_task(o, ni, task, nelem(y), NULL, 0);
		}
	}
	int64_t b = 0;
	if (act(x) && act(y) && x->block > 1 &&
	    (op_in(op, keep_unary) || (!strcmp(op, "Pad") && x->dim[0] == y->dim[0] &&
	                               x->dim[1] == y->dim[1]))) {
		b = x->block;
	} else if (act(y) && op_in(op, keep_nary)) {
		for (int i = 0; i < nd->nin && !b; i++)
			if (nd->in[i] && act(nd->in[i]) && nd->in[i]->block > 1 &&
			    operand_kind(nd->in[i], y) == 2)
				b = nd->in[i]->block;
		for (int i = 0; i < nd->nin && b; i++)
			if (nd->in[i] && !operand_kind(nd->in[i], y))
				b = 0;
		for (int i = 0; i < nd->nin && b; i++)
			if (nd->in[i] && operand_kind(nd->in[i], y) == 2 &&
			    (rc = reorder(o, ni, nd->in[i], b, why)))
				return rc;
	} else if (act(y) && !strcmp(op, "Concat")) {
		int ax = (int)attr_i(nd, "axis", 1);
		for (int i = 0; i < nd->nin && !b && (ax == 1 || ax == -3); i++)
			if (act(nd->in[i]) && nd->in[i]->block > 1)
				b = nd->in[i]->block;
		for (int i = 0; i < nd->nin && b; i++)
			if (!act(nd->in[i]) || nd->in[i]->dim[1] % b)
				b = 0;
		for (int i = 0; i < nd->nin && b; i++)
			if ((rc = reorder(o, ni, nd->in[i], b, why)))
				return rc;
	}
	if (b) {
		y->block = b;
		return nd->task ? (count_task(o, ni, nd->task, NULL), TK_OK) : TK_OK;
	}
	if (!op_in(op, shape_only))
		for (int i = 0; i < nd->nin; i++)
			if (act(nd->in[i]) && (rc = reorder(o, ni, nd->in[i], 1, why)))
				return rc;
	if (nd->task)
		count_task(o, ni, nd->task, NULL);
	return TK_OK;
}

/* Replace the NCHW tasks by those of the blocked variant: every Conv that
 * conv2d_nchwc or depthwise_conv2d_nchwc expresses runs blocked, layouts
 * propagate through elementwise operators, pooling and channel Concats,
 * and a layout_transform task counts each reorder (to a convolution's
 * block, back to NCHW for any other consumer and for graph outputs). */
static int layout_pass(ox *o)
{
	int rc;
	o->ntask = 0;
	o->ttab = NULL;
	o->tcap = 0;
	for (int i = 0; i < o->norder; i++)
		if ((rc = layout_node(o, o->order[i])))
			return rc;
	for (int i = 0; i < o->noutput; i++) {
		val *v = o->output[i];
		char why[300];
		snprintf(why, sizeof why, "graph output %s", pname(o, v->name));
		if (act(v) && v->producer >= 0 && (rc = reorder(o, v->producer, v, 1, why)))
			return rc;
	}
	return TK_OK;
}

static int read_model(ox *o, const uint8_t *p, size_t n, const onnx_input *in, int nin)
{
	pb r = { p, p + n };
	pbf f, graph = { 0 };
	int got, ngraph = 0, rc;
	while ((got = pb_next(&r, &f)) > 0) {
		if (f.field == 7) {
			if (f.wt != 2)
				return bad(o, "not an ONNX model (malformed graph)");
			graph = f;
			ngraph++;
		} else if (f.field == 8) {
			if (f.wt != 2)
				return bad(o, "not an ONNX model (malformed opset_import)");
			Onnx__OperatorSetIdProto *os = onnx__operator_set_id_proto__unpack(NULL, f.len, f.data);
			if (!os)
				return bad(o, "not an ONNX model (malformed opset_import)");
			if ((!os->domain || !*os->domain || !strcmp(os->domain, "ai.onnx")) && os->has_version)
				o->opset = os->version;
			onnx__operator_set_id_proto__free_unpacked(os, NULL);
		}
	}
	if (got < 0)
		return bad(o, "not an ONNX model (malformed or truncated protobuf)");
	if (ngraph != 1)
		return bad(o, ngraph ? "not an ONNX model (two graphs)" : "not an ONNX model (no graph)");
	if (o->opset < 1 || o->opset > 1000)
		return bad(o, "no opset of the default ONNX domain");
	if ((rc = read_graph(o, graph.data, graph.len, in, nin)) || (rc = infer(o)))
		return rc;
	if (o->layout == ONNX_LAYOUT_BLOCKED && (rc = layout_pass(o)))
		return rc;
	if (o->ntask == 0 && !o->shapes)
		return bad(o, "no Conv, ConvTranspose, Gemm, MatMul or Einsum: the network has no task");
	return TK_OK;
}

static void print_dims(tk_sb *sb, const val *v)
{
	for (int j = 0; j < v->ndim; j++)
		tk_sb_printf(sb, "%s%lld", j ? "x" : "", (long long)v->dim[j]);
}

/* Each graph output's shape, a line each. */
static int emit_shapes(ox *o, tk_sb *sb)
{
	for (int i = 0; i < o->noutput; i++) {
		const val *v = o->output[i];
		if (!v->known)
			return bad(o, "graph output '%s' is produced by no node", pname(o, v->name));
		tk_sb_printf(sb, "%s\t", pname(o, v->name));
		print_dims(sb, v);
		tk_sb_putc(sb, '\n');
	}
	return TK_OK;
}

/* The tasks as a network file. */
static int emit_tasks(ox *o, tk_sb *sb)
{
	tk_sb_printf(sb, "# %s: the tasks of an ONNX model (opset %lld), by tunekit import onnx\n",
	             o->where, (long long)o->opset);
	if (o->layout == ONNX_LAYOUT_BLOCKED)
		tk_sb_puts(sb, "# layout blocked: convolutions in NCHW[x]c, reorders as layout_transform\n");
	/* the first inputs: a model exported without its weights has them
	 * all as inputs, after the data */
	for (int i = 0; i < o->ninput && i < 8; i++) {
		const val *v = o->input[i];
		tk_sb_printf(sb, "# input %s=", pname(o, v->name));
		print_dims(sb, v);
		tk_sb_putc(sb, '\n');
	}
	if (o->ninput > 8)
		tk_sb_printf(sb, "# and %d more graph inputs\n", o->ninput - 8);
	tk_sb_puts(sb, "weight\ttask\n");
	for (int i = 0; i < o->ntask; i++) {
		const node *nd = &o->nodes[o->task[i].node];
		if (o->task[i].note)
			tk_sb_printf(sb, "# %s\n", o->task[i].note);
		else
			tk_sb_printf(sb, "# node %s (%s)\n", pname(o, nd->name), pname(o, nd->op));
		tk_sb_printf(sb, "%g\t%s\n", o->task[i].weight, o->task[i].key);
	}
	return TK_OK;
}

/* Read the model in buf (shapes only, or tasks too) and write what emit
 * prints of it into a malloc'd *text. */
static int read_emit(const void *buf, size_t size, const char *where, const onnx_input *in,
                     int nin, int shapes, int layout, int (*emit)(ox *, tk_sb *), char **text)
{
	assert((buf || !size) && where && (in || !nin) && nin >= 0 && text);
	*text = NULL;
	ox *o = calloc(1, sizeof *o);
	if (!o)
		return tk_seterr(TK_ENOMEM, "out of memory");
	tk_arena_init(&o->a);
	if (setjmp(o->a.oom)) {
		tk_arena_free(&o->a);
		free(o);
		return tk_seterr(TK_ENOMEM, "%s: out of memory", where);
	}
	o->where = pname(o, where);
	o->shapes = shapes;
	o->layout = layout;
	int rc = read_model(o, buf, size, in, nin);
	if (!rc) {
		tk_sb sb;
		tk_sb_init(&sb);
		rc = emit(o, &sb);
		if (!rc && sb.oom)
			rc = tk_seterr(TK_ENOMEM, "out of memory");
		if (rc)
			tk_sb_free(&sb);
		else
			*text = tk_sb_take(&sb);
	}
	tk_arena_free(&o->a);
	free(o);
	return rc;
}

int onnx_output_shapes(const void *buf, size_t size, const char *where, const onnx_input *in,
                       int nin, char **text)
{
	return read_emit(buf, size, where, in, nin, 1, ONNX_LAYOUT_NCHW, emit_shapes, text);
}

int onnx_read(const void *buf, size_t size, const char *where, const onnx_input *in, int nin,
              char **tsv)
{
	return onnx_read_layout(buf, size, where, in, nin, ONNX_LAYOUT_NCHW, tsv);
}

int onnx_read_layout(const void *buf, size_t size, const char *where, const onnx_input *in,
                     int nin, int layout, char **tsv)
{
	assert(layout == ONNX_LAYOUT_NCHW || layout == ONNX_LAYOUT_BLOCKED);
	return read_emit(buf, size, where, in, nin, 0, layout, emit_tasks, tsv);
}

int onnx_import(const char *path, const onnx_input *in, int nin, char **tsv)
{
	return onnx_import_layout(path, in, nin, ONNX_LAYOUT_NCHW, tsv);
}

int onnx_import_layout(const char *path, const onnx_input *in, int nin, int layout, char **tsv)
{
	struct stat st;
	*tsv = NULL;
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return tk_seterr(TK_EIO, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return tk_seterr(TK_EIO, "%s: not a regular file", path);
	}
	if (st.st_size == 0) {
		close(fd);
		return tk_seterr(TK_EINVAL, "%s: an empty file is not an ONNX model", path);
	}
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return tk_seterr(TK_EIO, "%s: %s", path, strerror(errno));
	int rc = onnx_read_layout(map, (size_t)st.st_size, path, in, nin, layout, tsv);
	munmap(map, (size_t)st.st_size);
	return rc;
}

int onnx_input_parse(const char *arg, onnx_input *out)
{
	const char *eq = strrchr(arg, '=');
	memset(out, 0, sizeof *out);
	if (!eq || eq == arg)
		return tk_seterr(TK_EINVAL, "--input '%s': expected NAME=D1xD2x...", arg);
	const char *p = eq + 1;
	while (1) {
		char *end;
		if (out->ndim == ONNX_MAXDIM)
			return tk_seterr(TK_EINVAL, "--input '%s': more than %d dimensions", arg, ONNX_MAXDIM);
		errno = 0;
		if (*p < '0' || *p > '9')
			return tk_seterr(TK_EINVAL, "--input '%s': expected NAME=D1xD2x...", arg);
		long long d = strtoll(p, &end, 10);
		if (errno || d < 1 || d > DIM_MAX)
			return tk_seterr(TK_EINVAL, "--input '%s': dimension out of range", arg);
		out->dim[out->ndim++] = d;
		if (!*end)
			break;
		if (*end != 'x')
			return tk_seterr(TK_EINVAL, "--input '%s': expected NAME=D1xD2x...", arg);
		p = end + 1;
	}
	if ((size_t)(eq - arg) >= sizeof out->name)
		return tk_seterr(TK_EINVAL, "--input '%s': name too long", arg);
	memcpy(out->name, arg, (size_t)(eq - arg));
	out->name[eq - arg] = 0;
	return TK_OK;
}

int onnx_net_load(const char *name, tk_network **out)
{
	return onnx_net_load_layout(name, ONNX_LAYOUT_NCHW, out);
}

/* The graphs of the built-in networks with convolutions (data/models,
 * compiled in by data/models/embed.sh). */
typedef struct builtin_graph {
	const char *name;
	const unsigned char *data;
	size_t size;
} builtin_graph;
extern const builtin_graph tk_builtin_graphs[];

int onnx_net_load_layout(const char *name, int layout, tk_network **out)
{
	size_t len = strlen(name);
	char *tsv;
	int rc;
	*out = NULL;
	int onnx = len > 5 && !strcmp(name + len - 5, ".onnx");
	if (!onnx && layout == ONNX_LAYOUT_NCHW)
		return net_load(name, out);
	if (!onnx) {
		const builtin_graph *g = tk_builtin_graphs;
		while (g->name && strcmp(g->name, name))
			g++;
		if (!g->name)
			return tk_seterr(TK_EINVAL, "%s: a layout needs the graph: give the network as an"
			                 " ONNX model (MODEL.onnx; built in for the networks with"
			                 " convolutions)", name);
		if ((rc = onnx_read_layout(g->data, g->size, name, NULL, 0, layout, &tsv)))
			return rc;
		rc = net_parse(name, name, tsv, out);
		free(tsv);
		return rc;
	}
	rc = onnx_import_layout(name, NULL, 0, layout, &tsv);
	if (rc)
		return rc;
	const char *slash = strrchr(name, '/');
	rc = net_parse(name, slash ? slash + 1 : name, tsv, out);
	free(tsv);
	return rc;
}
