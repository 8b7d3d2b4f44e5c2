#!/bin/sh
# AdaTune in the tuning loop: the rfei surrogate, contextual simulated
# annealing's epsilon, and repeatable seeded replays, on two synthetic
# Kernel Tuner spaces: one whose times follow the knobs smoothly, one whose
# times are noise (there the ensemble must disagree more).
. "$(dirname "$0")/lib.sh"

# gen MODE: a Kernel Tuner cache file of 16 x 16 configurations
gen() {
	awk -v mode="$1" 'BEGIN {
		srand(7)
		printf "{\"device_name\": \"synthetic %s\", \"kernel_name\": \"synth\", ", mode
		printf "\"problem_size\": [64, 64], \"tune_params_keys\": [\"a\", \"b\"], \"tune_params\": {"
		for (k = 0; k < 2; k++) {
			printf "%s\"%s\": [", k ? ", " : "", k ? "b" : "a"
			for (v = 0; v < 16; v++) printf "%s%d", v ? ", " : "", v
			printf "]"
		}
		printf "}, \"objective\": \"time\", \"cache\": {"
		for (a = 0; a < 16; a++) for (b = 0; b < 16; b++) {
			t = mode == "smooth" ? 1 + a / 8 + b / 16 : 0.5 + 4 * rand()
			printf "%s\"%d,%d\": {\"a\": %d, \"b\": %d, \"time\": %.6f, \"GFLOP/s\": %.6f}", \
				sep, a, b, a, b, t, 1 / t
			sep = ", "
		}
		print "}}"
	}'
}

test_expect_success 'import a smooth and a noisy synthetic space' '
	gen smooth >smooth.json && gen noisy >noisy.json &&
	tunekit import --db data.db kernel-tuner smooth.json noisy.json >out &&
	test $(grep -c "256 records (0 invalid)" out) -eq 2
'

csa() {
	tunekit tune -q --db "$1" --replay data.db --replay-hardware "kt:synthetic $2" \
		--task kt:synth:64x64 --feature knob --model rfei --search csa --trials 96 \
		--plan-size 16 --seed ${3:-1}
}

test_expect_success 'rfei+csa runs, and a seeded replay repeats exactly' '
	csa a.db smooth | cut -f 3-10 >a &&
	csa b.db smooth | cut -f 3-10 >b &&
	test_cmp a b && test_rows a 96 &&
	csa c.db smooth 2 | cut -f 3-10 >c && ! cmp -s a c &&
	test "$(sqlite3 a.db "SELECT method FROM run")" = "tune/rfei+csa"
'

test_expect_success 'epsilon is logged per fit, in [0, 1], and rises when the ensemble disagrees' '
	csa n.db noisy >/dev/null &&
	for db in a.db n.db; do
		sqlite3 $db "SELECT COUNT(*), MIN(value) >= 0 AND MAX(value) <= 1, AVG(value)
		             FROM run_log WHERE key = '\''epsilon:kt:synth:64x64'\''" || return 1
	done >eps &&
	cat eps &&
	awk -F"|" "NR == 1 { s = \$3 } NR == 2 { n = \$3 } \$1 < 4 || \$2 != 1 { bad = 1 }
		END { exit bad || !(n > 2 * s) }" eps
'

test_expect_success 'rfei with plain sa, and csa without rfei is refused' '
	tunekit tune -q --db s.db --replay data.db --replay-hardware "kt:synthetic smooth" \
		--task kt:synth:64x64 --feature knob --model rfei --search sa --trials 40 --plan-size 16 >out &&
	test_rows out 40 &&
	test "$(sqlite3 s.db "SELECT COUNT(*) FROM run_log WHERE key LIKE '\''epsilon:%'\''")" -eq 0 &&
	test_expect_code 2 tunekit tune --db s.db --replay data.db --task kt:synth:64x64 \
		--feature knob --model xgb --search csa --trials 8 2>err &&
	grep -q "csa needs a model with uncertainty" err
'

test_expect_success 'the adaptive evaluator keeps micro-batches and stops under the cap' '
	tunekit measure -q --db ae.db --task dense:m=64,n=64,k=64 --sample 4 \
		--number 100 --repeat 5 --evaluator adaptive >out &&
	test_rows out 4 &&
	test "$(sqlite3 ae.db "SELECT COUNT(*) FROM measurement
		WHERE valid AND number = 50 AND nrepeat BETWEEN 3 AND 10")" -eq 4 &&
	tunekit measure -q --db ae.db --task dense:m=64,n=64,k=64 --sample 2 --seed 2 \
		--number 100 --repeat 5 --evaluator adaptive --microbatch 25 --cv 0 >out &&
	test "$(sqlite3 ae.db "SELECT COUNT(*) FROM measurement
		WHERE valid AND number = 25 AND nrepeat = 20")" -eq 2 &&
	tunekit measure -q --db ae.db --task dense:m=64,n=64,k=64 --sample 2 --seed 3 \
		--number 100 --repeat 5 --evaluator fixed >out &&
	test "$(sqlite3 ae.db "SELECT COUNT(*) FROM measurement
		WHERE valid AND number = 100 AND nrepeat = 5")" -eq 2
'

# 4 trials and the confirmation of the 4 (twice more each), all adaptive
test_expect_success 'tune passes the evaluator on, names it in the method, and keeps it for --resume' '
	tunekit tune -q --db ae.db --task dense:m=64,n=64,k=64 --model none --search random \
		--trials 4 --number 100 --repeat 5 --evaluator adaptive --cv 0 >out &&
	test "$(sqlite3 ae.db "SELECT method FROM run ORDER BY id DESC LIMIT 1")" = tune/random+adaptive &&
	test "$(sqlite3 ae.db "SELECT COUNT(*) FROM measurement WHERE run_id =
		(SELECT MAX(id) FROM run) AND number = 50 AND nrepeat = 10")" -eq 12 &&
	sqlite3 ae.db "SELECT params FROM run ORDER BY id DESC LIMIT 1" >params &&
	grep -qx adaptive=1 params && grep -qx cv=0 params && grep -qx microbatch=50 params
'

test_expect_success 'bad evaluator options exit 2' '
	test_expect_code 2 tunekit measure --db ae.db --task dense:m=8,n=8,k=8 --naive \
		--evaluator sometimes 2>err && grep -q "unknown evaluator" err &&
	test_expect_code 2 tunekit measure --db ae.db --task dense:m=8,n=8,k=8 --naive --cv -1 &&
	test_expect_code 2 tunekit measure --db ae.db --task dense:m=8,n=8,k=8 --naive --microbatch 0 &&
	test_expect_code 2 tunekit tune --db ae.db --task dense:m=8,n=8,k=8 --evaluator x 2>err &&
	grep -q "unknown evaluator" err &&
	test_expect_code 2 tunekit tune --db ae.db --task dense:m=8,n=8,k=8 --microbatch -3
'

test_done
