/* vta-sim target specs (--target, and the spec a store keeps for its
 * hardware): parse; a parsed spec's canonical spec parses to the same key,
 * and its VTA configurations of a small conv2d lower without a crash. */
#include "fuzz.h"
#include "base/target.h"
#include "vta/vta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *args = fuzz_str(data, size);
	char *spec = malloc(size + 16);
	tk_target t, u;
	if (!spec)
		abort();
	/* only vta-sim: a cpu spec would run any compiler the input names */
	snprintf(spec, size + 16, "vta-sim:%s", args);
	int rc = tk_target_parse(spec, &t);
	fuzz_check_rc(rc);
	if (rc == TK_OK) {
		if (t.kind != TK_TARGET_VTA_SIM || tk_target_parse(t.spec, &u) || strcmp(t.key, u.key))
			abort();
		te_prog *p;
		vta_shape sh;
		sp_space *sp;
		if (te_task_parse("conv2d:c=20,h=9,w=7,k=36,pad=1", &p))
			abort();
		if (!vta_shape_from_prog(p, &t.vta, &sh) && !vta_space_create(&sh, &sp)) {
			tk_rng r;
			tk_rng_seed(&r, size, 1);
			for (int i = 0; i < 4; i++) {
				sp_config c;
				vta_sched sc;
				vta_stats st;
				sp_sample(sp, &r, &c);
				vta_sched_from_config(sp, &c, &sc);
				if (vta_stats_of(&t.vta, &sh, &sc, &st))
					abort();
			}
			sp_space_free(sp);
		}
		te_prog_free(p);
	}
	free(spec);
	free(args);
	return 0;
}
