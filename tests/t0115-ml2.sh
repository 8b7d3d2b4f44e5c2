#!/bin/sh
# ML2Tuner: model V (train --objective validity), hidden features
# (extract-features --kind hidden on vta-sim and the CPU), the ml2 explorer
# on vta-sim, on the CPU and on a replayed dataset, report invalid and
# importance, and bad input.
. "$(dirname "$0")/lib.sh"

sql_db() {
	sqlite3 "$1" "$2"
}

VTA=vta-sim:preset=zcu102
CONV=conv2d:c=64,h=28,w=28,k=48,pad=1
DENSE=dense:m=16,n=16,k=16

test_expect_success 'setup: vta-sim records, valid and invalid, with knob and hidden features' '
	tunekit measure -q --target $VTA --task $CONV --sample 60 >m.tsv &&
	test "$(awk -F"\t" "NR > 1 && \$7 == 1" m.tsv | wc -l)" -ge 5 &&
	test "$(awk -F"\t" "NR > 1 && \$7 == 0" m.tsv | wc -l)" -ge 5 &&
	tunekit extract-features -q --target $VTA --kind knob &&
	tunekit extract-features -q --target $VTA --kind hidden &&
	test "$(sql "SELECT COUNT(*) FROM feature WHERE kind = '\''knob'\''")" -eq 60 &&
	test "$(sql "SELECT COUNT(*) FROM feature WHERE kind = '\''hidden'\''")" -eq 60
'

test_expect_success 'train --objective validity: a classifier with its metrics, labelled in the file' '
	tunekit train --feature knob --objective validity --holdout 0.3 --out v.model >out 2>err &&
	printf "set\trows\tvalid\taccuracy\tprecision\trecall\tauc\n" >want &&
	head -1 out >hdr && test_cmp want hdr &&
	test "$(tsv_col out set 2)" = train && test "$(tsv_col out set 3)" = holdout &&
	test "$(tsv_col out valid 2)" -ge 1 &&
	awk -F"\t" "NR > 1 && (\$4 < 0 || \$4 > 1) { exit 1 }" out &&
	awk -F"\t" "NR == 2 && \$4 < 0.7 { exit 1 }" out &&
	grep -a -q "^label validity$" v.model &&
	grep -a -q "^objective binary:logistic$" v.model &&
	grep -a -q "^holdout_auc " v.model && ! grep -a -q "^holdout_rmse " v.model
'

test_expect_success 'a validity model used as a performance model: one line, exit 2' '
	test_expect_code 2 tunekit tune --db u.db --target $VTA --task $CONV --model-file v.model \
		--trials 4 >out 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "is a validity model" err
'

test_expect_success 'bad objectives and a model that cannot classify exit 2 with one line' '
	test_expect_code 2 tunekit train --feature knob --objective bogus 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "unknown objective .bogus. (rank, reg or validity)" err &&
	test_expect_code 2 tunekit train --model rfei --feature knob --objective validity 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "cannot be a validity classifier (xgb)" err
'

test_expect_success 'hidden features on vta-sim are the device compiler statistics, named' '
	tunekit train --feature hidden --holdout 0.3 --out h.model >out 2>&1 &&
	grep -a -q "^feature hidden$" h.model &&
	tunekit report importance --model-file h.model --target $VTA --task $CONV >imp &&
	head -1 imp >hdr && printf "rank\tfeature\tname\tgain\tshare\n" >want && test_cmp want hdr &&
	test_rows imp 34 &&
	tsv_col imp name 2 | grep -qE "^(occupancy|used|insns|uop|tokens|dma_bytes|gemm|alu|tiles|th_|tw_|dummy|threads|uneven|depth)" &&
	awk -F"\t" "NR > 1 { s += \$5 } END { if (s < 0.99 || s > 1.01) exit 1 }" imp
'

test_expect_success 'hidden features on the CPU: compiled once, cached, the compiler facts in them' '
	TUNEKIT_CACHE=$PWD/cache-c &&
	tunekit measure -q --db c.db --task $DENSE --sample 4 --repeat 1 >/dev/null &&
	cat "$TUNEKIT_CACHE"/*.sha256 >objects &&
	test "$(wc -l <objects)" -eq 4 &&
	tunekit extract-features -q --db c.db --kind hidden &&
	test "$(sql_db c.db "SELECT COUNT(*) FROM feature WHERE kind = '\''hidden'\''")" -eq 4 &&
	ls "$TUNEKIT_CACHE/hidden" | grep -c "^[0-9a-f]\{64\}\$" >n && test "$(cat n)" -ge 1 &&
	grep -h "^tunekit-hidden 2 " "$TUNEKIT_CACHE"/hidden/* >facts &&
	awk "\$3 <= 0 || \$5 <= 0 || \$6 <= \$5 { exit 1 }" facts &&
	# compiled again with the reports flags: the same objects, byte for byte
	cat "$TUNEKIT_CACHE"/*.sha256 >again && test_cmp objects again &&
	test -z "$(ls "$TUNEKIT_CACHE" | grep "\.rep\.tmp\.")"
'

test_expect_success 'feat_extract refuses hidden features: extract-features names the kind' '
	test_expect_code 2 tunekit extract-features --kind bogus 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "graph, hidden)" err
'

test_expect_success 'tune --model ml2 on vta-sim: V drops, A picks among compiled, the run log says so' '
	tunekit tune -q --db t.db --target $VTA --task $CONV --model ml2 --alpha 1 --batch 10 \
		--plan-size 10 --trials 50 --objective reg >out &&
	test_rows out 50 &&
	sql_db t.db "SELECT key, value FROM run_log WHERE key LIKE '\''ml2_dropped:%'\''" >dropped &&
	awk -F"|" "{ s += \$2 } END { if (s < 1) exit 1 }" dropped &&
	sql_db t.db "SELECT value FROM run_log WHERE key LIKE '\''ml2_compiled:%'\''" >compiled &&
	awk "\$1 >= 20 { n++ } END { if (n < 1) exit 1 }" compiled &&
	test "$(sql_db t.db "SELECT COUNT(*) FROM run_log WHERE key LIKE '\''ml2_sse_a:%'\''")" -ge 1
'

test_expect_success 'report invalid: a row per batch of the run, and an SVG curve' '
	tunekit report --db t.db invalid >inv &&
	printf "run\tbatch\tfirst\ttrials\tinvalid\tshare\n" >want && head -1 inv >hdr && test_cmp want hdr &&
	test_rows inv 5 &&
	test "$(tsv_col inv first 3)" -eq 11 &&
	awk -F"\t" "NR > 1 { s += \$5 } END { print s }" inv >ninv &&
	test "$(cat ninv)" -eq "$(sql_db t.db "SELECT COUNT(*) FROM measurement WHERE NOT valid")" &&
	tunekit report --db t.db invalid --batch 25 >inv2 && test_rows inv2 2 &&
	tunekit report --db t.db invalid --plot inv.svg && grep -q "<svg" inv.svg &&
	grep -q "Invalid configurations per batch" inv.svg
'

test_expect_success 'the ablations run: V alone compiles nothing' '
	tunekit tune -q --db a.db --target $VTA --task $CONV --model ml2 --ml2-stages V --batch 10 \
		--plan-size 10 --trials 30 >out &&
	test_rows out 30 &&
	test "$(sql_db a.db "SELECT COALESCE(SUM(value), 0) FROM run_log WHERE key LIKE '\''ml2_compiled:%'\''")" = 0.0 &&
	tunekit tune -q --db b.db --target $VTA --task $CONV --model ml2 --ml2-stages A --batch 10 \
		--plan-size 10 --trials 30 >out &&
	test "$(sql_db b.db "SELECT COALESCE(SUM(value), 0) FROM run_log WHERE key LIKE '\''ml2_dropped:%'\''")" = 0.0
'

test_expect_success 'tune --model ml2 on the CPU compiles candidates for their hidden features' '
	tunekit tune -q --db cpu.db --task $DENSE --model ml2 --batch 4 --plan-size 4 --trials 12 \
		--repeat 1 --confirm 0 >out &&
	test_rows out 12 &&
	sql_db cpu.db "SELECT value FROM run_log WHERE key LIKE '\''ml2_compiled:%'\''" >compiled &&
	awk "{ s += \$1 } END { if (s < 8) exit 1 }" compiled
'

test_expect_success 'tune --model ml2 on the CPU compiles each kernel once: hidden features and measurement' '
	cat >cc-count <<-\EOF &&
	#!/bin/sh
	for a; do case "$a" in *.c) sha256sum <"$a" >>"$CC_COUNT" ;; esac; done
	exec cc "$@"
	EOF
	chmod +x cc-count &&
	CC_COUNT=$PWD/compiles && export CC_COUNT && TUNEKIT_CACHE=$PWD/cache-once &&
	tunekit tune -q --db once.db --target cpu:cc=$PWD/cc-count --task $DENSE --model ml2 \
		--batch 4 --plan-size 4 --trials 16 --repeat 1 --confirm 0 >out &&
	test_rows out 16 &&
	sort compiles | uniq -d >twice && test_cmp /dev/null twice &&
	log() { sql_db once.db "SELECT SUM(value) FROM run_log WHERE key = '\''$1'\''"; } &&
	test "$(log kernels:compiled)" = "$(wc -l <compiles).0" &&
	# the batches A picked were compiled for their hidden features: cached
	test "$(log kernels:cached)" = 12.0
'

test_expect_success 'replayed: no hidden features, A is P, said once' '
	tunekit tune --db r.db --replay c.db --task $DENSE --model ml2 --feature knob --batch 2 \
		--plan-size 2 --trials 4 >out 2>err &&
	grep -q "replayed measurements have no hidden features: model A is P" err &&
	test "$(sql_db r.db "SELECT COALESCE(SUM(value), 0) FROM run_log WHERE key LIKE '\''ml2_compiled:%'\''")" = 0.0
'

test_expect_success 'bad ml2 options and reports exit 2 with one line' '
	test_expect_code 2 tunekit tune --db x.db --target $VTA --task $CONV --model ml2 \
		--ml2-stages X --trials 4 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "unknown ml2 stages" err &&
	test_expect_code 2 tunekit tune --db x.db --target $VTA --task $CONV --model ml2 \
		--alpha -1 --trials 4 2>err &&
	test $(wc -l <err) -eq 1 &&
	test_expect_code 2 tunekit report importance 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "needs --model-file" err &&
	test_expect_code 2 tunekit report importance --model-file m.tsv 2>err &&
	test $(wc -l <err) -eq 1 &&
	test_expect_code 2 tunekit report --db t.db invalid --model-file v.model 2>err &&
	test $(wc -l <err) -eq 1
'

test_expect_success 'help models lists ml2' '
	tunekit help models >models &&
	grep -q "^ *ml2 " models
'

test_done
