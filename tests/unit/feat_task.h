/*
 * feat_task: what the feature unit tests share: a task's program and
 * search space opened from its key, and lg(), the scaling of every
 * count-like feature. Include after unit.h.
 */
#ifndef TK_UNIT_FEAT_TASK_H
#define TK_UNIT_FEAT_TASK_H

#include "space/space.h"
#include "task/te.h"

/* lg(x) = log2(1 + x) */
static double lg(double x)
{
	return log2(1.0 + x);
}

typedef struct task {
	te_prog *p;
	sp_space *sp;
} task;

/* Open key's program and space: 0, or -1 after printing why. */
static int task_open(task *t, const char *key)
{
	t->p = NULL;
	t->sp = NULL;
	if (te_task_parse(key, &t->p) || sp_space_create(t->p, &t->sp)) {
		fprintf(stderr, "%s: %s\n", key, tk_errmsg());
		te_prog_free(t->p);
		return -1;
	}
	return 0;
}

static void task_close(task *t)
{
	sp_space_free(t->sp);
	te_prog_free(t->p);
}

#endif
