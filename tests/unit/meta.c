/*
 * Unit tests of MetaTune's cost model (lib/model/meta.c, included here for
 * its static forward and backward passes): the whole network's gradient
 * (GCN layers with the slot vectors, the gated-sum and max readout, the
 * head) against central finite differences on graphs of real
 * configurations; first-order MAML lowering the few-shot loss of a
 * synthetic family of tasks whose rule flips from task to task; the
 * update's ensemble; the payload's round trip and its refusals (another
 * super-graph, another feature version, damage); bad input.
 *
 * Shape key as in meta.c: B rows, N nodes, F features, G readout width.
 */
#include "../../lib/model/meta.c"

#include "unit.h"

static tk_rng rng;

/* n graph rows of random configurations of task key into x (n, DLEN). */
static int graph_rows(const char *key, float *x, int n, tk_rng *r)
{
	te_prog *p;
	sp_space *sp;
	if (te_task_parse(key, &p) || sp_space_create(p, &sp))
		return -1;
	for (int i = 0; i < n;) {
		sp_config c;
		int valid;
		sp_sample(sp, r, &c);
		if (feat_extract(FEAT_GRAPH, sp, &c, x + (size_t)i * DLEN, &valid) == TK_OK && valid)
			i++;
	}
	sp_space_free(sp);
	te_prog_free(p);
	return 0;
}

/* sum c_b * out_b in double. */
static double objective(meta_net *m, const float *x, const float *c, int B)
{
	float out[8];
	double s = 0;
	load_batch(m, x, B);
	embed_forward(m);
	head_forward(&m->w.h, out, m->a.z1, m->a.z2, m->a.g, B);
	for (int b = 0; b < B; b++)
		s += (double)c[b] * out[b];
	return s;
}

TEST(gradient_matches_finite_differences)
{
	enum { B = 3 };
	float *x = malloc(sizeof *x * B * DLEN), c[B] = { 0.9f, -1.2f, 0.5f };
	meta_net *m;
	tk_rng_seed(&rng, 3, 0);
	CHECK_EQ_INT(net_new(&m), TK_OK);
	if (!x || !m)
		return;
	CHECK_EQ_INT(graph_rows("dense:m=64,n=64,k=64", x, 1, &rng), 0);
	CHECK_EQ_INT(graph_rows("conv2d:c=16,h=14,w=14,k=16,pad=1", x + DLEN, 1, &rng), 0);
	CHECK_EQ_INT(graph_rows("conv2d_winograd:c=2,h=7,w=7,k=16", x + 2 * DLEN, 1, &rng), 0);
	net_init(m, &rng);
	cm_data d = { .n = B, .d = DLEN, .x = x };
	fit_scale(m, &d);
	/* larger slot vectors and gate: every part of the network matters */
	for (int i = 0; i < N * H; i++)
		m->w.p1[i] *= 2.0f;
	objective(m, x, c, B);
	nn_zero(m->grad, m->nparam);
	float dout[B];
	memcpy(dout, c, sizeof dout);
	head_backward(&m->dw.h, m->a.dg, m->a.dz1, m->a.dz2, dout, m->a.g, m->a.z1, m->a.z2,
	              &m->w.h, B);
	embed_backward(m, m->a.dg);
	float **ptrs[META_MAXTENSOR], **dptrs[META_MAXTENSOR];
	size_t sizes[META_MAXTENSOR];
	meta_w w2, dw2;
	int nt = wlist(&w2, ptrs, sizes);
	wlist(&dw2, dptrs, sizes);
	nn_layout(m->param, ptrs, sizes, nt);
	nn_layout(m->grad, dptrs, sizes, nt);
	/* A float32 objective of order 1 has slopes good to about 1e-4 at
	 * h = 1e-3 (rounding in the sums), so each entry is held to 1% of its
	 * tensor's largest gradient plus that much. */
	const double noise = 2e-4;
	double worst = 0, f0 = objective(m, x, c, B);
	int checked = 0, kinks = 0, nonzero = 0, bad = 0;
	for (int t = 0; t < nt; t++) {
		float *p = *ptrs[t], *g = *dptrs[t];
		double gmax = 0;
		for (size_t i = 0; i < sizes[t]; i++)
			gmax = fabs(g[i]) > gmax ? fabs(g[i]) : gmax;
		nonzero += gmax > 1e-6;
		for (int k = 0; k < 12; k++) {
			size_t i = tk_rng_below64(&rng, sizes[t]);
			float old = p[i], h = 1e-3f;
			p[i] = old + h;
			double up = objective(m, x, c, B);
			p[i] = old - h;
			double down = objective(m, x, c, B);
			p[i] = old;
			/* a ReLU or a max that switches within +-h: no derivative */
			if (fabs((up - f0) - (f0 - down)) / h > 1e-2 * gmax + 2 * noise) {
				if (getenv("META_DEBUG"))
					fprintf(stderr, "kink: tensor %d entry %zu: slopes %g, %g\n", t, i,
					        (up - f0) / h, (f0 - down) / h);
				kinks++;
				continue;
			}
			double num = (up - down) / (2.0 * h), err = fabs(num - g[i]);
			if (err > 1e-2 * gmax + noise) {
				fprintf(stderr, "tensor %d entry %zu: analytic %g numeric %g\n", t, i, g[i], num);
				bad++;
			}
			err /= gmax + noise;
			worst = err > worst ? err : worst;
			checked++;
		}
	}
	if (getenv("META_DEBUG"))
		fprintf(stderr, "checked %d kinks %d worst %g\n", checked, kinks, worst);
	CHECK_EQ_INT(nonzero, nt); /* every tensor gets a gradient */
	CHECK(kinks < checked / 10);
	CHECK(checked > 100);
	CHECK_EQ_INT(bad, 0);
	net_free(m);
	free(x);
}

/* Placeholder nodes and unused edge pairs change nothing but through
 * their slot; a row's score does not depend on the others in its batch. */
TEST(rows_are_independent)
{
	float *x = malloc(sizeof *x * 3 * DLEN), out[3], alone;
	meta_net *m;
	tk_rng_seed(&rng, 5, 0);
	CHECK_EQ_INT(net_new(&m), TK_OK);
	if (!x || !m)
		return;
	graph_rows("dense:m=32,n=48,k=64", x, 3, &rng);
	net_init(m, &rng);
	CHECK_EQ_INT(mpredict(m, x, 3, DLEN, NULL, out), TK_OK);
	CHECK_EQ_INT(mpredict(m, x + DLEN, 1, DLEN, NULL, &alone), TK_OK);
	CHECK_NEAR(alone, out[1], 1e-5 * (1 + fabs(out[1])));
	/* an edge outside the super-graph: one line, TK_EINVAL */
	x[N * F + 2 * 3] = (float)N;
	CHECK_EQ_INT(mpredict(m, x, 1, DLEN, NULL, out), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "outside the super-graph"));
	CHECK_EQ_INT(mpredict(m, x, 1, DLEN - 1, NULL, out), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "graph vectors"));
	net_free(m);
	free(x);
}

/*
 * A family of few-shot tasks that share a rule up to a task's own offset
 * and slope: task t is a dense GEMM shape whose label is c_t + a_t z, z the
 * log extent of the configuration's innermost loop scaled to about [-1, 1],
 * with c_t and a_t drawn per task. A head pre-trained on every task
 * together learns the average rule; a few shots tell c_t and a_t, and
 * MAML makes the head quick to learn them.
 */
#define SYN_TASKS 12
#define SYN_ROWS 24

static void synthetic(float *x, float *y, int *first, int *n, int *cls)
{
	static const int dims[SYN_TASKS][3] = {
		{ 64, 64, 64 }, { 32, 128, 64 }, { 128, 32, 64 }, { 96, 96, 48 },
		{ 48, 64, 128 }, { 64, 48, 96 }, { 80, 64, 64 }, { 64, 80, 32 },
		{ 112, 48, 64 }, { 40, 120, 64 }, { 72, 72, 72 }, { 56, 96, 40 },
	};
	tk_rng r;
	tk_rng_seed(&r, 17, 4);
	for (int t = 0; t < SYN_TASKS; t++) {
		char key[64];
		snprintf(key, sizeof key, "dense:m=%d,n=%d,k=%d", dims[t][0], dims[t][1], dims[t][2]);
		first[t] = t * SYN_ROWS;
		n[t] = SYN_ROWS;
		cls[t] = t % 3;
		graph_rows(key, x + (size_t)first[t] * DLEN, SYN_ROWS, &r);
		float c = 0.3f + 0.4f * (float)tk_rng_unif(&r), a = 0.05f + 0.3f * (float)tk_rng_unif(&r);
		for (int i = 0; i < SYN_ROWS; i++) {
			const float *row = x + (size_t)(first[t] + i) * DLEN;
			float e = 0; /* lg extent of the innermost loop: the iterval at the deepest level */
			int deepest = 0;
			for (int j = 1 + FEAT_GRAPH_LOOPS; j < N; j++)
				if (row[j * F + 2] > 0 && row[j * F + 4] > deepest) {
					deepest = (int)row[j * F + 4];
					e = row[j * F + 3];
				}
			y[first[t] + i] = c + a * (e - 2.5f) / 2.5f;
		}
	}
}

static int ncalls;
static double first_loss, last_loss;

static int on_step(void *ctx, const meta_progress *p)
{
	if (getenv("META_DEBUG") && (p->step % 20 == 0 || p->phase == META_PRETRAIN))
		fprintf(stderr, "phase %d step %d loss %.4f before %.4f\n", p->phase, p->step, p->loss,
		        p->before);
	if (p->phase == META_MAML) {
		if (p->step <= 50)
			first_loss += p->loss / 50;
		if (p->step > p->total - 50)
			last_loss += p->loss / 50;
	}
	ncalls++;
	return 0;
}

TEST(maml_lowers_the_few_shot_loss)
{
	const int R = SYN_TASKS * SYN_ROWS;
	float *x = malloc(sizeof *x * (size_t)R * DLEN), *y = malloc(sizeof *y * R);
	int first[SYN_TASKS], n[SYN_TASKS], cls[SYN_TASKS];
	if (!x || !y)
		return;
	synthetic(x, y, first, n, cls);
	cm_data d = { .n = R, .d = DLEN, .x = x, .y = y };
	meta_tasks t = { SYN_TASKS, first, n, cls };
	meta_opts o;
	meta_opts_default(&o);
	o.epochs = 8;
	o.meta_steps = 200;
	o.alpha = 0.05;
	o.beta = 0.003;
	o.shots = 4;
	o.queries = 8;
	o.ways = 2;
	o.inner_steps = 5;
	o.finetune_steps = 5;
	o.tasks_per_batch = 8;
	cm_model *mm;
	ncalls = 0;
	CHECK_EQ_INT(meta_pretrain(&o, &d, on_step, NULL, &mm), TK_OK);
	CHECK_EQ_INT(ncalls, 8);
	if (!mm)
		return;
	/* the pre-trained head, adapted with the same steps MAML will use */
	meta_net *m = cm_state(mm, &cm_meta);
	m->alpha = (float)o.alpha;
	m->ft_steps = o.finetune_steps;
	double pre_before, pre_after, before, after;
	int nt;
	CHECK_EQ_INT(meta_eval(mm, &d, &t, 8, 3, &pre_before, &pre_after, &nt), TK_OK);
	CHECK_EQ_INT(nt, SYN_TASKS);
	first_loss = last_loss = 0;
	CHECK_EQ_INT(meta_maml(mm, &o, &d, &t, on_step, NULL), TK_OK);
	CHECK_EQ_INT(ncalls, 8 + 200);
	CHECK(m->flags & META_TRAINED);
	CHECK_EQ_INT(meta_eval(mm, &d, &t, 8, 3, &before, &after, &nt), TK_OK);
	fprintf(stderr, "maml: query loss %.4f -> %.4f over the meta-steps; few-shot MSE of the"
	        " pre-trained head %.4f (adapted %.4f), after MAML %.4f (adapted %.4f)\n",
	        first_loss, last_loss, pre_before, pre_after, before, after);
	CHECK(last_loss < first_loss);
	CHECK(after < pre_after);
	CHECK(after < before);
	/* too few rows per task for the shots and queries asked */
	o.shots = 20;
	CHECK_EQ_INT(meta_maml(mm, &o, &d, &t, NULL, NULL), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "the most any has is 24"));
	/* MAML needs a meta model */
	CHECK_EQ_INT(meta_maml(NULL, &o, &d, &t, NULL, NULL), TK_EINVAL);
	cm_free(mm);
	free(x);
	free(y);
}

TEST(update_is_an_ensemble_of_heads)
{
	float *x = malloc(sizeof *x * 40 * DLEN), y[40], mu[40], sd[40], base[40];
	meta_net *m;
	tk_rng_seed(&rng, 9, 0);
	CHECK_EQ_INT(net_new(&m), TK_OK);
	if (!x || !m)
		return;
	graph_rows("conv2d:c=16,h=14,w=14,k=32,pad=1", x, 40, &rng);
	for (int i = 0; i < 40; i++)
		y[i] = (float)tk_rng_unif(&rng);
	net_init(m, &rng);
	CHECK_EQ_INT(mdist(m, x, 40, DLEN, base, sd), TK_OK);
	for (int i = 0; i < 40; i++)
		CHECK(sd[i] == 0); /* no update yet: the base head alone */
	cm_params p;
	cm_params_default(&p);
	cm_data d = { .n = 40, .d = DLEN, .x = x, .y = y };
	CHECK_EQ_INT(mupdate(m, &p, &d), TK_OK);
	CHECK_EQ_INT(m->nens, m->heads);
	CHECK_EQ_INT(mdist(m, x, 40, DLEN, mu, sd), TK_OK);
	int spread = 0;
	double l0 = 0, l1 = 0;
	for (int i = 0; i < 40; i++) {
		spread += sd[i] > 0;
		l0 += (base[i] - y[i]) * (base[i] - y[i]);
		l1 += (mu[i] - y[i]) * (mu[i] - y[i]);
	}
	CHECK(spread > 30);
	CHECK(l1 < l0);
	/* the base head is kept: a second update starts from it again */
	float head0 = m->param[m->head_off];
	CHECK_EQ_INT(mupdate(m, &p, &d), TK_OK);
	CHECK(m->param[m->head_off] == head0);
	net_free(m);
	free(x);
}

TEST(payload_round_trip_and_refusals)
{
	float *x = malloc(sizeof *x * 4 * DLEN), a[4], b[4];
	meta_net *m;
	void *buf, *st;
	size_t len;
	tk_rng_seed(&rng, 11, 0);
	CHECK_EQ_INT(net_new(&m), TK_OK);
	if (!x || !m)
		return;
	graph_rows("batch_matmul:b=4,m=32,n=32,k=32", x, 4, &rng);
	net_init(m, &rng);
	m->scale[3] = 0.25f;
	m->alpha = 0.02f;
	m->flags = META_TRAINED;
	CHECK_EQ_INT(msave(m, &buf, &len), TK_OK);
	CHECK_EQ_INT(mload(buf, len, &st), TK_OK);
	if (st) {
		meta_net *m2 = st;
		CHECK_NEAR(m2->scale[3], 0.25, 0);
		CHECK_NEAR(m2->alpha, 0.02, 1e-7);
		CHECK(m2->flags & META_TRAINED);
		CHECK_EQ_INT(mpredict(m, x, 4, DLEN, NULL, a), TK_OK);
		CHECK_EQ_INT(mpredict(m2, x, 4, DLEN, NULL, b), TK_OK);
		CHECK(!memcmp(a, b, sizeof a));
		net_free(m2);
	}
	unsigned char *p = buf;
	/* another super-graph */
	p[24] ^= 1;
	CHECK_EQ_INT(mload(buf, len, &st), TK_ECORRUPT);
	CHECK(strstr(tk_errmsg(), "super-graph") && strstr(tk_errmsg(), "pretrain it again"));
	p[24] ^= 1;
	/* another version of the graph features */
	p[32] += 1;
	CHECK_EQ_INT(mload(buf, len, &st), TK_ECORRUPT);
	CHECK(strstr(tk_errmsg(), "graph features version"));
	p[32] -= 1;
	/* damaged parameters, a short payload, another magic */
	p[len - 3] ^= 0x40;
	CHECK_EQ_INT(mload(buf, len, &st), TK_ECORRUPT);
	p[len - 3] ^= 0x40;
	CHECK_EQ_INT(mload(buf, len - 1, &st), TK_ECORRUPT);
	CHECK_EQ_INT(mload(buf, 10, &st), TK_ECORRUPT);
	p[0] ^= 1;
	CHECK_EQ_INT(mload(buf, len, &st), TK_ECORRUPT);
	p[0] ^= 1;
	CHECK_EQ_INT(mload(buf, len, &st), TK_OK);
	net_free(st);
	/* through the table: a clone predicts the same */
	cm_model *mm, *copy;
	CHECK_EQ_INT(cm_wrap(&cm_meta, m, &mm), TK_OK);
	CHECK_EQ_INT(cm_clone(mm, &copy), TK_OK);
	CHECK_EQ_INT(cm_predict(copy, x, 4, DLEN, NULL, b), TK_OK);
	CHECK(!memcmp(a, b, sizeof a));
	CHECK(cm_state(copy, &cm_meta) != NULL && cm_state(copy, cm_kinds[0]) == NULL);
	cm_free(copy);
	cm_free(mm);
	free(buf);
	free(x);
}

TEST(fit_rejects_bad_input)
{
	float x[DLEN] = { 0 }, y[2] = { 0.5f, NAN };
	cm_params p;
	void *st;
	cm_params_default(&p);
	cm_data d = { .n = 1, .d = DLEN, .x = x, .y = y };
	CHECK_EQ_INT(mfit(&p, &d, NULL, &st), TK_EINVAL); /* one row */
	d.d = 100;
	CHECK_EQ_INT(mfit(&p, &d, NULL, &st), TK_EINVAL);
	CHECK(st == NULL);
	meta_opts o;
	meta_opts_default(&o);
	CHECK_EQ_INT(meta_opts_check(&o), TK_OK);
	o.alpha = 0;
	CHECK_EQ_INT(meta_opts_check(&o), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "--alpha"));
}

/* The operator list a meta model names (tk_list_has): whole items only. */
TEST(operator_list)
{
	const char *ops = "conv1d,conv2d,conv2d_transpose";
	CHECK(tk_list_has(ops, "conv2d", 6));
	CHECK(tk_list_has(ops, "conv1d:c=3", 6));
	CHECK(tk_list_has(ops, "conv2d_transpose", 16));
	CHECK(!tk_list_has(ops, "conv2", 5));
	CHECK(!tk_list_has(ops, "conv2d_t", 8));
	CHECK(!tk_list_has(ops, "dense", 5));
	CHECK(!tk_list_has("", "dense", 5));
	CHECK(tk_list_has("dense", "dense", 5));
	CHECK(!tk_list_has("dense", "", 0));
}

UNIT_MAIN(gradient_matches_finite_differences, rows_are_independent, maml_lowers_the_few_shot_loss,
          update_is_an_ensemble_of_heads, payload_round_trip_and_refusals, fit_rejects_bad_input,
          operator_list)
