/*
 * Unit tests for lib/report/check.c, the regression gate's statistics:
 * the ratio of medians and its bootstrap interval on synthetic samples
 * (identical, shifted by 20% with little or much noise, one repeat per
 * side), reproducibility by seed, the verdict's boundaries, and the paired
 * comparison of measurements taken in turn under a drifting load.
 */
#include "unit.h"

#include "report/check.h"
#include "util/util.h"

/* n latencies around base with relative noise rel (normal, seeded). */
static void noisy(double *a, int n, double base, double rel, uint64_t seed)
{
	tk_rng r;
	tk_rng_seed(&r, seed, 1);
	for (int i = 0; i < n; i++)
		a[i] = base * (1 + rel * tk_rng_normal(&r));
}

TEST(same_sample_is_unchanged)
{
	double a[10], ratio, lo, hi;
	noisy(a, 10, 1e-3, 0.03, 1);
	CHECK_EQ_INT(rp_check_ratio(a, 10, a, 10, RP_CHECK_NBOOT, 1, &ratio, &lo, &hi), TK_OK);
	CHECK_NEAR(ratio, 1, 1e-12);
	CHECK(lo < 1 && hi > 1);
	CHECK_EQ_INT(rp_check_verdict(lo, hi, 0.05), RP_UNCHANGED);
}

TEST(twenty_percent_slower_is_slower)
{
	double cur[10], base[10], ratio, lo, hi;
	noisy(base, 10, 1e-3, 0.02, 2);
	noisy(cur, 10, 1.2e-3, 0.02, 3);
	CHECK_EQ_INT(rp_check_ratio(cur, 10, base, 10, RP_CHECK_NBOOT, 1, &ratio, &lo, &hi), TK_OK);
	CHECK(ratio > 1.12 && ratio < 1.28);
	CHECK(lo <= ratio && ratio <= hi);
	CHECK(lo > 1.05);
	CHECK_EQ_INT(rp_check_verdict(lo, hi, 0.05), RP_SLOWER);
	/* the other way round it is an improvement */
	CHECK_EQ_INT(rp_check_ratio(base, 10, cur, 10, RP_CHECK_NBOOT, 1, &ratio, &lo, &hi), TK_OK);
	CHECK_EQ_INT(rp_check_verdict(lo, hi, 0.05), RP_IMPROVED);
}

TEST(noise_widens_the_interval)
{
	double cur[6], base[6], ratio, lo, hi, lo2, hi2;
	noisy(base, 6, 1e-3, 0.01, 4);
	noisy(cur, 6, 1.1e-3, 0.01, 5);
	CHECK_EQ_INT(rp_check_ratio(cur, 6, base, 6, RP_CHECK_NBOOT, 1, &ratio, &lo, &hi), TK_OK);
	CHECK_EQ_INT(rp_check_verdict(lo, hi, 0.05), RP_SLOWER);
	/* the same shift in much noisier samples cannot be told from the noise */
	static const double aWide[6] = { 0.6e-3, 0.8e-3, 0.9e-3, 1.1e-3, 1.3e-3, 1.6e-3 };
	for (int i = 0; i < 6; i++) {
		base[i] = aWide[i];
		cur[i] = 1.1 * aWide[5 - i];
	}
	CHECK_EQ_INT(rp_check_ratio(cur, 6, base, 6, RP_CHECK_NBOOT, 1, &ratio, &lo2, &hi2), TK_OK);
	CHECK(hi2 - lo2 > hi - lo);
	CHECK_EQ_INT(rp_check_verdict(lo2, hi2, 0.05), RP_UNCHANGED);
}

TEST(one_repeat_each_is_the_plain_ratio)
{
	double cur = 1.3, base = 1.0, ratio, lo, hi;
	CHECK_EQ_INT(rp_check_ratio(&cur, 1, &base, 1, 100, 1, &ratio, &lo, &hi), TK_OK);
	CHECK_NEAR(ratio, 1.3, 1e-12);
	CHECK_NEAR(lo, 1.3, 1e-12);
	CHECK_NEAR(hi, 1.3, 1e-12);
}

TEST(the_same_seed_gives_the_same_interval)
{
	double cur[8], base[8], r1, lo1, hi1, r2, lo2, hi2;
	noisy(base, 8, 1e-3, 0.1, 6);
	noisy(cur, 8, 1e-3, 0.1, 7);
	CHECK_EQ_INT(rp_check_ratio(cur, 8, base, 8, 500, 42, &r1, &lo1, &hi1), TK_OK);
	CHECK_EQ_INT(rp_check_ratio(cur, 8, base, 8, 500, 42, &r2, &lo2, &hi2), TK_OK);
	CHECK(r1 == r2 && lo1 == lo2 && hi1 == hi2);
}

TEST(verdict_boundaries)
{
	/* slower only when the whole interval is beyond 1 + t */
	CHECK_EQ_INT(rp_check_verdict(1.051, 1.2, 0.05), RP_SLOWER);
	CHECK_EQ_INT(rp_check_verdict(1.05, 1.2, 0.05), RP_UNCHANGED);
	CHECK_EQ_INT(rp_check_verdict(1.01, 1.04, 0.05), RP_UNCHANGED);
	CHECK_EQ_INT(rp_check_verdict(0.90, 0.95, 0.05), RP_IMPROVED);
	CHECK_EQ_INT(rp_check_verdict(0.90, 0.96, 0.05), RP_UNCHANGED);
	CHECK_EQ_INT(rp_check_verdict(1.001, 1.002, 0), RP_SLOWER);
	CHECK_EQ_STR(rp_check_verdict_name(RP_SLOWER), "slower");
	CHECK_EQ_STR(rp_check_verdict_name(RP_IMPROVED), "improved");
	CHECK_EQ_STR(rp_check_verdict_name(RP_UNCHANGED), "unchanged");
}

TEST(pairs_are_found_only_in_turn)
{
	int pc[6], pb[6];
	/* A B B A A B: in turn */
	double a1[] = { 0, 3, 4 }, b1[] = { 1, 2, 5 };
	CHECK_EQ_INT(rp_check_pairs(b1, 3, a1, 3, pc, pb), 1);
	CHECK_EQ_INT(pc[0], 0); CHECK_EQ_INT(pb[0], 0);
	CHECK_EQ_INT(pc[2], 2); CHECK_EQ_INT(pb[2], 2);
	/* A A A B B B: one side after the other */
	double a2[] = { 0, 1, 2 }, b2[] = { 3, 4, 5 };
	CHECK_EQ_INT(rp_check_pairs(b2, 3, a2, 3, pc, pb), 0);
	/* A B A A B B: the second pair is A A */
	double a3[] = { 0, 2, 3 }, b3[] = { 1, 4, 5 };
	CHECK_EQ_INT(rp_check_pairs(b3, 3, a3, 3, pc, pb), 0);
	/* different counts, or too few */
	CHECK_EQ_INT(rp_check_pairs(b1, 3, a1, 2, pc, pb), 0);
	CHECK_EQ_INT(rp_check_pairs(b1, 2, a1, 2, pc, pb), 0);
}

/* A load that doubles the latencies of some pairs (both sides alike): the
 * pooled samples spread so wide that 20% is inside the noise, the paired
 * ratio still sees it, and an unchanged kernel stays unchanged. */
TEST(pairing_cancels_a_drifting_load)
{
	double base[8], cur[8], same[8], ratio, lo, hi;
	const double load[8] = { 1, 2.1, 1.3, 1, 1.8, 1.1, 2.4, 1 };
	double nb[8], nc[8], ns[8];
	noisy(nb, 8, 1, 0.02, 5);
	noisy(nc, 8, 1, 0.02, 6);
	noisy(ns, 8, 1, 0.02, 7);
	for (int i = 0; i < 8; i++) {
		base[i] = 1e-3 * load[i] * nb[i];
		cur[i] = 1.2e-3 * load[i] * nc[i];
		same[i] = 1e-3 * load[i] * ns[i];
	}
	CHECK_EQ_INT(rp_check_ratio(cur, 8, base, 8, RP_CHECK_NBOOT, 1, &ratio, &lo, &hi), TK_OK);
	CHECK_EQ_INT(rp_check_verdict(lo, hi, 0.05), RP_UNCHANGED);
	CHECK_EQ_INT(rp_check_ratio_paired(cur, base, 8, RP_CHECK_NBOOT, 1, &ratio, &lo, &hi),
	             TK_OK);
	CHECK(ratio > 1.15 && ratio < 1.25);
	CHECK(lo <= ratio && ratio <= hi);
	CHECK_EQ_INT(rp_check_verdict(lo, hi, 0.05), RP_SLOWER);
	CHECK_EQ_INT(rp_check_ratio_paired(same, base, 8, RP_CHECK_NBOOT, 1, &ratio, &lo, &hi),
	             TK_OK);
	CHECK(lo < 1 && hi > 1);
	CHECK_EQ_INT(rp_check_verdict(lo, hi, 0.05), RP_UNCHANGED);
}

UNIT_MAIN(same_sample_is_unchanged, twenty_percent_slower_is_slower, noise_widens_the_interval,
          one_repeat_each_is_the_plain_ratio, the_same_seed_gives_the_same_interval,
          verdict_boundaries, pairs_are_found_only_in_turn, pairing_cancels_a_drifting_load)
