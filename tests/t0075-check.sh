#!/bin/sh
# report check, the regression gate, and examples/ci-benchmark.sh, the job a
# user copies: re-measured kernels pass, a planted 20% regression fails.
. "$(dirname "$0")/lib.sh"

CI=$TOP/examples/ci-benchmark.sh
TASKS='--task dense:m=64,n=64,k=64 --task conv2d:c=8,h=14,w=14,k=8,pad=1'

# The release store: a few configurations of two tasks, measured as the job
# measures (CPU time, 20 repeats of at least 50 ms: a sample of the noise).
test_expect_success 'setup: the store of the last release' '
	tunekit measure -q --db release.db $TASKS --naive --sample 3 --clock cpu \
		--repeat 20 --min-repeat-ms 50 >/dev/null &&
	tunekit report --db release.db best >best &&
	test "$(tsv_count best)" -eq 2
'

# Latencies times f (median, mean, std: the repeats follow the median, see
# tunekit-report(1)) in a copy of store $1 as $2.
scaled() {
	cp "$1" "$2" &&
	sqlite3 "$2" "UPDATE measurement SET median = median * $3, mean = mean * $3, std = std * $3"
}

test_expect_success 'a store against itself: every task unchanged, ratio 1, exit 0' '
	tunekit report --db release.db --format tsv check --baseline release.db >out &&
	test "$(tsv_count out)" -eq 2 &&
	awk -F"\t" "NR > 1 && (\$3 != \"unchanged\" || \$4 != \"1.000\") { exit 1 }" out
'

# Timings are only as steady as the machine: make test runs beside other
# jobs that measure on the same CPU, and a busy minute slowed everything
# the job measured by 1.3x to 6x in a test run on a loaded 2-core machine.
# These tests check the job's mechanics (re-measure, check, JUnit), with a
# threshold no load reaches; how often the gate is right at 5% is measured
# by tests/bench/kernels/gate.sh, not here. A pass in one of three attempts
# shows the job passes unchanged kernels; three failures fail the test.
export THRESHOLD=900
test_expect_success 'the job re-measures the best configurations and passes' '
	for i in 1 2 3; do
		TUNEKIT=$TUNEKIT_BIN sh "$CI" release.db ci >log 2>err && break
		cat err
	done &&
	! grep -q slower log &&
	grep -q "<testsuites name=\"tunekit report check\" tests=\"2\" failures=\"0\">" ci/check.xml &&
	test "$(grep -c "<testcase " ci/check.xml)" -eq 2 &&
	! grep -q "<failure" ci/check.xml
'

test_expect_success 'with the release binary the job measures both sides in one session' '
	for i in 1 2 3; do
		RELEASE_TUNEKIT=$TUNEKIT_BIN TUNEKIT=$TUNEKIT_BIN ROUNDS=3 \
			sh "$CI" release.db ci4 >log 2>err && break
		cat err
	done &&
	! grep -q slower log &&
	grep -q "tests=\"2\" failures=\"0\"" ci4/check.xml &&
	test "$(sqlite3 ci4/release-now.db "SELECT count(*) FROM measurement WHERE valid")" -eq 6 &&
	test "$(sqlite3 ci4/nightly.db "SELECT count(*) FROM measurement WHERE valid")" -eq 6
'

# Load that changes between passes must hit both sides of a kernel alike:
# the job measures kernel by kernel, release (A) and current (B) in turn,
# A B B A A B, not one whole pass of every kernel after another; the check
# then compares them pair by pair (the pairs column).
test_expect_success 'the job interleaves the two sides kernel by kernel; check pairs them' '
	sqlite3 ci4/nightly.db "ATTACH \"ci4/release-now.db\" AS r;
		SELECT s || \" \" || substr(k, 1, instr(k, \":\") - 1) FROM (
		SELECT \"B\" s, m.at at, t.key k FROM main.measurement m JOIN main.config c
			ON c.id = m.config_id JOIN main.task t ON t.id = c.task_id
		UNION ALL
		SELECT \"A\", m.at, t.key FROM r.measurement m JOIN r.config c
			ON c.id = m.config_id JOIN r.task t ON t.id = c.task_id) ORDER BY at" >order &&
	printf "A conv2d\nB conv2d\nB conv2d\nA conv2d\nA conv2d\nB conv2d\n" >expect &&
	printf "A dense\nB dense\nB dense\nA dense\nA dense\nB dense\n" >>expect &&
	test_cmp expect order &&
	tunekit report --db ci4/nightly.db --format tsv check --baseline ci4/release-now.db \
		--threshold 900 >out &&
	test "$(tsv_col out pairs 2)" = 3 && test "$(tsv_col out pairs 3)" = 3 &&
	tunekit report --db ci/nightly.db --format tsv check --baseline release.db \
		--threshold 900 >out &&
	test "$(tsv_col out pairs 2)" = 0
'

# A planted regression: the job's measurements made 20% slower. Whether the
# gate sees 20% through the spread of real repeats depends on the machine's
# load (on CI all three fresh measurements of the test missed it), and how
# often it does is tests/bench/kernels/gate.sh's measure, not a test's: here
# the repeats are dropped, so that each side's sample is its recorded median
# alone and the interval is the planted ratio itself.
test_expect_success 'a planted 20% regression fails the gate: exit 1, named on stderr' '
	rm -f now.db &&
	tunekit report --db release.db best |
		tunekit measure -q --db now.db --config - --clock cpu --repeat 20 --min-repeat-ms 50 >/dev/null &&
	cp now.db now1.db &&
	sqlite3 now1.db "UPDATE measurement SET nrepeat = 0, times = NULL" &&
	scaled now1.db slow1.db 1.2 &&
	test_expect_code 1 tunekit report --db slow1.db --format tsv check --baseline now1.db >out 2>err &&
	test "$(awk -F"\t" "\$3 == \"slower\"" out | wc -l)" -eq 2 &&
	grep -q "slower: dense:k=64,m=64,n=64" err &&
	awk -F"\t" "NR > 1 { if (\$4 < 1.19 || \$4 > 1.21 || \$5 < 1.19) exit 1 }" out
'

# The job's own failure, on a regression far beyond the machine's noise
# (the 20% regression above is planted on the job's own measurements).
test_expect_success 'the job fails on a release 100 times as fast as the kernels now' '
	scaled release.db fast-release.db 0.01 &&
	test_expect_code 1 env TUNEKIT=$TUNEKIT_BIN sh "$CI" fast-release.db ci2 >log 2>err &&
	grep -q "slower: " err &&
	grep -q "<testsuites name=\"tunekit report check\" tests=\"2\" failures=\"2\">" ci2/check.xml &&
	test "$(grep -c "<failure type=\"regression\"" ci2/check.xml)" -eq 2
'

test_expect_success 'a regression within the threshold, or inside the noise, is not slower' '
	scaled now.db slow.db 1.2 &&
	tunekit report --db slow.db --format tsv check --baseline now.db --threshold 30 >out &&
	! grep -q slower out &&
	scaled now.db close.db 1.02 &&
	tunekit report --db close.db --format tsv check --baseline now.db >out &&
	! grep -q slower out
'

test_expect_success 'an improvement is reported as improved and passes' '
	scaled now.db faster.db 0.5 &&
	tunekit report --db faster.db --format json check --baseline now.db >out &&
	test "$(grep -o "\"verdict\": *\"improved\"" out | wc -l)" -eq 2
'

test_expect_success 'stores from different hardware do not compare: exit 2, both named' '
	cp ci/nightly.db other.db &&
	sqlite3 other.db "UPDATE hardware SET key = key || \"|elsewhere\"" &&
	test_expect_code 2 tunekit report --db other.db check --baseline release.db 2>err &&
	grep -q "different hardware" err && grep -q "elsewhere" err
'

# Store $1's hardware keys with field $2 (1: CPU, 3: compiler) set to $3.
rekey() {
	sqlite3 "$1" "SELECT id || '|' || key FROM hardware" |
	while IFS= read -r line; do
		id=${line%%|*}
		key=$(printf '%s\n' "${line#*|}" | awk -F"|" -v OFS="|" -v f="$2" -v v="$3" "{ \$f = v; print }")
		sqlite3 "$1" "UPDATE hardware SET key = '$key' WHERE id = $id" || return 1
	done
}

# After a compiler upgrade the nightly job must still judge the kernels (the
# upgrade is what it is there to catch); only the compiler may differ.
test_expect_success 'a compiler upgrade still compares, with a warning naming both' '
	cp ci/nightly.db newcc.db &&
	rekey newcc.db 3 "cc (Future) 99.1" &&
	tunekit report --db newcc.db --format tsv check --baseline release.db --threshold 900 \
		>out 2>err &&
	test "$(tsv_count out)" -eq 2 &&
	grep -q "warning: compared across a compiler change: .* -> cc (Future) 99.1" err &&
	cp ci/nightly.db newcpu.db &&
	rekey newcpu.db 1 "Some Other CPU" &&
	test_expect_code 2 tunekit report --db newcpu.db check --baseline release.db 2>err &&
	grep -q "different hardware" err &&
	rekey newcpu.db 3 "cc (Future) 99.1" &&
	test_expect_code 2 tunekit report --db newcpu.db check --baseline release.db 2>err &&
	grep -q "different hardware" err
'

test_expect_success '--hardware picks this store'"'"'s hardware; one without records is exit 2' '
	hw=$(tsv_col best hw) &&
	tunekit report --db ci/nightly.db --format tsv --hardware "$hw" check --baseline release.db \
		--threshold 900 >out &&
	test "$(tsv_count out)" -eq 2 &&
	test_expect_code 2 tunekit report --db ci/nightly.db --hardware 99 check --baseline release.db 2>err &&
	grep -q "hardware 99" err
'

test_expect_success 'a damaged times BLOB in the baseline is exit 3, not a crash' '
	cp release.db damaged.db &&
	sqlite3 damaged.db "UPDATE measurement SET times = X'"'"'00010203'"'"'" &&
	test_expect_code 3 tunekit report --db ci/nightly.db check --baseline damaged.db 2>err &&
	grep -q "damaged times" err
'

test_expect_success 'CPU time never compares with wall-clock time; a store with both uses the common one' '
	sqlite3 release.db "SELECT params FROM run" | sort -u >clocks &&
	echo cpu_clock=1 >want && test_cmp want clocks &&
	tunekit report --db release.db best >rb &&
	tunekit measure -q --db wall.db --config - --repeat 3 --min-repeat-ms 20 <rb >/dev/null &&
	test "$(sqlite3 wall.db "SELECT params FROM run")" = cpu_clock=0 &&
	test_expect_code 2 tunekit report --db wall.db check --baseline release.db 2>err &&
	test $(wc -l <err) -eq 1 &&
	grep -q "wall-clock time, the baseline in CPU time, which never compare" err &&
	test_expect_code 2 tunekit report --db release.db check --baseline wall.db 2>err &&
	grep -q "CPU time, the baseline in wall-clock time" err &&
	tunekit measure -q --db wall.db --config - --clock cpu --repeat 3 --min-repeat-ms 20 <rb >/dev/null &&
	tunekit report --db wall.db --format tsv check --baseline release.db --threshold 900 >out &&
	test_rows out 2 && test "$(tsv_col out repeats 2)" -eq 3 && test "$(tsv_col out repeats 3)" -eq 3
'

test_expect_success 'bad command lines exit 2; a missing baseline exits 3' '
	test_expect_code 2 tunekit report --db release.db check 2>err && grep -q "needs --baseline" err &&
	test_expect_code 2 tunekit report --db release.db check --baseline release.db --threshold -1 &&
	test_expect_code 2 tunekit report --db release.db check --baseline release.db --threshold x &&
	test_expect_code 2 tunekit report --db release.db --format junit best 2>err &&
	grep -q "junit applies to report check" err &&
	test_expect_code 2 tunekit report --db release.db --baseline release.db best &&
	test_expect_code 2 tunekit report --db release.db --threshold 5 runs &&
	test_expect_code 3 tunekit report --db release.db check --baseline missing.db &&
	test ! -e missing.db
'

test_expect_success 'the job needs its release store' '
	test_expect_code 2 sh "$CI" &&
	test_must_fail env TUNEKIT=$TUNEKIT_BIN sh "$CI" missing.db ci3 2>err
'

test_done
