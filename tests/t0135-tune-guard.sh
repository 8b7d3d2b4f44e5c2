#!/bin/sh
# tune --model-file and its guard: a model fitted from scratch beside the
# file's, both scoring each new batch before they learn from it, plans the
# next batches once it ranks them better. On a made-up kernel whose 512
# configurations are all known exactly (a Kernel Tuner cache file written
# here, replayed), a model trained on the inverted latencies must be caught
# and one trained on the true ones must keep planning.
. "$(dirname "$0")/lib.sh"

TASK=kt:synth:64

# 4 knobs, 8 x 8 x 4 x 2 configurations, each timed by an exact rule with
# its optimum inside the space (a = 6, b = 3, c = 0, d = 0: 1.01 ms)
synth() {
	awk 'BEGIN {
		printf "{\"device_name\": \"Synthetic\", \"kernel_name\": \"synth\", \"problem_size\": [64],\n"
		printf "\"tune_params_keys\": [\"a\", \"b\", \"c\", \"d\"],\n"
		printf "\"tune_params\": {\"a\": [1,2,3,4,5,6,7,8], \"b\": [1,2,3,4,5,6,7,8],"
		printf " \"c\": [0,1,2,3], \"d\": [0,1]},\n\"objective\": \"time\", \"cache\": {\n"
		n = 0
		for (a = 1; a <= 8; a++) for (b = 1; b <= 8; b++) for (c = 0; c <= 3; c++) for (d = 0; d <= 1; d++) {
			t = (1 + (a - 6) * (a - 6)) * (1 + 0.5 * (b - 3) * (b - 3)) * (1 + 0.3 * c) * \
			    (1 + 0.2 * d) * (1 + 0.01 * ((a * 7 + b * 3 + c) % 5))
			printf "%s\"%d,%d,%d,%d\": {\"a\": %d, \"b\": %d, \"c\": %d, \"d\": %d, \"time\": %.6f}", \
				n++ ? ",\n" : "", a, b, c, d, a, b, c, d, t
		}
		printf "\n}}\n"
	}'
}

# the model each batch of the last run was planned on, as report runs says
planned() {
	tunekit report --db "$1" runs >runs &&
	tsv_col runs planned_on "$(wc -l <runs)"
}

# the last value of a guard key of the run log
logged() {
	sqlite3 "$1" "SELECT round(value, 3) FROM run_log WHERE key = '$2:$TASK' ORDER BY round DESC LIMIT 1"
}

test_expect_success 'setup: the kernel, its inverted copy, a good and a wrong model' '
	synth >synth.json &&
	tunekit import -q --db data.db kernel-tuner synth.json &&
	test "$(sqlite3 data.db "SELECT count(*) FROM measurement WHERE valid")" -eq 512 &&
	cp data.db inv.db &&
	sqlite3 inv.db "UPDATE measurement SET median = 1.0 / median" &&
	tunekit extract-features -q --db data.db --kind knob &&
	tunekit extract-features -q --db inv.db --kind knob &&
	tunekit train -q --db data.db --feature knob --rounds 400 --out good.model >/dev/null &&
	tunekit train -q --db inv.db --feature knob --rounds 400 --out wrong.model >/dev/null
'

test_expect_success 'a wrong model file is caught: xgb from scratch plans the rest, in the log' '
	tunekit tune --db wrong.db --replay data.db --task $TASK --trials 96 --plan-size 16 \
		--model-file wrong.model >out 2>err &&
	test_rows out 96 &&
	grep -q "4 of 6 batches planned on xgb from scratch, which ranked the new ones better" err &&
	test "$(planned wrong.db)" = "2 file, 4 scratch" &&
	f=$(logged wrong.db guard_file) && s=$(logged wrong.db guard_scratch) &&
	echo "pairs in order: file $f, scratch $s" &&
	awk -v f="$f" -v s="$s" "BEGIN { exit !(s > f + 0.2) }" &&
	first=$(sqlite3 wrong.db "SELECT value FROM run_log WHERE key = '\''guard_file:$TASK'\''
		ORDER BY round LIMIT 1") &&
	awk -v f="$first" "BEGIN { exit !(f < 0.5) }" &&
	test "$(sqlite3 wrong.db "SELECT params FROM run" | grep "^guard=")" = guard=on
'

test_expect_success 'the guard finds the optimum the unguarded wrong model misses' '
	tunekit tune -q --db off.db --replay data.db --task $TASK --trials 96 --plan-size 16 \
		--model-file wrong.model --guard off >/dev/null &&
	test "$(planned off.db)" = "" &&
	test "$(sqlite3 off.db "SELECT count(*) FROM run_log WHERE key LIKE '\''guard%'\''")" -eq 0 &&
	on=$(sqlite3 wrong.db "SELECT min(median) FROM measurement WHERE valid") &&
	off=$(sqlite3 off.db "SELECT min(median) FROM measurement WHERE valid") &&
	echo "best: guarded $on, unguarded $off" &&
	awk -v on="$on" -v off="$off" "BEGIN { exit !(on < 0.00102 && off > 2 * on) }"
'

test_expect_success 'a good model file keeps planning every batch' '
	tunekit tune --db good.db --replay data.db --task $TASK --trials 96 --plan-size 16 \
		--model-file good.model >out 2>err &&
	grep -q "all 6 batches planned on the model file" err &&
	test "$(planned good.db)" = "6 file" &&
	f=$(logged good.db guard_file) && s=$(logged good.db guard_scratch) &&
	echo "pairs in order: file $f, scratch $s" &&
	awk -v f="$f" -v s="$s" "BEGIN { exit !(f > s) }" &&
	test "$(sqlite3 good.db "SELECT count(*) FROM run_log WHERE key = '\''guard:$TASK'\''")" -eq 6
'

test_expect_success 'a tune without a model file has no guard' '
	tunekit tune -q --db plain.db --replay data.db --task $TASK --trials 32 --plan-size 16 >/dev/null &&
	test "$(planned plain.db)" = "" &&
	test_expect_code 2 tunekit tune --db plain.db --replay data.db --task $TASK --trials 8 \
		--model-file good.model --guard maybe 2>err &&
	grep -q "guard" err
'

test_done
