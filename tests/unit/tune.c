/*
 * Unit tests of lib/tune's tables: the tuning options (their enumerated
 * options parsed into values and written back as the same text, the run
 * parameters of an older tunekit read back) and the controller table.
 */
#include "unit.h"

#include <string.h>

#include "model/cost.h"
#include "train/train.h"
#include "tune/tune.h"

static const tn_optdesc *desc(const char *key)
{
	const tn_optdesc *d = tn_optdesc_find(key);
	CHECK(d != NULL);
	return d;
}

/* An enumerated option takes the names of its values and nothing else;
 * a bad name leaves the options unchanged. */
TEST(options_enums_parse_once)
{
	tn_opts o;
	tn_opts_default(&o);
	CHECK_EQ_INT(o.objective, TN_RANK);
	CHECK_EQ_INT(o.ml2_stages, TN_ML2_VA);
	CHECK_EQ_INT(o.ctl.kind, 0);
	CHECK_EQ_STR(tn_ctls[o.ctl.kind]->name, "none");
	CHECK_EQ_INT(o.adapt, TN_ADAPT_AUTO);
	CHECK_EQ_INT(o.guard, 1);
	CHECK_EQ_INT(o.other_model, 0);
	CHECK_EQ_INT(tn_opt_set(&o, desc("controller"), "moses"), TK_OK);
	CHECK_EQ_STR(tn_ctls[o.ctl.kind]->name, "moses");
	CHECK_EQ_INT(tn_opt_set(&o, desc("controller"), "frob"), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "unknown controller 'frob' (none, moses)") != NULL);
	CHECK_EQ_STR(tn_ctls[o.ctl.kind]->name, "moses");
	CHECK_EQ_INT(tn_opt_set(&o, desc("objective"), "reg"), TK_OK);
	CHECK_EQ_INT(o.objective, TN_REG);
	CHECK_EQ_INT(tn_opt_set(&o, desc("objective"), "lambdarank"), TK_EINVAL);
	CHECK_EQ_INT(tn_opt_set(&o, desc("ml2_stages"), "A"), TK_OK);
	CHECK_EQ_INT(o.ml2_stages, TN_ML2_A);
	CHECK_EQ_INT(tn_opt_set(&o, desc("ml2_stages"), "AV"), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "unknown ml2 stages 'AV' (VA, V, A)") != NULL);
	CHECK_EQ_INT(tn_opt_set(&o, desc("adapt"), "xgb-warm"), TK_OK);
	CHECK(o.adapt > 0 && o.adapt <= tr_nmethods);
	CHECK_EQ_STR(tr_methods[o.adapt - 1].name, "xgb-warm");
	CHECK_EQ_INT(tn_opt_set(&o, desc("adapt"), ""), TK_OK);
	CHECK_EQ_INT(o.adapt, 0);
	CHECK_EQ_INT(tn_opt_set(&o, desc("other_model"), "rfei"), TK_OK);
	CHECK(o.other_model > 0 && cm_kinds[o.other_model - 1] == cm_find("rfei"));
	CHECK_EQ_INT(tn_opt_set(&o, desc("other_model"), "svm"), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "unknown model 'svm' (auto, xgb,") != NULL);
}

/* The bound of bounded timing is 0 (off) or at least 1, from the command
 * line and in a run's stored parameters alike; a bad value leaves it. */
TEST(options_bound_off_or_at_least_1)
{
	tn_opts o;
	tn_opts_default(&o);
	CHECK(o.bound == TN_BOUND && TN_BOUND >= 1);
	CHECK_EQ_INT(tn_opt_set(&o, desc("bound"), "0"), TK_OK);
	CHECK(o.bound == 0);
	CHECK_EQ_INT(tn_opts_check(&o), TK_OK);
	CHECK_EQ_INT(tn_opt_set(&o, desc("bound"), "1"), TK_OK);
	CHECK(o.bound == 1);
	CHECK_EQ_INT(tn_opt_set(&o, desc("bound"), "2.5"), TK_OK);
	CHECK(o.bound == 2.5);
	CHECK_EQ_INT(tn_opt_set(&o, desc("bound"), "0.5"), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "out of range (0, or 1 to") != NULL);
	CHECK_EQ_INT(tn_opt_set(&o, desc("bound"), "-1"), TK_EINVAL);
	CHECK_EQ_INT(tn_opt_set(&o, desc("bound"), "x"), TK_EINVAL);
	CHECK(o.bound == 2.5);
	o.bound = 0.5;
	CHECK_EQ_INT(tn_opts_check(&o), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "--bound 0.5 is out of range (0, or 1 to") != NULL);
	/* another option's range says nothing of 0 */
	tn_opts_default(&o);
	CHECK_EQ_INT(tn_opt_set(&o, desc("plan_size"), "0"), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "out of range (1 to") != NULL);
}

/* The lines of the run parameters an older tunekit stored, where these
 * options were strings: they read into the values and write back the same. */
TEST(options_old_params_round_trip)
{
	static const char *const lines[] = {
		"objective=reg", "other_model=none", "adapt=moses", "ml2_stages=V",
		"controller=moses", "controller_top=5", "feature=knob",
	};
	char text[512] = "";
	for (int i = 0; i < ArraySize(lines); i++) {
		strcat(text, lines[i]);
		strcat(text, "\n");
	}
	strcat(text, "task=2 dense:m=8,n=8,k=8\n");
	tn_opts o;
	int ntask = 0;
	char **task = NULL;
	double *weight = NULL;
	tn_opts_default(&o);
	CHECK_EQ_INT(tn_opts_parse(text, &o, &ntask, &task, &weight), TK_OK);
	CHECK_EQ_INT(ntask, 1);
	CHECK_EQ_INT(o.objective, TN_REG);
	CHECK_EQ_INT(o.ml2_stages, TN_ML2_V);
	CHECK_EQ_STR(tn_ctls[o.ctl.kind]->name, "moses");
	CHECK_EQ_INT(o.ctl.top, 5);
	CHECK_EQ_STR(tr_methods[o.adapt - 1].name, "moses");
	CHECK(cm_kinds[o.other_model - 1] == cm_find("none"));
	char *again = tn_opts_format(&o, ntask, task, weight);
	CHECK(again != NULL);
	for (int i = 0; again && i < ArraySize(lines); i++) {
		char want[64];
		snprintf(want, sizeof want, "\n%s\n", lines[i]);
		CHECK(strstr(again, want) != NULL);
	}
	CHECK(again && strstr(again, "\ntask=2 dense:m=8,n=8,k=8\n") != NULL);
	/* an older run's "adapt=" (never refit) and no guard line: the file's
	 * model as it is, but the guard is on */
	tn_opts old;
	int nold = 0;
	char **otask = NULL;
	double *oweight = NULL;
	tn_opts_default(&old);
	CHECK_EQ_INT(tn_opts_parse("adapt=\n", &old, &nold, &otask, &oweight), TK_OK);
	CHECK_EQ_INT(old.adapt, 0);
	CHECK_EQ_INT(old.guard, 1);
	CHECK_EQ_INT(nold, 0);
	free(otask);
	free(oweight);
	/* and the defaults write the texts they always had, and the new ones */
	tn_opts d;
	tn_opts_default(&d);
	char *def = tn_opts_format(&d, 0, NULL, NULL);
	CHECK(def && strstr(def, "\nobjective=rank\n") && strstr(def, "\nother_model=auto\n") &&
	      strstr(def, "\nadapt=auto\n") && strstr(def, "\nguard=on\n") &&
	      strstr(def, "\nml2_stages=VA\n") &&
	      strstr(def, "\ncontroller=none\n") && strstr(def, "\nfeature=\n"));
	free(def);
	free(again);
	for (int i = 0; i < ntask; i++)
		free(task[i]);
	free(task);
	free(weight);
}

/* "none" first and without hooks; a controller that answers trials has a
 * hook to answer them and needs a model to answer with. */
TEST(controller_table)
{
	CHECK(tn_nctls >= 2);
	CHECK_EQ_STR(tn_ctls[0]->name, "none");
	CHECK(!tn_ctls[0]->before && !tn_ctls[0]->after && !tn_ctls[0]->answer && !tn_ctls[0]->end);
	for (int i = 0; i < tn_nctls; i++) {
		const tn_ctl *k = tn_ctls[i];
		CHECK(k->name && k->summary);
		CHECK(!(k->flags & TN_CTL_ANSWERS) == !k->answer);
		CHECK(!(k->flags & TN_CTL_ANSWERS) || (k->flags & TN_CTL_MODEL));
	}
}

/* Pairs in the measured order count 1, against it 0, a tie in score 1/2;
 * pairs of equal measurements (two invalid) are not pairs. */
TEST(guard_rank_pairs)
{
	const float y[4] = { 3, 2, 1, 0 };
	const float same[4] = { 30, 20, 10, 0 }, back[4] = { 0, 1, 2, 3 }, flat[4] = { 1, 1, 1, 1 };
	double a = 0, n = 0;
	tn_rank_pairs(same, y, 4, 0, &a, &n);
	CHECK_NEAR(n, 6, 0);
	CHECK_NEAR(a, 6, 0);
	a = n = 0;
	tn_rank_pairs(back, y, 4, 0, &a, &n);
	CHECK_NEAR(a, 0, 0);
	a = n = 0;
	tn_rank_pairs(flat, y, 4, 0, &a, &n);
	CHECK_NEAR(a / n, 0.5, 1e-12);
	/* two invalid configurations (0) have no order between them, but each
	 * is below a valid one */
	const float yi[3] = { 0, 0, 1 }, si[3] = { 5, -5, 0 };
	a = n = 0;
	tn_rank_pairs(si, yi, 3, 0, &a, &n);
	CHECK_NEAR(n, 2, 0);
	CHECK_NEAR(a, 1, 0);
	/* from 2: only the pairs with a configuration from 2 on, the new
	 * ones, not those among the old: (0,2) (1,2) (0,3) (1,3) (2,3) */
	const float s5[4] = { 3, 1, 2, 0 };
	a = n = 0;
	tn_rank_pairs(s5, y, 4, 2, &a, &n);
	CHECK_NEAR(n, 5, 0);
	CHECK_NEAR(a, 4, 0); /* (1,2) is the wrong way round; (0,1) is not counted */
}

/* The file's model plans until the one from scratch ranks better by more
 * than the margin, over TN_GUARD_MIN_BATCHES batches at least; then the
 * other way round. */
TEST(guard_picks_the_better_ranker)
{
	const float y[4] = { 4, 3, 2, 1 };
	const float good[4] = { 4, 3, 2, 1 }, bad[4] = { 1, 2, 3, 4 }, near[4] = { 4, 3, 1, 2 };
	tn_guard g;
	memset(&g, 0, sizeof g);
	CHECK_EQ_INT(tn_guard_pick(&g, TN_GUARD_FILE), TN_GUARD_FILE); /* nothing scored */
	CHECK(tn_guard_rate(&g, TN_GUARD_FILE) < 0);
	/* a wrong model: one batch is not enough to leave it */
	tn_guard_add(&g, bad, good, y, 4, 0);
	CHECK_NEAR(tn_guard_rate(&g, TN_GUARD_FILE), 0, 0);
	CHECK_NEAR(tn_guard_rate(&g, TN_GUARD_SCRATCH), 1, 0);
	CHECK_EQ_INT(tn_guard_pick(&g, TN_GUARD_FILE),
	             TN_GUARD_MIN_BATCHES > 1 ? TN_GUARD_FILE : TN_GUARD_SCRATCH);
	for (int i = 1; i < TN_GUARD_MIN_BATCHES; i++)
		tn_guard_add(&g, bad, good, y, 4, 0);
	CHECK_EQ_INT(tn_guard_pick(&g, TN_GUARD_FILE), TN_GUARD_SCRATCH);
	/* and back once the file's (adapted) model ranks better */
	for (int i = 0; i < 4 * TN_GUARD_MIN_BATCHES; i++)
		tn_guard_add(&g, good, bad, y, 4, 0);
	CHECK(tn_guard_rate(&g, TN_GUARD_FILE) > tn_guard_rate(&g, TN_GUARD_SCRATCH));
	CHECK_EQ_INT(tn_guard_pick(&g, TN_GUARD_SCRATCH), TN_GUARD_FILE);
	/* within the margin, whoever plans keeps planning: 5 of 6 pairs
	 * against 6 of 6 is worse by more than the margin, the same is not */
	memset(&g, 0, sizeof g);
	for (int i = 0; i < TN_GUARD_MIN_BATCHES; i++)
		tn_guard_add(&g, good, good, y, 4, 0);
	CHECK_EQ_INT(tn_guard_pick(&g, TN_GUARD_FILE), TN_GUARD_FILE);
	CHECK_EQ_INT(tn_guard_pick(&g, TN_GUARD_SCRATCH), TN_GUARD_SCRATCH);
	memset(&g, 0, sizeof g);
	for (int i = 0; i < TN_GUARD_MIN_BATCHES; i++)
		tn_guard_add(&g, near, good, y, 4, 0);
	CHECK_NEAR(tn_guard_rate(&g, TN_GUARD_FILE), 5.0 / 6, 1e-12);
	CHECK(1 - 5.0 / 6 > TN_GUARD_MARGIN);
	CHECK_EQ_INT(tn_guard_pick(&g, TN_GUARD_FILE), TN_GUARD_SCRATCH);
}

UNIT_MAIN(options_enums_parse_once, options_bound_off_or_at_least_1,
          options_old_params_round_trip, controller_table, guard_rank_pairs,
          guard_picks_the_better_ranker)
