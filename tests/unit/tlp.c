/*
 * Unit tests of the TLP cost model (lib/model/tlp.c, included here for its
 * static forward and backward passes): the whole network's gradient against
 * central finite differences on a ragged, two-head batch; padding positions
 * that cannot change a score; fits that learn a ranking (tlp), keep their
 * best epoch on validation rows, and a target head that learns the
 * target's rule, not the auxiliary one (mtl-tlp); batches split over two
 * threads; the payload's round trip and refusals; bad input.
 *
 * Shape key as in tlp.c: B sequences, L positions, E floats per position.
 */
#include "../../lib/model/tlp.c"

#include "unit.h"

static tk_rng rng;

/* A batch of B sequences of lengths len[b] (padding all zero). */
static void random_batch(float *x /* (B, L*E) */, const int *len, int B, int L, int E)
{
	memset(x, 0, sizeof *x * (size_t)B * L * E);
	for (int b = 0; b < B; b++)
		for (int l = 0; l < len[b]; l++) {
			float *p = x + ((size_t)b * L + l) * E;
			p[l % 3] = 1; /* a one-hot kind: never an all-zero row */
			for (int e = 3; e < E; e++)
				p[e] = (float)tk_rng_normal(&rng);
		}
}

/* sum c_b * score_b in double. */
static double objective(tlp_net *n, const float *x, const int *head, const float *c, int B)
{
	float score[8];
	double s = 0;
	net_forward(n, score, x, head, B);
	for (int b = 0; b < B; b++)
		s += (double)c[b] * score[b];
	return s;
}

/* The gradient of a two-head network of file version `version` (2: with
 * the shared decoder) against central finite differences. */
static void check_gradient(unsigned version)
{
	enum { E = 5, L = 4, B = 4, K = 2 };
	int len[B] = { 4, 2, 3, 1 }, head[B] = { 0, 0, 1, 1 };
	float x[B * L * E], c[B] = { 0.7f, -1.3f, 0.4f, 1.1f };
	tlp_net *n;
	tk_rng_seed(&rng, 2 + version, 0);
	CHECK_EQ_INT(net_new(E, L, K, version, &n), TK_OK);
	CHECK_EQ_INT(n->shared, version >= 2);
	net_init(n, &rng);
	/* The heads' last layers start at zero with a shared decoder: make
	 * them non-zero, so that every layer of a head has a gradient. */
	for (int k = 0; k < K; k++) {
		nn_init_uniform(n->w.dec_w[k][3], (size_t)dec_dim[2], 0.1f, &rng);
		nn_init_uniform(n->w.dec_b[k][3], 1, 0.1f, &rng);
	}
	random_batch(x, len, B, L, E);
	objective(n, x, head, c, B);
	nn_zero(n->grad, n->nparam);
	net_backward(n, c, head, B);
	/* Every tensor's worst error over a sample of its entries. */
	float **ptrs[TLP_MAXTENSOR], **dptrs[TLP_MAXTENSOR];
	size_t sizes[TLP_MAXTENSOR];
	int nt = wlist(&n->w, E, K, n->shared, ptrs, sizes);
	wlist(&n->dw, E, K, n->shared, dptrs, sizes);
	double worst = 0, f0 = objective(n, x, head, c, B);
	int checked = 0, kinks = 0;
	for (int t = 0; t < nt; t++) {
		float *p = *ptrs[t], *g = *dptrs[t];
		double gmax = 1e-2;
		for (size_t i = 0; i < sizes[t]; i++)
			gmax = fabs(g[i]) > gmax ? fabs(g[i]) : gmax;
		for (int k = 0; k < 8; k++) {
			size_t i = tk_rng_below64(&rng, sizes[t]);
			float old = p[i], h = 1e-3f;
			p[i] = old + h;
			double up = objective(n, x, head, c, B);
			p[i] = old - h;
			double down = objective(n, x, head, c, B);
			p[i] = old;
			/* A ReLU that switches within +-h makes the one-sided slopes
			 * differ: no derivative to compare there. */
			if (fabs((up - f0) - (f0 - down)) / h > 1e-2 * gmax) {
				kinks++;
				continue;
			}
			double num = (up - down) / (2.0 * h), err = fabs(num - g[i]) / gmax;
			worst = err > worst ? err : worst;
			if (err > 1e-2)
				fprintf(stderr, "tensor %d entry %zu: analytic %g numeric %g\n", t, i, g[i], num);
			checked++;
		}
	}
	CHECK(kinks < checked / 10);
	CHECK(checked > 100);
	CHECK(worst < 1e-2);
	/* Head 1's decoder got gradient only from rows of head 1: zero the
	 * coefficients of head 1 and its gradient vanishes. */
	float c0[B] = { c[0], c[1], 0, 0 };
	objective(n, x, head, c0, B);
	nn_zero(n->grad, n->nparam);
	net_backward(n, c0, head, B);
	double g1 = 0;
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < dec_dim[i]; j++)
			g1 += fabs(n->dw.dec_b[1][i][j]);
	CHECK(g1 == 0);
	net_free(n);
}

TEST(gradient_matches_finite_differences)
{
	check_gradient(1);
	check_gradient(TLP_VERSION);
}

TEST(heads_start_as_the_shared_decoder)
{
	/* Every head of a new multi-head network scores as the shared decoder
	 * alone; a version 1 file (no shared decoder) saves and loads as it was. */
	enum { E = 5, L = 4, B = 3 };
	int len[B] = { 4, 2, 3 }, h0[B] = { 0, 0, 0 }, h2[B] = { 2, 2, 2 };
	float x[B * L * E], s0[B], s2[B], s1[B];
	tlp_net *n, *v1;
	void *buf, *st;
	size_t blen;
	tk_rng_seed(&rng, 5, 0);
	random_batch(x, len, B, L, E);
	CHECK_EQ_INT(net_new(E, L, 3, TLP_VERSION, &n), TK_OK);
	net_init(n, &rng);
	net_forward(n, s0, x, h0, B);
	net_forward(n, s2, x, h2, B);
	for (int b = 0; b < B; b++)
		CHECK(s0[b] == s2[b] && s0[b] != 0);
	CHECK_EQ_INT(net_new(E, L, 3, 1, &v1), TK_OK);
	net_init(v1, &rng);
	CHECK(v1->nparam < n->nparam);
	net_forward(v1, s1, x, h0, B);
	CHECK_EQ_INT(tsave(v1, &buf, &blen), TK_OK);
	CHECK_EQ_INT(tload(buf, blen, &st), TK_OK);
	CHECK_EQ_INT(((tlp_net *)st)->version, 1);
	net_forward(st, s0, x, h0, B);
	for (int b = 0; b < B; b++)
		CHECK(s0[b] == s1[b]);
	free(buf);
	net_free(st);
	net_free(v1);
	net_free(n);
}

TEST(padding_does_not_change_scores)
{
	enum { E = 4, L = 6 };
	int len[2] = { 3, 3 };
	float x[2 * L * E], s[2];
	tlp_net *n;
	tk_rng_seed(&rng, 5, 0);
	CHECK_EQ_INT(net_new(E, L, 1, TLP_VERSION, &n), TK_OK);
	net_init(n, &rng);
	random_batch(x, len, 1, L, E);
	/* Sequence 1: the same three positions; its score must equal 0's
	 * whatever the other sequence in the batch holds. */
	memcpy(x + L * E, x, sizeof *x * L * E);
	net_forward(n, s, x, NULL, 2);
	CHECK_NEAR(s[0], s[1], 1e-5 * (1 + fabs(s[0])));
	float alone;
	net_forward(n, &alone, x, NULL, 1);
	CHECK_NEAR(alone, s[0], 1e-5 * (1 + fabs(s[0])));
	net_free(n);
}

/* Synthetic tasks: sequences of 2..8 positions; the rule f scores the
 * positions of kind 0 by their first argument, g by their second. */
enum { SE = 6, SL = 8 };
static double rule(const float *x, int which)
{
	double s = 0;
	for (int l = 0; l < SL; l++) {
		const float *p = x + l * SE;
		if (p[0] == 1)
			s += which ? p[4] : tanh(p[3]) + 0.5 * p[3] * p[3];
	}
	return s;
}

static void synthetic(float *x, float *y, unsigned *group, int ngroup, int per, int which)
{
	for (int g = 0; g < ngroup; g++) {
		double best = -1e30, worst = 1e30, v[256];
		for (int i = 0; i < per; i++) {
			int row = g * per + i, len = 2 + (int)tk_rng_below(&rng, SL - 1);
			random_batch(x + (size_t)row * SL * SE, &len, 1, SL, SE);
			v[i] = rule(x + (size_t)row * SL * SE, which);
			best = v[i] > best ? v[i] : best;
			worst = v[i] < worst ? v[i] : worst;
		}
		for (int i = 0; i < per; i++)
			y[g * per + i] = (float)((v[i] - worst) / (best - worst + 1e-9));
		group[g] = (unsigned)per;
	}
}

/* Spearman-free check: the share of pairs of one group the scores order
 * as the labels do. */
static double pair_accuracy(const float *p, const float *y, int ngroup, int per)
{
	long ok = 0, all = 0;
	for (int g = 0; g < ngroup; g++)
		for (int i = 0; i < per; i++)
			for (int j = 0; j < per; j++) {
				int a = g * per + i, b = g * per + j;
				if (y[a] > y[b] + 0.05f) {
					all++;
					ok += p[a] > p[b];
				}
			}
	return all ? (double)ok / all : 0;
}

TEST(tlp_learns_a_ranking)
{
	enum { G = 24, PER = 40, N = G * PER, GT = 6, NT = GT * PER };
	static float x[N * SL * SE], y[N], xt[NT * SL * SE], yt[NT], p[NT];
	unsigned group[G], gt[GT];
	tk_rng_seed(&rng, 11, 0);
	synthetic(x, y, group, G, PER, 0);
	synthetic(xt, yt, gt, GT, PER, 0);
	cm_params cp;
	cm_params_default(&cp);
	cp.seq_e = SE;
	cp.rounds = 12;
	cm_data d = { N, SL * SE, x, y, G, group, NULL, NULL, 0, NULL };
	cm_model *m;
	CHECK_EQ_INT(cm_fit(&cm_tlp, &cp, &d, NULL, &m), TK_OK);
	CHECK_EQ_INT(cm_predict(m, xt, NT, SL * SE, NULL, p), TK_OK);
	double acc = pair_accuracy(p, yt, GT, PER);
	CHECK(acc > 0.85);
	/* The payload round trip predicts the same; damaged payloads fail. */
	void *buf;
	size_t len;
	cm_model *m2;
	float p2[NT];
	CHECK_EQ_INT(cm_save(m, &buf, &len), TK_OK);
	CHECK_EQ_INT(cm_load(&cm_tlp, buf, len, &m2), TK_OK);
	CHECK_EQ_INT(cm_predict(m2, xt, NT, SL * SE, NULL, p2), TK_OK);
	CHECK(!memcmp(p, p2, sizeof p2));
	((unsigned char *)buf)[len - 1] ^= 1;
	cm_model *m3 = NULL;
	CHECK_EQ_INT(cm_load(&cm_tlp, buf, len, &m3), TK_ECORRUPT);
	((unsigned char *)buf)[4] = 9; /* another version */
	CHECK_EQ_INT(cm_load(&cm_tlp, buf, len, &m3), TK_ECORRUPT);
	CHECK_EQ_INT(cm_load(&cm_tlp, buf, 10, &m3), TK_ECORRUPT);
	CHECK(m3 == NULL);
	free(buf);
	/* Rows of another length are refused. */
	CHECK_EQ_INT(cm_predict(m, xt, 2, SL * SE - 1, NULL, p2), TK_EINVAL);
	/* An update fine-tunes the same network: it still ranks, and differs. */
	CHECK_EQ_INT(cm_update(m, &cp, &d), TK_OK);
	CHECK_EQ_INT(cm_predict(m, xt, NT, SL * SE, NULL, p2), TK_OK);
	CHECK(memcmp(p, p2, sizeof p2) != 0);
	CHECK(pair_accuracy(p2, yt, GT, PER) > 0.85);
	cm_data bad = d;
	bad.d = SL * SE - SE;
	CHECK_EQ_INT(cm_update(m, &cp, &bad), TK_EINVAL);
	cm_free(m);
	cm_free(m2);
}

/* With validation rows the fit keeps its best epoch on them: it ranks them
 * at least as well as the same fit without them (the same trajectory to its
 * last epoch), says which epoch as its "rounds", and is that last epoch's
 * network when the last was the best. */
TEST(tlp_keeps_the_best_epoch_on_validation_rows)
{
	enum { G = 12, PER = 24, N = G * PER, GV = 4, NV = GV * PER, EP = 8 };
	static float x[N * SL * SE], y[N], xv[NV * SL * SE], yv[NV], pa[NV], pb[NV];
	unsigned group[G], gv[GV];
	tk_rng_seed(&rng, 17, 0);
	synthetic(x, y, group, G, PER, 0);
	synthetic(xv, yv, gv, GV, PER, 1); /* another rule: fitting x need not help */
	cm_params cp;
	cm_params_default(&cp);
	cp.seq_e = SE;
	cp.rounds = EP;
	cp.early_stop = 100;
	cm_data d = { N, SL * SE, x, y, G, group, NULL, NULL, 0, NULL };
	cm_data v = { NV, SL * SE, xv, yv, GV, gv, NULL, NULL, 0, NULL };
	cm_model *a, *b;
	CHECK_EQ_INT(cm_fit(&cm_tlp, &cp, &d, &v, &a), TK_OK);
	CHECK_EQ_INT(cm_fit(&cm_tlp, &cp, &d, NULL, &b), TK_OK);
	CHECK_EQ_INT(cm_predict(a, xv, NV, SL * SE, NULL, pa), TK_OK);
	CHECK_EQ_INT(cm_predict(b, xv, NV, SL * SE, NULL, pb), TK_OK);
	void *work = malloc(cm_ndcg_work(NV));
	double na = cm_ndcg(NV, yv, pa, GV, gv, work), nb = cm_ndcg(NV, yv, pb, GV, gv, work);
	CHECK(na >= nb);
	mf_meta ma = { 0 }, mb = { 0 };
	CHECK_EQ_INT(cm_describe(a, &ma), TK_OK);
	CHECK_EQ_INT(cm_describe(b, &mb), TK_OK);
	int ra = atoi(mf_get(&ma, "rounds"));
	CHECK(ra >= 1 && ra <= EP);
	CHECK_EQ_INT(atoi(mf_get(&mb, "rounds")), EP);
	if (ra == EP)
		CHECK(!memcmp(pa, pb, sizeof pa));
	else
		CHECK(na > nb);
	/* Validation rows of another length are refused. */
	cm_model *c = NULL;
	v.d = SL * SE - SE;
	CHECK_EQ_INT(cm_fit(&cm_tlp, &cp, &d, &v, &c), TK_EINVAL);
	CHECK(c == NULL);
	free(work);
	cm_free(a);
	cm_free(b);
}

TEST(mtl_tlp_target_head_learns_the_target)
{
	/* Head 0 (target): rule f on few groups; head 1 (auxiliary): rule g
	 * on many. The target head must rank by f. */
	enum { GA = 16, GB = 8, PER = 40, N = (GA + GB) * PER, GT = 6, NT = GT * PER };
	static float x[N * SL * SE], y[N], xt[NT * SL * SE], yt[NT], p[NT];
	static int head[N];
	unsigned group[GA + GB], gt[GT];
	tk_rng_seed(&rng, 13, 0);
	synthetic(x, y, group, GB, PER, 0);
	synthetic(x + (size_t)GB * PER * SL * SE, y + GB * PER, group + GB, GA, PER, 1);
	for (int i = 0; i < N; i++)
		head[i] = i >= GB * PER;
	synthetic(xt, yt, gt, GT, PER, 0);
	cm_params cp;
	cm_params_default(&cp);
	cp.seq_e = SE;
	cp.rounds = 30;
	cm_data d = { N, SL * SE, x, y, GA + GB, group, NULL, head, 0, NULL };
	cm_model *m;
	/* tlp has one head: it refuses rows of other hardware. */
	CHECK_EQ_INT(cm_fit(&cm_tlp, &cp, &d, NULL, &m), TK_EINVAL);
	CHECK_EQ_INT(cm_fit(&cm_mtl_tlp, &cp, &d, NULL, &m), TK_OK);
	CHECK_EQ_INT(cm_predict(m, xt, NT, SL * SE, NULL, p), TK_OK);
	CHECK(pair_accuracy(p, yt, GT, PER) > 0.8);
	cm_free(m);
}

/* An epoch's ranking groups with aux_fraction: every group of the
 * target's rows each epoch, a share of the auxiliary's drawn afresh, all
 * of them at 1. */
TEST(epochs_draw_a_share_of_the_auxiliary_rows)
{
	enum { GT = 4, GA = 8, PER = 320, N = (GT + GA) * PER, EP = 50 };
	static float y[N];
	static int head[N], order[N], start[N], size[N];
	static unsigned group[GT + GA];
	static int seen[N / TLP_CHUNK];
	for (int g = 0; g < GT + GA; g++)
		group[g] = PER;
	for (int i = 0; i < N; i++)
		head[i] = i >= GT * PER ? 1 + (i / PER) % 2 : 0;
	cm_data d = { N, 1, y, y, GT + GA, group, NULL, head, 0, NULL };
	tk_rng_seed(&rng, 5, 0);
	long target = 0, aux = 0;
	for (int e = 0; e < EP; e++) {
		int nc = epoch_chunks(&d, 0.25, &rng, order, start, size);
		for (int c = 0; c < nc; c++) {
			CHECK_EQ_INT(size[c], TLP_CHUNK);
			int h = head[order[start[c]]];
			for (int k = 1; k < size[c]; k++)
				CHECK_EQ_INT(head[order[start[c] + k]], h);
			target += h == 0;
			aux += h > 0;
			seen[start[c] / TLP_CHUNK] = 1;
		}
	}
	CHECK_EQ_INT(target, (long)EP * GT * PER / TLP_CHUNK);
	long all = (long)EP * GA * PER / TLP_CHUNK; /* 4000 groups, 1000 expected */
	CHECK(aux > all / 4 - 100 && aux < all / 4 + 100);
	for (int c = 0; c < N / TLP_CHUNK; c++)
		CHECK(seen[c]); /* over the epochs, every group */
	CHECK_EQ_INT(epoch_chunks(&d, 1, &rng, order, start, size), N / TLP_CHUNK);
	d.head = NULL; /* one head: nothing is auxiliary */
	CHECK_EQ_INT(epoch_chunks(&d, 0.25, &rng, order, start, size), N / TLP_CHUNK);
}

/* Moses' ticket in one epoch of one batch: the parameters outside the
 * ticket drawn from the saliency |w * dL/dw| on the batch only shrink, all
 * by the same factor 1 - lr x decay; those inside are trained. */
TEST(ticket_trains_the_salient_and_decays_the_rest)
{
	enum { G = 4, PER = 24, N = G * PER };
	static float x[N * SL * SE], y[N];
	unsigned group[G];
	tk_rng_seed(&rng, 17, 0);
	synthetic(x, y, group, G, PER, 0);
	tlp_net *n;
	CHECK_EQ_INT(net_new(SE, SL, 1, TLP_VERSION, &n), TK_OK);
	n->rank = 1;
	net_init(n, &rng);
	/* The saliency on the whole batch (each group is one chunk, the
	 * lambdarank loss a sum over them) and the ticket of half. */
	size_t P = n->nparam;
	float *before = malloc(sizeof *before * P), *xi = malloc(sizeof *xi * P);
	float *work = malloc(sizeof *work * P), score[N], dscore[N];
	unsigned char *mask = malloc(P);
	int iwork[N];
	net_forward(n, score, x, NULL, N);
	memset(dscore, 0, sizeof dscore);
	nn_lambdarank_loss(dscore, iwork, score, y, group, G);
	nn_zero(n->grad, P);
	net_backward(n, dscore, NULL, N);
	nn_saliency(xi, n->param, n->grad, P);
	CHECK_EQ_INT(nn_ticket_mask(mask, xi, P, 0.5, 0, work), (P + 1) / 2);
	memcpy(before, n->param, sizeof *before * P);
	cm_params cp;
	cm_params_default(&cp);
	cp.seq_e = SE;
	cm_adapt_opts a;
	cm_adapt_default(&a);
	a.method = CM_ADAPT_TICKET;
	a.epochs = 1;
	a.decay = 100;
	a.lr = 1e-3;
	cm_data d = { N, SL * SE, x, y, G, group, NULL, NULL, 0, NULL };
	cm_adapt_info info;
	CHECK_EQ_INT(tadapt(n, &cp, &a, &d, &info), TK_OK);
	CHECK_EQ_INT(info.steps, 1);
	CHECK_NEAR(info.trained, 0.5, 1e-3);
	/* one step at the warm-up's rate, lr / 2 */
	double c = 1 - 0.5e-3 * 100;
	long out = 0, out_scaled = 0, in = 0, in_scaled = 0;
	for (size_t i = 0; i < P; i++) {
		if (before[i] == 0)
			continue;
		int scaled = fabs(n->param[i] - c * before[i]) <= 1e-6 * fabs(before[i]);
		if (mask[i])
			in++, in_scaled += scaled;
		else
			out++, out_scaled += scaled;
	}
	CHECK(out > 0 && in > 0);
	CHECK(out_scaled >= out - out / 1000);   /* summation order may flip a tie */
	CHECK(in_scaled <= in / 1000);
	/* Fine-tuning trains every parameter: none shrinks by c. */
	memcpy(n->param, before, sizeof *before * P);
	a.method = CM_ADAPT_FINETUNE;
	CHECK_EQ_INT(tadapt(n, &cp, &a, &d, &info), TK_OK);
	CHECK_NEAR(info.trained, 1, 1e-9);
	long scaled = 0;
	for (size_t i = 0; i < P; i++)
		scaled += before[i] != 0 && fabs(n->param[i] - c * before[i]) <= 1e-6 * fabs(before[i]);
	CHECK(scaled < (long)(P / 1000));
	free(before), free(xi), free(work), free(mask);
	net_free(n);
}

/* A source model of rule f adapted to a shifted rule (f plus g) from a
 * few of the target's groups ranks the target's other groups better than
 * the source model does, by Moses' ticket and by fine-tuning; a model
 * of another kind or way is refused. */
static void shifted(float *x, float *y, unsigned *group, int ngroup, int per)
{
	/* labels of rule 0 plus twice rule 1, normalised per group */
	for (int g = 0; g < ngroup; g++) {
		double v[256], best = -1e30, worst = 1e30;
		for (int i = 0; i < per; i++) {
			int row = g * per + i, len = 2 + (int)tk_rng_below(&rng, SL - 1);
			random_batch(x + (size_t)row * SL * SE, &len, 1, SL, SE);
			v[i] = rule(x + (size_t)row * SL * SE, 0) + 2 * rule(x + (size_t)row * SL * SE, 1);
			best = v[i] > best ? v[i] : best;
			worst = v[i] < worst ? v[i] : worst;
		}
		for (int i = 0; i < per; i++)
			y[g * per + i] = (float)((v[i] - worst) / (best - worst + 1e-9));
		group[g] = (unsigned)per;
	}
}

TEST(transfer_beats_the_source_on_a_shifted_task)
{
	enum { G = 24, PER = 40, N = G * PER, GA = 4, NA = GA * PER, GT = 6, NT = GT * PER };
	static float x[N * SL * SE], y[N], xa[NA * SL * SE], ya[NA], xt[NT * SL * SE], yt[NT];
	static float p[NT];
	unsigned group[G], ga[GA], gt[GT];
	tk_rng_seed(&rng, 19, 0);
	synthetic(x, y, group, G, PER, 0);
	shifted(xa, ya, ga, GA, PER);
	shifted(xt, yt, gt, GT, PER);
	cm_params cp;
	cm_params_default(&cp);
	cp.seq_e = SE;
	cp.rounds = 12;
	cm_data d = { N, SL * SE, x, y, G, group, NULL, NULL, 0, NULL };
	cm_data da = { NA, SL * SE, xa, ya, GA, ga, NULL, NULL, 0, NULL };
	cm_model *src;
	void *buf;
	size_t len;
	CHECK_EQ_INT(cm_fit(&cm_tlp, &cp, &d, NULL, &src), TK_OK);
	CHECK_EQ_INT(cm_predict(src, xt, NT, SL * SE, NULL, p), TK_OK);
	double acc_src = pair_accuracy(p, yt, GT, PER);
	CHECK_EQ_INT(cm_save(src, &buf, &len), TK_OK);
	double acc[2];
	int methods[2] = { CM_ADAPT_TICKET, CM_ADAPT_FINETUNE };
	for (int k = 0; k < 2; k++) {
		cm_model *m;
		cm_adapt_opts a;
		cm_adapt_info info;
		cm_adapt_default(&a);
		a.method = methods[k];
		a.epochs = 30;
		CHECK_EQ_INT(cm_load(&cm_tlp, buf, len, &m), TK_OK);
		CHECK_EQ_INT(cm_adapt(m, &cp, &a, &da, &info), TK_OK);
		CHECK_EQ_INT(cm_predict(m, xt, NT, SL * SE, NULL, p), TK_OK);
		acc[k] = pair_accuracy(p, yt, GT, PER);
		cm_free(m);
	}
	if (getenv("TLP_VERBOSE") || !(acc[0] > acc_src + 0.03 && acc[1] > acc_src + 0.03))
		fprintf(stderr, "pair accuracy: source %.3f, moses %.3f, finetune %.3f\n", acc_src,
		        acc[0], acc[1]);
	CHECK(acc[0] > acc_src + 0.03);
	CHECK(acc[1] > acc_src + 0.03);
	/* refusals: another way, rows with heads, rows of another length */
	cm_adapt_opts a;
	cm_adapt_default(&a);
	a.method = CM_ADAPT_BOOST;
	CHECK_EQ_INT(cm_adapt(src, &cp, &a, &da, NULL), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "boosting") != NULL);
	a.method = CM_ADAPT_TICKET;
	int head[NA] = { 0 };
	cm_data dh = da;
	dh.head = head;
	CHECK_EQ_INT(cm_adapt(src, &cp, &a, &dh, NULL), TK_EINVAL);
	cm_data dd = da;
	dd.d = SL * SE - SE;
	CHECK_EQ_INT(cm_adapt(src, &cp, &a, &dd, NULL), TK_EINVAL);
	a.ratio = 1.5;
	CHECK_EQ_INT(cm_adapt(src, &cp, &a, &da, NULL), TK_EINVAL);
	free(buf);
	cm_free(src);
}

/* The relative size of the largest difference between a and b. */
static double max_rel_diff(const float *a, const float *b, size_t n)
{
	double d = 0, m = 1e-6;
	for (size_t i = 0; i < n; i++) {
		d = fabs((double)a[i] - b[i]) > d ? fabs((double)a[i] - b[i]) : d;
		m = fabs(a[i]) > m ? fabs(a[i]) : m;
	}
	return d / m;
}

/* Batches on two threads (n->two: the first half of a batch on n, the
 * second on its peer) give the gradient and the scores of one. */
TEST(two_threads_compute_what_one_does)
{
	enum { E = 6, L = 5, K = 2, B = 40, G = 5, N = 300 };
	int len[N];
	static float x[N * L * E], y[B], score[B], dscore[B], out1[N], out2[N];
	int head[B], work[B];
	unsigned group[G] = { 8, 8, 8, 8, 8 };
	tk_rng_seed(&rng, 17, 0);
	for (int i = 0; i < N; i++)
		len[i] = 1 + (int)tk_rng_below(&rng, L);
	random_batch(x, len, N, L, E);
	for (int b = 0; b < B; b++) {
		y[b] = (float)tk_rng_unif(&rng);
		head[b] = b >= 24; /* sorted by head; the halves split head 0 */
	}
	tlp_net *n;
	CHECK_EQ_INT(net_new(E, L, K, TLP_VERSION, &n), TK_OK);
	net_init(n, &rng);
	for (int k = 0; k < K; k++)
		nn_init_uniform(n->w.dec_w[k][3], (size_t)dec_dim[2], 0.1f, &rng);
	fitwork w = { .xb = x, .yb = y, .bhead = head, .score = score, .dscore = dscore,
		      .work = work, .bgroup = group };
	float *g1 = malloc(sizeof *g1 * n->nparam);
	for (int rank = 0; rank < 2; rank++) {
		n->two = 0;
		nn_zero(n->grad, n->nparam);
		batch_grad(n, &w, B, G, rank);
		memcpy(g1, n->grad, sizeof *g1 * n->nparam);
		if (!n->peer)
			CHECK_EQ_INT(net_peer(n), TK_OK);
		n->two = 1;
		nn_zero(n->grad, n->nparam);
		batch_grad(n, &w, B, G, rank);
		CHECK(max_rel_diff(g1, n->grad, n->nparam) < 1e-4);
		CHECK(max_rel_diff(n->grad, n->peer->grad, n->nparam) > 1e-3); /* the peer had a share */
	}
	/* Scores of N rows: batches of TLP_BMAX, two at a time. */
	n->two = 0;
	CHECK_EQ_INT(tpredict(n, x, N, L * E, NULL, out1), TK_OK);
	n->two = 1;
	CHECK_EQ_INT(tpredict(n, x, N, L * E, NULL, out2), TK_OK);
	CHECK(max_rel_diff(out1, out2, N) < 1e-5);
	n->two = 0;
	/* split_begin runs OpenBLAS on one thread and split_end restores it. */
	int before = nn_blas_threads();
	nn_set_blas_threads(2);
	if (nn_blas_threads() == 2) {
		int t = split_begin(n);
		CHECK_EQ_INT(t, 2);
		CHECK_EQ_INT(nn_blas_threads(), 1);
		CHECK_EQ_INT(n->two, 1);
		CHECK_EQ_INT(split_begin(n), 0); /* nested: nothing changes */
		split_end(n, t);
		CHECK_EQ_INT(nn_blas_threads(), 2);
		CHECK_EQ_INT(n->two, 0);
	}
	nn_set_blas_threads(before);
	free(g1);
	net_free(n);
}

TEST(bad_input)
{
	float x[12] = { 1 }, y[2] = { 1, NAN };
	cm_params cp;
	cm_params_default(&cp);
	cp.seq_e = 5; /* 6 features are not positions of 5 */
	cm_data d = { 2, 6, x, y, 0, NULL, NULL, NULL, 0, NULL };
	cm_model *m;
	CHECK_EQ_INT(cm_fit(&cm_tlp, &cp, &d, NULL, &m), TK_EINVAL);
	cp.seq_e = 3;
	CHECK_EQ_INT(cm_fit(&cm_tlp, &cp, &d, NULL, &m), TK_EINVAL); /* a NaN label */
	y[1] = 0;
	float margin[2] = { 0, 0 };
	d.margin = margin;
	CHECK_EQ_INT(cm_fit(&cm_tlp, &cp, &d, NULL, &m), TK_EINVAL);
}

UNIT_MAIN(gradient_matches_finite_differences, heads_start_as_the_shared_decoder,
          padding_does_not_change_scores,
          tlp_learns_a_ranking, tlp_keeps_the_best_epoch_on_validation_rows,
          mtl_tlp_target_head_learns_the_target, epochs_draw_a_share_of_the_auxiliary_rows,
          ticket_trains_the_salient_and_decays_the_rest, transfer_beats_the_source_on_a_shifted_task,
          two_threads_compute_what_one_does, bad_input)
