/*
 * custom: imported spaces, the Cartesian product of named parameters with
 * listed values and no program behind them (Kernel Tuner's tune_params).
 * Every knob is a KNOB_ENUM with role KR_CUSTOM whose labels are the values
 * as text, exactly as the tool that measured them prints them (Kernel
 * Tuner writes Python's str() of each value in its cache keys: 16, 1.5,
 * True, half), so configuration text, index and sampling work through the
 * ordinary functions of space.c. The JSON form kept in task.space lists the
 * knobs in order with their values, as JSON numbers when the number prints
 * back to the same label and as strings otherwise, so that text -> JSON ->
 * text is the identity. Contracts are in space.h.
 */
#include "space.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

/* Longest value label: sp_value_text() formats into 96-byte buffers. */
#define CUSTOM_MAXLABEL 95
/* Longest knob name; name=value must fit sp_parse()'s 256-byte item. */
#define CUSTOM_MAXNAME 63

/* Python's repr() of a finite double (what str() prints since Python 3.2):
 * the shortest digits that read back to v, in positional notation when the
 * decimal exponent is in [-4, 16) (with ".0" added to integral values), in
 * scientific notation ("1e+16", "1.5e-05") otherwise. */
static void py_float_repr(double v, char *buf, size_t nbuf)
{
	char e[40], digits[24];
	int prec, exp10, nd = 0;

	if (!isfinite(v)) {
		snprintf(buf, nbuf, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
		return;
	}
	for (prec = 0; prec < 17; prec++) {
		snprintf(e, sizeof e, "%.*e", prec, v);
		if (strtod(e, NULL) == v)
			break;
	}
	/* e is "-d.ddde+XX": collect the digits and the exponent */
	const char *p = e;
	if (*p == '-')
		p++;
	for (; *p && *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	digits[nd] = 0;
	exp10 = atoi(p + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		digits[--nd] = 0;

	tk_sb sb;
	tk_sb_init(&sb);
	if (signbit(v))
		tk_sb_putc(&sb, '-');
	if (exp10 < -4 || exp10 >= 16) {
		tk_sb_putc(&sb, digits[0]);
		if (nd > 1) {
			tk_sb_putc(&sb, '.');
			tk_sb_puts(&sb, digits + 1);
		}
		tk_sb_printf(&sb, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
	} else if (exp10 < 0) {
		tk_sb_puts(&sb, "0.");
		for (int i = -1; i > exp10; i--)
			tk_sb_putc(&sb, '0');
		tk_sb_puts(&sb, digits);
	} else {
		for (int i = 0; i <= exp10; i++)
			tk_sb_putc(&sb, i < nd ? digits[i] : '0');
		tk_sb_putc(&sb, '.');
		tk_sb_puts(&sb, nd > exp10 + 1 ? digits + exp10 + 1 : "0");
	}
	snprintf(buf, nbuf, "%s", sb.s && !sb.oom ? sb.s : "?");
	tk_sb_free(&sb);
}

/* The label of a JSON scalar as Python's str() prints it. TK_EINVAL for
 * arrays and objects. */
static int json_label(const json_t *v, char *buf, size_t nbuf)
{
	switch (json_typeof(v)) {
	case JSON_INTEGER:
		snprintf(buf, nbuf, "%lld", (long long)json_integer_value(v));
		return TK_OK;
	case JSON_REAL:
		py_float_repr(json_real_value(v), buf, nbuf);
		return TK_OK;
	case JSON_STRING:
		if (strlen(json_string_value(v)) >= nbuf)
			return TK_EINVAL;
		snprintf(buf, nbuf, "%s", json_string_value(v));
		return TK_OK;
	case JSON_TRUE:
		snprintf(buf, nbuf, "True");
		return TK_OK;
	case JSON_FALSE:
		snprintf(buf, nbuf, "False");
		return TK_OK;
	case JSON_NULL:
		snprintf(buf, nbuf, "None");
		return TK_OK;
	default:
		return TK_EINVAL;
	}
}

/* The JSON value that prints back to label: an integer or a real when one
 * does, else the string. NULL when out of memory. */
static json_t *label_json(const char *label)
{
	int64_t i;
	double d;
	char buf[64];
	if (!tk_parse_i64(label, &i)) {
		snprintf(buf, sizeof buf, "%lld", (long long)i);
		if (!strcmp(buf, label))
			return json_integer(i);
	}
	if (!tk_parse_f64(label, &d) && isfinite(d)) {
		py_float_repr(d, buf, sizeof buf);
		if (!strcmp(buf, label))
			return json_real(d);
	}
	return json_string(label);
}

/* Whether text is usable in configuration text and record streams: no
 * separators of either, no control characters. */
static int text_ok(const char *t, const char *forbidden)
{
	for (; *t; t++)
		if ((unsigned char)*t < 0x20 || *t == 0x7f || strchr(forbidden, *t))
			return 0;
	return 1;
}

int sp_space_custom(int nknob, const char *const *name, const int *nval,
                    const char *const *const *val, sp_space **out)
{
	sp_space *s;

	assert(out);
	*out = NULL;
	if (nknob < 1 || nknob > SP_MAXKNOB)
		return tk_seterr(TK_EINVAL, "a space needs 1 to %d parameters, not %d", SP_MAXKNOB,
		                 nknob);
	assert(name && nval && val);
	for (int k = 0; k < nknob; k++) {
		if (!*name[k] || strlen(name[k]) > CUSTOM_MAXNAME || !text_ok(name[k], "=;"))
			return tk_seterr(TK_EINVAL, "parameter name '%.80s' is empty, too long or has"
			                 " '=', ';' or control characters", name[k]);
		for (int j = 0; j < k; j++)
			if (!strcmp(name[j], name[k]))
				return tk_seterr(TK_EINVAL, "parameter '%s' given twice", name[k]);
		if (nval[k] < 1)
			return tk_seterr(TK_EINVAL, "parameter '%s' has no values", name[k]);
		for (int v = 0; v < nval[k]; v++) {
			if (strlen(val[k][v]) > CUSTOM_MAXLABEL || !text_ok(val[k][v], ";"))
				return tk_seterr(TK_EINVAL, "value '%.80s' of '%s' is too long or has ';'"
				                 " or control characters", val[k][v], name[k]);
			for (int w = 0; w < v; w++)
				if (!strcmp(val[k][w], val[k][v]))
					return tk_seterr(TK_EINVAL, "value '%s' of '%s' given twice",
					                 val[k][v], name[k]);
		}
	}

	if (!(s = calloc(1, sizeof *s)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	tk_arena_init(&s->arena);
	if (setjmp(s->arena.oom)) {
		sp_space_free(s);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	s->prog = NULL;
	s->main_stage = -1;
	s->panel_read = -1;
	s->nknob = nknob;
	s->size = 1;
	for (int k = 0; k < nknob; k++) {
		sp_knob *kn = &s->knob[k];
		int numeric = 1;
		kn->name = tk_arena_strdup(&s->arena, name[k]);
		kn->kind = KNOB_ENUM;
		kn->role = KR_CUSTOM;
		kn->axis = kn->read = -1;
		kn->n = nval[k];
		kn->cand = tk_arena_alloc(&s->arena, sizeof(int64_t) * (size_t)kn->n);
		kn->label = tk_arena_alloc(&s->arena, sizeof(char *) * (size_t)kn->n);
		for (int v = 0; v < kn->n; v++) {
			char buf[32];
			kn->label[v] = tk_arena_strdup(&s->arena, val[k][v]);
			if (numeric && !tk_parse_i64(val[k][v], &kn->cand[v])) {
				snprintf(buf, sizeof buf, "%lld", (long long)kn->cand[v]);
				numeric = !strcmp(buf, val[k][v]);
			} else {
				numeric = 0;
			}
		}
		if (!numeric)
			for (int v = 0; v < kn->n; v++)
				kn->cand[v] = v;
		if (s->size > (UINT64_MAX >> 1) / (uint64_t)kn->n) {
			sp_space_free(s);
			return tk_seterr(TK_EUNSUPP, "search space larger than 2^63");
		}
		s->size *= (uint64_t)kn->n;
	}
	*out = s;
	return TK_OK;
}

int sp_space_knobs(int nknob, const sp_knob *knob, sp_space **out)
{
	sp_space *s;

	assert(out);
	*out = NULL;
	if (nknob < 1 || nknob > SP_MAXKNOB)
		return tk_seterr(TK_EINVAL, "a space needs 1 to %d knobs, not %d", SP_MAXKNOB, nknob);
	assert(knob);
	for (int k = 0; k < nknob; k++)
		if (knob[k].n < 1 || (knob[k].kind == KNOB_SPLIT && knob[k].nlevel < 1))
			return tk_seterr(TK_EINVAL, "knob '%s' has no candidates", knob[k].name);
	if (!(s = calloc(1, sizeof *s)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	tk_arena_init(&s->arena);
	if (setjmp(s->arena.oom)) {
		sp_space_free(s);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	s->prog = NULL;
	s->main_stage = -1;
	s->panel_read = -1;
	s->nknob = nknob;
	s->size = 1;
	for (int k = 0; k < nknob; k++) {
		const sp_knob *src = &knob[k];
		sp_knob *kn = &s->knob[k];
		size_t ncand = (size_t)src->n * (size_t)(src->kind == KNOB_SPLIT ? src->nlevel : 1);
		*kn = *src;
		kn->name = tk_arena_strdup(&s->arena, src->name);
		kn->role = KR_CUSTOM;
		kn->axis = kn->read = -1;
		kn->cand = tk_arena_alloc(&s->arena, sizeof(int64_t) * ncand);
		memcpy(kn->cand, src->cand, sizeof(int64_t) * ncand);
		kn->label = NULL;
		if (src->kind == KNOB_ENUM && src->label) {
			kn->label = tk_arena_alloc(&s->arena, sizeof(char *) * (size_t)src->n);
			for (int v = 0; v < src->n; v++)
				kn->label[v] = tk_arena_strdup(&s->arena, src->label[v]);
		}
		if (s->size > (UINT64_MAX >> 1) / (uint64_t)kn->n) {
			sp_space_free(s);
			return tk_seterr(TK_EUNSUPP, "search space larger than 2^63");
		}
		s->size *= (uint64_t)kn->n;
	}
	*out = s;
	return TK_OK;
}

char *sp_space_to_json(const sp_space *s)
{
	json_t *root = json_object(), *knobs = json_array();
	char *text = NULL, buf[96];
	int oom = !root || !knobs || json_object_set(root, "knobs", knobs);

	assert(s);
	for (int k = 0; k < s->nknob && !oom; k++) {
		json_t *o = json_object(), *vals = json_array();
		sp_config c;
		memset(&c, 0, sizeof c);
		oom = !o || !vals || json_object_set_new(o, "name", json_string(s->knob[k].name)) ||
		      json_object_set(o, "values", vals) || json_array_append(knobs, o);
		for (int v = 0; v < s->knob[k].n && !oom; v++) {
			c.v[k] = v;
			oom = json_array_append_new(vals, label_json(sp_value_text(s, k, &c, buf,
			                                                           sizeof buf)));
		}
		json_decref(o);
		json_decref(vals);
	}
	if (!oom)
		text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	json_decref(knobs);
	if (!text)
		tk_seterr(TK_ENOMEM, "out of memory");
	return text;
}

int sp_space_from_json(const char *text, sp_space **out)
{
	json_error_t err;
	json_t *root, *knobs, *k, *v;
	const char *name[SP_MAXKNOB];
	const char **val[SP_MAXKNOB] = { NULL };
	int nval[SP_MAXKNOB], nknob, rc = TK_OK;
	size_t i, j;

	assert(text && out);
	*out = NULL;
	if (!(root = json_loads(text, 0, &err)))
		return tk_seterr(TK_EINVAL, "space JSON, line %d column %d: %s", err.line, err.column,
		                 err.text);
	knobs = json_object_get(root, "knobs");
	if (!json_is_object(root) || !json_is_array(knobs)) {
		json_decref(root);
		return tk_seterr(TK_EINVAL, "space JSON: not an object with a \"knobs\" array");
	}
	if (json_array_size(knobs) < 1 || json_array_size(knobs) > SP_MAXKNOB) {
		size_t n = json_array_size(knobs);
		json_decref(root);
		return tk_seterr(TK_EINVAL, "space JSON: %zu knobs (1 to %d allowed)", n, SP_MAXKNOB);
	}
	nknob = (int)json_array_size(knobs);
	json_array_foreach(knobs, i, k) {
		json_t *vals = json_object_get(k, "values");
		name[i] = json_string_value(json_object_get(k, "name"));
		if (!name[i] || !json_is_array(vals) || json_array_size(vals) > 1000000) {
			rc = tk_seterr(TK_EINVAL, "space JSON: knob %zu needs a \"name\" string and a"
			               " \"values\" array", i);
			goto done;
		}
		nval[i] = (int)json_array_size(vals);
		if (!(val[i] = calloc(json_array_size(vals) + 1, sizeof *val[i]))) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			goto done;
		}
		json_array_foreach(vals, j, v) {
			char buf[CUSTOM_MAXLABEL + 2];
			if (json_label(v, buf, sizeof buf)) {
				rc = tk_seterr(TK_EINVAL, "space JSON: value %zu of '%s' is not a number,"
				               " string or boolean, or is too long", j, name[i]);
				goto done;
			}
			if (!(val[i][j] = strdup(buf))) {
				rc = tk_seterr(TK_ENOMEM, "out of memory");
				goto done;
			}
		}
	}
	rc = sp_space_custom(nknob, name, nval, (const char *const *const *)val, out);
done:
	for (int a = 0; a < nknob; a++) {
		for (int b = 0; val[a] && val[a][b]; b++)
			free((char *)val[a][b]);
		free(val[a]);
	}
	json_decref(root);
	return rc;
}
