/*
 * kernel: configuration -> primitive sequence -> IR -> C (see kernel.h).
 */
#include "kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/lower.h"

int kn_build(const sp_space *sp, const sp_config *c, const tk_target *t, int keep_ir,
             kn_kernel *k)
{
	tk_sb sb;
	sc_sched sched;
	int rc;
	memset(k, 0, sizeof *k);
	tk_sb_init(&sb);
	sp_format(&sb, sp, c);
	if (!(k->config = tk_sb_take(&sb)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	if ((rc = sc_from_config(sp, c, &sched)) || (rc = sc_print(&sb, sp->prog, &sched))) {
		tk_sb_free(&sb);
		if (rc == TK_ENOMEM)
			goto oom;
		k->sched = strdup("");
		k->why = strdup(tk_errmsg());
		return k->sched && k->why ? TK_OK : tk_seterr(TK_ENOMEM, "out of memory");
	}
	if (!(k->sched = tk_sb_take(&sb)))
		goto oom;
	ir_func *f;
	rc = lower(sp->prog, &sched, &f);
	if (rc == TK_ENOMEM)
		goto oom;
	if (rc) {
		k->why = strdup(tk_errmsg());
		return k->why ? TK_OK : tk_seterr(TK_ENOMEM, "out of memory");
	}
	char comment[512];
	snprintf(comment, sizeof comment, "tunekit kernel: %s [%s] for %s", sp->prog->key,
	         k->config, t->spec);
	for (char *p = comment; *p; p++)
		if (p[0] == '*' && p[1] == '/')
			p[0] = '_';
	cg_opts o = { .vlen = t->vlen, .threads = t->threads, .comment = comment };
	rc = cg_emit_c(f, &o, &k->src);
	if (keep_ir && !rc)
		k->ir = f;
	else
		ir_func_free(f);
	if (rc)
		goto oom;
	return TK_OK;
oom:
	kn_kernel_free(k);
	return tk_seterr(TK_ENOMEM, "out of memory");
}

void kn_kernel_free(kn_kernel *k)
{
	free(k->config);
	free(k->sched);
	free(k->src);
	free(k->why);
	ir_func_free(k->ir);
	memset(k, 0, sizeof *k);
}
