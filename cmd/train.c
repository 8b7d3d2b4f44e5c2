/*
 * train: fit a cost model of the model table on the records of one
 * hardware target that have feature vectors, measure it on held-out tasks
 * with the papers' metrics, and write it as a model file and into the
 * store's model table. The pipeline is lib/train (train/train.h); this
 * file reads the options and the record stream and prints.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "features/feature.h"
#include "import/onnx.h"
#include "model/cost.h"
#include "record/record.h"
#include "task/network.h"
#include "train/train.h"

static const char *const usage[] = {
	"tunekit train [--model NAME] [--objective rank|reg|validity] [--feature itervar|knob|curve|tlp|graph|hidden]\n"
	"              [--hardware ID] [--holdout F | --holdout-task TASK... | --holdout-network NAME...]\n"
	"              [--valid-task TASK... | --valid-network NAME...]\n"
	"              [--aux-hw ID... [--target-fraction F] [--aux-fraction F]] [--select active:F]\n"
	"              [--rounds N]\n"
	"              [--per-op] [--out FILE] [OPTIONS] [-]",
	"Train a cost model ('tunekit help models') on the records of one hardware ID\n"
	"(default: the one with the most records that have features) whose configurations\n"
	"have features of --feature (see 'tunekit extract-features'; by default the kind the\n"
	"model reads, listed by 'tunekit help models', or knob for a store of imported\n"
	"tasks' records only). With -, only the records of the record stream on\n"
	"standard input (its id column). Labels are\n"
	"throughputs normalised per task. Holds out whole tasks (--holdout, --holdout-task)\n"
	"to stop early on and to measure the model; --holdout-network holds out a network's\n"
	"tasks and weights them by their occurrences. With validation tasks (--valid-task,\n"
	"--valid-network) it stops early on those instead, then fits again on the training\n"
	"and validation tasks with the rounds (epochs) they chose: the holdout is only\n"
	"measured. A multi-head model (mtl-tlp) also learns from the records of\n"
	"auxiliary hardware (--aux-hw), one head each, and predicts for the target;\n"
	"--target-fraction keeps only that share of the target's training records,\n"
	"--aux-fraction trains each epoch on that share of the auxiliary records, drawn\n"
	"afresh (faster); --select active:F keeps a share F of the target's training\n"
	"records chosen as TCL's active learning does. Prints RMSE, MSE, MSE(D), top-1, top-5 and Spearman on the\n"
	"target's training records and holdout (a table on a terminal, TSV otherwise),\n"
	"and, with --per-op, on the holdout's tasks of each operator alone; then it\n"
	"writes the model file and adds the model to the store. --objective validity\n"
	"trains ML2Tuner's model V instead: a classifier of valid against invalid\n"
	"records (accuracy, precision, recall and AUC), whose file says label=validity.\n"
	"A model that trains in epochs (tlp, mtl-tlp) shows them on a terminal.",
};

static struct {
	const char *model, *objective, *feature, *out, *format, *tree_method, *predictions, *select;
	int64_t hardware, rounds;
	int per_op;
	double holdout, target_fraction, aux_fraction;
	opt_list holdout_task, holdout_network, valid_task, valid_network, aux_hw;
} o;

static const opt options[] = {
	{ OPT_STRING, "model", 0, &o.model, "NAME", "cost model (default xgb; see 'tunekit help models')" },
	{ OPT_STRING, "objective", 0, &o.objective, "OBJ", "rank (pairwise ranking, default), reg (squared error) or validity (classifier)" },
	{ OPT_STRING, "feature", 0, &o.feature, "KIND", "itervar, knob, curve, tlp, graph or hidden (default: the model's, see 'tunekit help models')" },
	{ OPT_INT, "hardware", 0, &o.hardware, "ID", "train on the records of this hardware id" },
	{ OPT_DOUBLE, "holdout", 0, &o.holdout, "F", "hold out this fraction of the tasks (0 to 1)" },
	{ OPT_LIST, "holdout-task", 0, &o.holdout_task, "TASK", "hold out this task (repeatable)" },
	{ OPT_LIST, "holdout-network", 0, &o.holdout_network, "NAME", "hold out the tasks of this network (repeatable)" },
	{ OPT_LIST, "valid-task", 0, &o.valid_task, "TASK", "stop early on this task, then train on it too (repeatable)" },
	{ OPT_LIST, "valid-network", 0, &o.valid_network, "NAME", "the same with the tasks of this network (repeatable)" },
	{ OPT_LIST, "aux-hw", 0, &o.aux_hw, "ID", "multi-head models: also learn from this hardware (repeatable, or ID,ID)" },
	{ OPT_DOUBLE, "target-fraction", 0, &o.target_fraction, "F", "train on this share of the target's records (0 to 1)" },
	{ OPT_DOUBLE, "aux-fraction", 0, &o.aux_fraction, "F", "each epoch, train on this share of the auxiliary records (above 0, at most 1)" },
	{ OPT_STRING, "select", 0, &o.select, "active:F", "train on a share F of the target's records chosen by representativeness, diversity and uncertainty" },
	{ OPT_INT, "rounds", 0, &o.rounds, "N", "boosting rounds at most (default 8000 with a holdout, else 200)" },
	{ OPT_STRING, "tree-method", 0, &o.tree_method, "M", "XGBoost tree_method: auto (default), exact, approx, hist" },
	{ OPT_STRING, "out", 'o', &o.out, "FILE", "model file to write (default tunekit.model)" },
	{ OPT_STRING, "format", 'f', &o.format, "FMT", "table, tsv or json (default: table on a terminal)" },
	{ OPT_FLAG, "per-op", 0, &o.per_op, NULL, "also a holdout row per operator (holdout-op:OP)" },
	{ OPT_STRING, "predictions", 0, &o.predictions, "FILE", "write the model's prediction of every target record measured (TSV)" },
	OPT_END_
};

typedef struct net_list {
	int n;
	tk_network **v;
} net_list;

/* ---- output ---------------------------------------------------------------------- */

/* --predictions: a row per record of part pt (set name), with what the
 * metrics were computed from. */
static void predictions_rows(FILE *fp, const tr_set *ts, const tr_part *pt, const char *set)
{
	for (int i = 0; i < pt->n; i++)
		fprintf(fp, "%lld\t%s\t%s\t%.9g\t%.6g\t%.9g\t%g\n", (long long)pt->meas[i],
		        ts->tasks[pt->task[i]].key, set, pt->lat[i] > 0 ? pt->lat[i] : 0, pt->y[i],
		        pt->p[i], pt->weight[i]);
}

static int write_predictions(tk_ctx *ctx, const char *path, const tr_set *ts, const tr_fit *f)
{
	FILE *fp = fopen(path, "w");
	if (!fp)
		return tk_fail(ctx, TK_EIO, "cannot write %s: %s", path, strerror(errno));
	fputs("id\ttask\tset\tlatency_s\tlabel\tprediction\tweight\n", fp);
	predictions_rows(fp, ts, &f->train0, "train");
	predictions_rows(fp, ts, &f->hold, "holdout");
	int bad = ferror(fp);
	bad |= fclose(fp) != 0;
	return bad ? tk_fail(ctx, TK_EIO, "cannot write %s", path) : 0;
}


/* With several held-out networks, a row of each alone ("holdout:NAME"):
 * its tasks weighted by their occurrences in it. */
static int network_rows(tk_ctx *ctx, table *tb, int fmt, const tr_set *ts, const tr_part *hold,
                        const net_list *nets)
{
	double *w = malloc(sizeof *w * (size_t)(ts->ntask > 0 ? ts->ntask : 1));
	if (!w)
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	for (int i = 0; i < nets->n; i++) {
		const tk_network *net = nets->v[i];
		cm_metrics m;
		char set[128];
		for (int t = 0; t < ts->ntask; t++)
			w[t] = 0;
		for (int j = 0; j < net->n; j++)
			for (int t = 0; t < ts->ntask; t++)
				if (!ts->tasks[t].head && !strcmp(ts->tasks[t].key, net->task[j].task))
					w[t] += net->task[j].weight;
		int rc = tr_eval_tasks(hold, w, &m);
		if (rc) {
			free(w);
			return tk_fail(ctx, rc, NULL);
		}
		snprintf(set, sizeof set, "holdout:%s", net->name);
		if (m.n)
			metrics_row(tb, fmt, set, &m);
	}
	free(w);
	return EXIT_OK;
}

/* --per-op: a row of the holdout's tasks of each operator alone
 * ("holdout-op:OP", the task key's part before ':'), in the order the
 * operators first occur, each task weighted as in the holdout row. */
static int op_rows(tk_ctx *ctx, table *tb, int fmt, const tr_set *ts, const tr_part *hold)
{
	double *w = malloc(sizeof *w * (size_t)(ts->ntask > 0 ? ts->ntask : 1));
	char *done = calloc((size_t)(ts->ntask > 0 ? ts->ntask : 1), 1);
	int rc = TK_OK;
	if (!w || !done) {
		free(w);
		free(done);
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	}
	for (int t = 0; t < ts->ntask && !rc; t++) {
		const tr_task *tk = &ts->tasks[t];
		if (done[t] || !tk->holdout || tk->head)
			continue;
		size_t len = strcspn(tk->key, ":");
		for (int u = t; u < ts->ntask; u++) {
			const tr_task *tu = &ts->tasks[u];
			int same = tu->holdout && !tu->head && !strncmp(tu->key, tk->key, len) &&
			           (tu->key[len] == ':' || !tu->key[len]);
			w[u] = same ? (tu->weight > 0 ? tu->weight : 1) : 0;
			done[u] |= same;
		}
		for (int u = 0; u < t; u++)
			w[u] = 0;
		cm_metrics m;
		char set[128];
		if ((rc = tr_eval_tasks(hold, w, &m)))
			break;
		snprintf(set, sizeof set, "holdout-op:%.*s", (int)(len < 100 ? len : 100), tk->key);
		if (m.n)
			metrics_row(tb, fmt, set, &m);
	}
	free(w);
	free(done);
	return rc ? tk_fail(ctx, rc, NULL) : EXIT_OK;
}

/* ---- entry -------------------------------------------------------------------------- */

/* Messages on what is trained on, before the fit. */
static void tell_source(tk_ctx *ctx, const tr_set *ts, const tr_source *src, int from_stdin,
                        const char *kname, int by_rows, int nhold)
{
	int d = 0, nheld = by_rows, n0 = 0, t0 = 0, naux = 0, nval = 0, tval = 0;
	if (ctx->common.quiet)
		return;
	for (int i = 0; i < ts->n; i++)
		d = ts->nx[i] > d ? ts->nx[i] : d;
	for (int t = 0; t < ts->ntask; t++) {
		const tr_task *tk = &ts->tasks[t];
		nheld += !by_rows && tk->holdout && !tk->head;
		n0 += tk->head ? 0 : tk->n;
		t0 += !tk->head;
		naux += tk->head && !tk->holdout ? tk->n : 0; /* a held-out task is left out on every head */
		nval += tk->valid && !tk->holdout && !tk->head ? tk->n : 0;
		tval += tk->valid && !tk->holdout && !tk->head;
	}
	if (src->chosen && src->ncand > 1 && from_stdin)
		fprintf(stderr, "%s: the records are of %d hardware targets; training on hardware %lld,"
		        " which has the most (choose with --hardware)\n", ctx->prog, src->ncand,
		        (long long)src->hw_id);
	else if (src->chosen && src->ncand > 1)
		fprintf(stderr, "%s: %d hardware targets have records with %s features; training on"
		        " hardware %lld (%lld records), which has the most (choose with --hardware)\n",
		        ctx->prog, src->ncand, kname, (long long)src->hw_id, (long long)src->hw_nfeat);
	if (!from_stdin && src->hw_nfeat < src->hw_nrec)
		fprintf(stderr, "%s: %lld of the %lld records of hardware %lld have no %s features"
		        " and are left out ('tunekit extract-features --kind %s' adds them)\n",
		        ctx->prog, (long long)(src->hw_nrec - src->hw_nfeat), (long long)src->hw_nrec,
		        (long long)src->hw_id, kname, kname);
	if (by_rows)
		fprintf(stderr, "%s: one task: holding out %d of its %d records at random instead\n",
		        ctx->prog, nhold, ts->n);
	fprintf(stderr, "%s: hardware %lld (%s): %d records of %d task%s, %d features", ctx->prog,
	        (long long)src->hw_id, src->hw_key, n0, t0, t0 == 1 ? "" : "s", d);
	if (naux > 0)
		fprintf(stderr, "; %d records of auxiliary hardware", naux);
	if (nhold > 0)
		fprintf(stderr, "; holding out %d records of %d task%s", nhold, nheld,
		        nheld == 1 ? "" : "s");
	if (nval > 0)
		fprintf(stderr, "; stopping early on %d records of %d validation task%s", nval, tval,
		        tval == 1 ? "" : "s");
	fputc('\n', stderr);
	if (o.holdout_task.n == 0 && nhold > 0 && !by_rows)
		for (int t = 0; t < ts->ntask; t++)
			if (ts->tasks[t].holdout && !ts->tasks[t].head)
				fprintf(stderr, "%s: held out: %s\n", ctx->prog, ts->tasks[t].key);
}

/* --aux-hw: hardware ids, repeatable or separated by commas. */
static int parse_aux(tk_ctx *ctx, int64_t **aux, int *naux)
{
	*naux = 0;
	*aux = NULL;
	if (!o.aux_hw.n)
		return EXIT_OK;
	int cap = 0;
	for (int i = 0; i < o.aux_hw.n; i++)
		for (const char *p = o.aux_hw.v[i]; p; p = strchr(p, ','), p = p ? p + 1 : NULL)
			cap++;
	if (!(*aux = malloc(sizeof **aux * (size_t)cap)))
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	for (int i = 0; i < o.aux_hw.n; i++) {
		const char *p = o.aux_hw.v[i];
		while (p) {
			const char *e = strchr(p, ',');
			char id[32];
			size_t len = e ? (size_t)(e - p) : strlen(p);
			int64_t v;
			snprintf(id, sizeof id, "%.*s", (int)(len < sizeof id ? len : sizeof id - 1), p);
			if (len >= sizeof id || tk_parse_i64(id, &v) || v <= 0)
				return tk_fail(ctx, TK_EINVAL, "--aux-hw: '%.*s' is not a hardware id",
				               (int)len, p);
			(*aux)[(*naux)++] = v;
			p = e ? e + 1 : NULL;
		}
	}
	return EXIT_OK;
}

/* The networks named in names, loaded into nets. */
static int load_networks(tk_ctx *ctx, const opt_list *names, net_list *nets)
{
	if (!names->n)
		return EXIT_OK;
	if (!(nets->v = calloc((size_t)names->n, sizeof *nets->v)))
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	for (int i = 0; i < names->n; i++) {
		int rc = onnx_net_load(names->v[i], &nets->v[i]);
		if (rc)
			return tk_fail(ctx, rc == TK_ENOTFOUND ? TK_EINVAL : rc, NULL);
		nets->n++;
	}
	return EXIT_OK;
}

/* The networks' tasks that have records of the target (so names, malloc'd
 * array of borrowed strings); with weigh, each such task's weight grows by
 * its occurrences in the networks. NULL on out of memory. */
static const char **network_tasks(tr_set *ts, const net_list *nets, int weigh, int *n)
{
	int cap = 0;
	for (int i = 0; i < nets->n; i++)
		cap += nets->v[i]->n;
	const char **v = malloc(sizeof *v * (size_t)(cap ? cap : 1));
	*n = 0;
	if (!v)
		return NULL;
	for (int i = 0; i < nets->n; i++)
		for (int j = 0; j < nets->v[i]->n; j++) {
			const net_task *nt = &nets->v[i]->task[j];
			int found = 0;
			for (int t = 0; t < ts->ntask; t++)
				if (!strcmp(ts->tasks[t].key, nt->task)) {
					ts->tasks[t].weight += weigh ? nt->weight : 0;
					found |= !ts->tasks[t].head; /* the target has records of it */
				}
			if (found)
				v[(*n)++] = nt->task;
		}
	return v;
}

static void free_networks(net_list *nets)
{
	for (int i = 0; i < nets->n; i++)
		net_free(nets->v[i]);
	free(nets->v);
}

#define TRAIN_ROUNDS_UNSET INT64_MIN /* --rounds not given */

int cmd_train(int argc, char **argv, tk_ctx *ctx)
{
	tr_set ts;
	tr_source src;
	tr_fit f;
	tk_store *st;
	const cm_kind *kind;
	char *hold = NULL;
	int64_t *ids = NULL, model_id = 0;
	int nid = 0, rc, feat = FEAT_ITERVAR, from_stdin = 0, status = EXIT_OK, nhold = 0, by_rows = 0;
	int64_t *aux = NULL;
	int naux = 0, nkept = 0;
	double select_frac = 0;
	net_list nets = { 0 }, vnets = { 0 };
	const char **so_tasks_owned = NULL, **so_valid_owned = NULL;

	memset(&ts, 0, sizeof ts);
	memset(&f, 0, sizeof f);
	o.model = "xgb";
	o.objective = "rank";
	o.out = "tunekit.model";
	o.rounds = TRAIN_ROUNDS_UNSET;
	o.aux_fraction = 1;
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "-") || from_stdin)
			return tk_fail(ctx, TK_EINVAL, "unexpected argument '%s'", argv[i]);
		from_stdin = 1;
	}
	if ((rc = cm_lookup(o.model, &kind)))
		return tk_fail(ctx, rc, NULL);
	if (!cm_is_model(kind)) {
		char names[256];
		cm_names(names, sizeof names, 0, 1);
		return tk_fail(ctx, TK_EINVAL, "model %s has nothing to train (%s)", kind->name, names);
	}
	if (strcmp(o.objective, "rank") && strcmp(o.objective, "reg") &&
	    strcmp(o.objective, "validity"))
		return tk_fail(ctx, TK_EINVAL, "unknown objective '%s' (rank, reg or validity)",
		               o.objective);
	if (!strcmp(o.objective, "validity") && !(kind->flags & CM_CLASSIFY)) {
		char names[128];
		cm_names(names, sizeof names, CM_CLASSIFY, 1);
		return tk_fail(ctx, TK_EINVAL, "model %s cannot be a validity classifier (%s)",
		               kind->name, names);
	}
	if (o.feature && (feat = feat_kind_parse(o.feature)) < 0)
		return tk_fail(ctx, TK_EINVAL, "unknown feature kind '%s' (itervar, knob, curve, tlp, graph or"
		               " hidden)",
		               o.feature);
	if (o.feature && !(kind->features & 1u << feat))
		return tk_fail(ctx, TK_EINVAL, "model %s does not take %s features", kind->name,
		               o.feature);
	if (o.tree_method && strcmp(o.tree_method, "auto") && strcmp(o.tree_method, "exact") &&
	    strcmp(o.tree_method, "approx") && strcmp(o.tree_method, "hist"))
		return tk_fail(ctx, TK_EINVAL, "unknown tree method '%s'", o.tree_method);
	if (format_parse(o.format) < 0)
		return tk_fail(ctx, TK_EINVAL, "unknown format '%s' (table, tsv or json)", o.format);
	if (o.holdout < 0 || o.holdout >= 1)
		return tk_fail(ctx, TK_EINVAL, "--holdout needs a fraction from 0 to below 1");
	if ((o.holdout > 0) + (o.holdout_task.n > 0) + (o.holdout_network.n > 0) > 1)
		return tk_fail(ctx, TK_EINVAL, "give one of --holdout, --holdout-task and"
		               " --holdout-network");
	if (o.aux_hw.n > 0 && !(kind->flags & CM_MULTIHEAD)) {
		char names[128];
		cm_names(names, sizeof names, CM_MULTIHEAD, 1);
		return tk_fail(ctx, TK_EINVAL, "model %s has one head; --aux-hw needs a multi-head"
		               " model (%s)", kind->name, names);
	}
	if (o.target_fraction < 0 || o.target_fraction > 1)
		return tk_fail(ctx, TK_EINVAL, "--target-fraction needs a share from 0 to 1");
	if (!(o.aux_fraction > 0 && o.aux_fraction <= 1))
		return tk_fail(ctx, TK_EINVAL, "--aux-fraction needs a share above 0, at most 1");
	if (o.aux_fraction < 1 && !o.aux_hw.n)
		return tk_fail(ctx, TK_EINVAL, "--aux-fraction needs --aux-hw");
	if (o.select && (rc = tr_select_parse(o.select, &select_frac)))
		return tk_fail(ctx, rc, NULL);
	if (o.select && o.target_fraction > 0)
		return tk_fail(ctx, TK_EINVAL, "give one of --select and --target-fraction");
	if (o.valid_task.n && o.valid_network.n)
		return tk_fail(ctx, TK_EINVAL, "give one of --valid-task and --valid-network");
	if ((status = parse_aux(ctx, &aux, &naux)))
		goto out;
	if (from_stdin && naux > 0) {
		status = tk_fail(ctx, TK_EINVAL, "--aux-hw takes the store's records, not a stream");
		goto out;
	}
	if ((status = load_networks(ctx, &o.holdout_network, &nets)) ||
	    (status = load_networks(ctx, &o.valid_network, &vnets)))
		goto out;
	if (o.rounds == 0)
		return tk_fail(ctx, TK_EINVAL, "--rounds needs at least 1 (leave it out for the "
		               "default)");
	if (o.rounds == TRAIN_ROUNDS_UNSET)
		o.rounds = 0; /* the fit's default */
	if (o.rounds < 0 || o.rounds > 1000000 || o.hardware < 0)
		return tk_fail(ctx, TK_EINVAL, "option out of range (see '%s --help')", ctx->prog);
	if (!*o.out)
		return tk_fail(ctx, TK_EINVAL, "--out needs a file name");

	if (from_stdin && (status = read_stream_ids(ctx, &ids, &nid)))
		goto out;
	if ((status = tk_ctx_store(ctx, &st)))
		goto out;
	if (!o.feature && (rc = tr_default_feature(st, kind, &feat))) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}
	tr_load_opts lo = { feat, o.hardware, from_stdin ? ids : NULL, nid, aux, naux };
	if ((rc = tr_load(st, &lo, &ts, &src))) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}
	tr_split_opts so = { o.holdout, o.holdout_task.v, o.holdout_task.n, (uint64_t)ctx->common.seed,
	                     o.valid_task.v, o.valid_task.n };
	if (nets.n)
		so.tasks = so_tasks_owned = network_tasks(&ts, &nets, 1, &so.ntasks);
	if (vnets.n)
		so.valid = so_valid_owned = network_tasks(&ts, &vnets, 0, &so.nvalid);
	if (!(hold = malloc((size_t)ts.n)) || (nets.n && !so_tasks_owned) ||
	    (vnets.n && !so_valid_owned)) {
		status = tk_fail(ctx, TK_ENOMEM, "out of memory");
		goto out;
	}
	if (nets.n && so.ntasks == 0) {
		status = tk_fail(ctx, TK_EINVAL, "no records of the held-out networks' tasks");
		goto out;
	}
	if (vnets.n && so.nvalid == 0) {
		status = tk_fail(ctx, TK_EINVAL, "no records of the validation networks' tasks");
		goto out;
	}
	if ((rc = tr_split(&ts, &so, hold, &nhold, &by_rows))) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}
	if (o.target_fraction > 0 && o.target_fraction < 1)
		tr_subsample(&ts, hold, o.target_fraction, (uint64_t)ctx->common.seed, &nkept);
	if (o.select &&
	    (rc = tr_select_active(&ts, hold, select_frac, (uint64_t)ctx->common.seed, &nkept))) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}

	tell_source(ctx, &ts, &src, from_stdin, feat_kind_name(feat), by_rows, nhold);
	if (!ctx->common.quiet && nkept && o.select)
		fprintf(stderr, "%s: training on %d of the target's records (--select %s)\n", ctx->prog,
		        nkept, o.select);
	else if (!ctx->common.quiet && nkept)
		fprintf(stderr, "%s: training on %d of the target's records (--target-fraction %g)\n",
		        ctx->prog, nkept, o.target_fraction);
	cm_params p;
	cm_params_default(&p);
	p.rank = strcmp(o.objective, "reg") != 0;
	p.validity = !strcmp(o.objective, "validity");
	p.seed = (uint64_t)ctx->common.seed;
	p.rounds = (int)o.rounds;
	p.seq_e = feat_seq_width(feat);
	p.aux_fraction = o.aux_fraction;
	/* One thread: XGBoost's OpenMP workers spin, and on a shared CPU two
	 * threads were 1.5 to 50 times slower than one (exact and hist alike). */
	p.nthread = 1;
	p.tree_method = o.tree_method && strcmp(o.tree_method, "auto") ? o.tree_method : NULL;
	p.progress = progress_epochs;
	p.progress_ctx = ctx;
	/* Nothing is written while the model trains: let a signal end the
	 * process at once rather than after the last round. */
	sig_saved sig;
	sig_default(&sig);
	rc = tr_fit_eval(kind, &p, &ts, hold, &f);
	sig_restore(&sig);
	progress_end(ctx);
	if (!rc && tk_interrupted)
		rc = tk_seterr(TK_EINTR, "interrupted; nothing written");
	if (rc) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}
	/* Before the model: a file that cannot be written leaves nothing saved. */
	if (o.predictions && (status = write_predictions(ctx, o.predictions, &ts, &f)))
		goto out;
	if ((rc = tr_save(st, o.out, &f, &src, feat, &p, &model_id))) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}

	int fmt = out_format(ctx, o.format);
	table *tb = p.validity ? class_table_new() : metrics_table_new();
	if (!tb) {
		status = tk_fail(ctx, TK_ENOMEM, "out of memory");
		goto out;
	}
	if (p.validity) {
		class_row(tb, fmt, "train", &f.ctrain);
		if (f.valid.n > 0)
			class_row(tb, fmt, "valid", &f.cvalid);
		if (f.hold.n > 0)
			class_row(tb, fmt, "holdout", &f.chold);
	} else {
		metrics_row(tb, fmt, "train", &f.mtrain);
		if (f.valid.n > 0)
			metrics_row(tb, fmt, "valid", &f.mvalid);
		if (f.hold.n > 0)
			metrics_row(tb, fmt, "holdout", &f.mhold);
		if (f.hold.n > 0 && nets.n > 1 &&
		    (status = network_rows(ctx, tb, fmt, &ts, &f.hold, &nets))) {
			table_free(tb);
			goto out;
		}
		if (f.hold.n > 0 && o.per_op && (status = op_rows(ctx, tb, fmt, &ts, &f.hold))) {
			table_free(tb);
			goto out;
		}
	}
	status = table_print(tb, stdout, fmt);
	if (!ctx->common.quiet) {
		mf_meta mm;
		memset(&mm, 0, sizeof mm);
		cm_describe(f.m, &mm);
		const char *obj = mf_get(&mm, "objective"), *rounds = mf_get(&mm, "rounds");
		const char *chosen = rounds && f.valid.n > 0 ? " (chosen on the validation tasks)" : "";
		fprintf(stderr, "%s: %s%s%s%s%s%s in %.1f s; wrote %s (store model %lld)\n",
		        ctx->prog, kind->name, obj ? " " : "", obj ? obj : "", rounds ? ", rounds " : "",
		        rounds ? rounds : "", chosen, f.seconds, o.out, (long long)model_id);
	}
out:
	tr_fit_free(&f);
	tr_set_free(&ts);
	free(hold);
	free(ids);
	free(o.holdout_task.v);
	free(o.holdout_network.v);
	free(o.aux_hw.v);
	free(aux);
	free(o.valid_task.v);
	free(o.valid_network.v);
	free(so_tasks_owned);
	free(so_valid_owned);
	free_networks(&nets);
	free_networks(&vnets);
	return status;
}
