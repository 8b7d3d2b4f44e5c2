/*
 * network: parse network task lists (see network.h). The files of
 * data/networks are compiled in (build/gen/networks.c) so the binary needs
 * no data directory.
 */
#include "network.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "te.h"
#include "util/util.h"

typedef struct builtin {
	const char *name, *text;
} builtin;
extern const builtin tk_builtin_networks[];
extern const char *const tk_builtin_network_names[];

const char *const *net_builtin(void)
{
	return tk_builtin_network_names;
}

void net_free(tk_network *n)
{
	if (!n)
		return;
	for (int i = 0; i < n->n; i++)
		free(n->task[i].task);
	free(n->task);
	free(n->name);
	free(n);
}

int net_union(const tk_network *const *aNet, int nnet, tk_network **out)
{
	int cap = 0;
	*out = NULL;
	for (int v = 0; v < nnet; v++)
		cap += aNet[v]->n;
	tk_network *u = calloc(1, sizeof *u);
	if (!u || !(u->task = calloc((size_t)cap + 1, sizeof *u->task)) ||
	    !(u->name = strdup(nnet ? aNet[0]->name : ""))) {
		net_free(u);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	for (int v = 0; v < nnet; v++)
		for (int i = 0; i < aNet[v]->n; i++) {
			const net_task *t = &aNet[v]->task[i];
			int j = 0;
			while (j < u->n && strcmp(u->task[j].task, t->task))
				j++;
			if (j < u->n) {
				if (t->weight > u->task[j].weight)
					u->task[j].weight = t->weight;
			} else if (!(u->task[u->n].task = strdup(t->task))) {
				net_free(u);
				return tk_seterr(TK_ENOMEM, "out of memory");
			} else {
				u->task[u->n++].weight = t->weight;
			}
		}
	*out = u;
	return TK_OK;
}

static int parse(const char *where, const char *text, tk_network *n)
{
	int lineno = 0, header = 0, cap = 0;
	const char *p = text;
	while (*p) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char line[1024];
		lineno++;
		if (len >= sizeof line)
			return tk_seterr(TK_EINVAL, "%s:%d: line too long", where, lineno);
		memcpy(line, p, len);
		line[len] = 0;
		p += len + (end ? 1 : 0); /* before the \r goes: a last line "x\r" looped */
		if (len && line[len - 1] == '\r')
			line[--len] = 0;
		if (!len || line[0] == '#')
			continue;
		char *tab = strchr(line, '\t');
		if (!tab)
			return tk_seterr(TK_EINVAL, "%s:%d: expected WEIGHT<TAB>TASK", where, lineno);
		*tab = 0;
		if (!header) {
			if (strcmp(line, "weight") || strcmp(tab + 1, "task"))
				return tk_seterr(TK_EINVAL, "%s:%d: expected the header 'weight<TAB>task'",
				                 where, lineno);
			header = 1;
			continue;
		}
		double w;
		if (tk_parse_f64(line, &w) || w <= 0)
			return tk_seterr(TK_EINVAL, "%s:%d: weight '%s' is not a positive number", where,
			                 lineno, line);
		te_prog *prog;
		if (te_task_parse(tab + 1, &prog)) {
			char why[400];
			snprintf(why, sizeof why, "%s", tk_errmsg());
			return tk_seterr(TK_EINVAL, "%s:%d: %s", where, lineno, why);
		}
		for (int i = 0; i < n->n; i++)
			if (!strcmp(n->task[i].task, prog->key)) {
				te_prog_free(prog);
				return tk_seterr(TK_EINVAL, "%s:%d: task listed twice", where, lineno);
			}
		if (n->n == cap) {
			cap = cap ? 2 * cap : 16;
			net_task *t = realloc(n->task, sizeof *t * (size_t)cap);
			if (!t) {
				te_prog_free(prog);
				return tk_seterr(TK_ENOMEM, "out of memory");
			}
			n->task = t;
		}
		n->task[n->n].task = strdup(prog->key);
		n->task[n->n].weight = w;
		te_prog_free(prog);
		if (!n->task[n->n++].task)
			return tk_seterr(TK_ENOMEM, "out of memory");
	}
	if (!header || n->n == 0)
		return tk_seterr(TK_EINVAL, "%s: no tasks", where);
	return TK_OK;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	tk_sb sb;
	char buf[4096];
	size_t got;
	tk_sb_init(&sb);
	while ((got = fread(buf, 1, sizeof buf, f)) > 0)
		tk_sb_putn(&sb, buf, got);
	int err = ferror(f);
	fclose(f);
	if (err) {
		tk_sb_free(&sb);
		return NULL;
	}
	return tk_sb_take(&sb);
}

int net_parse(const char *where, const char *name, const char *text, tk_network **out)
{
	*out = NULL;
	tk_network *n = calloc(1, sizeof *n);
	if (!n)
		return tk_seterr(TK_ENOMEM, "out of memory");
	int rc = parse(where, text, n);
	if (!rc && !(n->name = strdup(name)))
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	if (rc) {
		net_free(n);
		return rc;
	}
	*out = n;
	return TK_OK;
}

int net_load(const char *name, tk_network **out)
{
	*out = NULL;
	tk_network *n = calloc(1, sizeof *n);
	if (!n)
		return tk_seterr(TK_ENOMEM, "out of memory");
	int rc;
	size_t len = strlen(name);
	if (strchr(name, '/') || (len > 4 && !strcmp(name + len - 4, ".tsv"))) {
		char *text = read_file(name);
		if (!text) {
			free(n);
			return tk_seterr(TK_EIO, "%s: %s", name, strerror(errno));
		}
		const char *slash = strrchr(name, '/');
		n->name = strdup(slash ? slash + 1 : name);
		rc = parse(name, text, n);
		free(text);
	} else {
		const builtin *b = tk_builtin_networks;
		while (b->name && strcmp(b->name, name))
			b++;
		if (!b->name) {
			free(n);
			return tk_seterr(TK_ENOTFOUND, "unknown network '%s' (see 'tunekit help networks')",
			                 name);
		}
		n->name = strdup(name);
		rc = parse(name, b->text, n);
	}
	if (!rc && !n->name)
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	if (rc) {
		net_free(n);
		return rc;
	}
	*out = n;
	return TK_OK;
}
