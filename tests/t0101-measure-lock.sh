#!/bin/sh
# One measurer at a time: measure and tune time kernels only while holding
# the measurement lock, so that two processes never time at once. Every test
# uses a lock file of its own, so that other tunekit processes on the machine
# (which hold the default lock) do not matter.
. "$(dirname "$0")/lib.sh"

TASK='dense:m=8,n=8,k=8'
L=$TRASH/measure.lock

now() {
	date +%s.%N
}

test_expect_success 'setup: the kernels are in the cache' '
	tunekit measure -q --measure-lock none --task $TASK --naive --sample 8 >/dev/null
'

test_expect_success 'measure waits while another process holds the lock' '
	flock "$L" sleep 3 & holder=$! &&
	sleep 0.5 &&
	t0=$(now) &&
	tunekit measure -q --measure-lock "$L" --task $TASK --naive >out 2>err &&
	t1=$(now) &&
	wait $holder &&
	awk -v a="$t0" -v b="$t1" "BEGIN { exit !(b - a >= 2) }" &&
	test "$(tsv_col out valid)" = 1 &&
	test ! -s err
'

test_expect_success 'with --measure-lock none it does not wait' '
	flock "$L" sleep 3 & holder=$! &&
	sleep 0.5 &&
	t0=$(now) &&
	tunekit measure -q --measure-lock none --task $TASK --naive >out &&
	t1=$(now) &&
	wait $holder &&
	awk -v a="$t0" -v b="$t1" "BEGIN { exit !(b - a < 2) }"
'

test_expect_success 'TUNEKIT_MEASURE_LOCK names the lock when the option is not given' '
	flock "$L" sleep 3 & holder=$! &&
	sleep 0.5 &&
	t0=$(now) &&
	TUNEKIT_MEASURE_LOCK=$L tunekit measure -q --task $TASK --naive >out &&
	t1=$(now) &&
	wait $holder &&
	awk -v a="$t0" -v b="$t1" "BEGIN { exit !(b - a >= 2) }"
'

# Defect 5 of issue 20: two processes measuring at once stored latencies
# several times off. Each hold of the lock is logged (TUNEKIT_MEASURE_LOG:
# pid, start, end); the holds of two processes started together interleave
# and never overlap.
test_expect_success 'two measuring processes never time at the same time' '
	export TUNEKIT_MEASURE_LOG=$TRASH/holds &&
	{ "$TUNEKIT_BIN" measure -q --measure-lock "$L" --db a.db --task $TASK --naive --sample 8 --batch 2 >a.out & } &&
	p1=$! &&
	{ "$TUNEKIT_BIN" measure -q --measure-lock "$L" --db b.db --task $TASK --naive --sample 8 --batch 2 >b.out & } &&
	p2=$! &&
	wait $p1 && wait $p2 &&
	unset TUNEKIT_MEASURE_LOG &&
	test_rows a.out 9 && test_rows b.out 9 &&
	test "$(cut -d" " -f1 holds | sort -u | wc -l)" -eq 2 &&
	test $(wc -l <holds) -eq 10 &&
	sort -k2,2g holds | awk "NR > 1 && \$2 < end { print \"overlap: \" prev \" / \" \$0; bad = 1 }
		{ end = \$3; prev = \$0 } END { exit bad }"
'

test_expect_success 'tune takes the lock too' '
	TUNEKIT_MEASURE_LOG=$TRASH/tune-holds tunekit tune -q --measure-lock "$L" --task $TASK \
		--trials 4 --model none --search random --confirm 0 --repeat 1 >/dev/null &&
	test $(wc -l <tune-holds) -ge 1 &&
	test "$(cut -d" " -f1 tune-holds | sort -u | wc -l)" -eq 1
'

# Programs that time and are not tunekit (benchmark drivers) take tunekit's
# own lock with tunekit lock; the bench scripts once took a lock file of
# their own, so their timings could overlap a tunekit tune.
test_expect_success 'tunekit lock holds the lock while its command runs; measure waits' '
	{ "$TUNEKIT_BIN" lock --measure-lock "$L" -- sleep 3 & } && holder=$! &&
	sleep 0.5 &&
	t0=$(now) &&
	tunekit measure -q --measure-lock "$L" --task $TASK --naive >out &&
	t1=$(now) &&
	wait $holder &&
	awk -v a="$t0" -v b="$t1" "BEGIN { exit !(b - a >= 2) }" &&
	test "$(tsv_col out valid)" = 1
'

test_expect_success 'tunekit lock waits for a measuring tunekit; the holds never overlap' '
	export TUNEKIT_MEASURE_LOG=$TRASH/lock-holds &&
	{ "$TUNEKIT_BIN" measure -q --measure-lock "$L" --db c.db --task $TASK --naive --sample 8 --batch 2 >c.out & } &&
	p1=$! &&
	sleep 0.2 &&
	for i in 1 2 3; do
		TUNEKIT_MEASURE_LOCK=$L tunekit lock -- sleep 0.2 || exit 1
	done &&
	wait $p1 &&
	unset TUNEKIT_MEASURE_LOG &&
	test "$(cut -d" " -f1 lock-holds | sort -u | wc -l)" -eq 4 &&
	sort -k2,2g lock-holds | awk "NR > 1 && \$2 < end { print \"overlap: \" prev \" / \" \$0; bad = 1 }
		{ end = \$3; prev = \$0 } END { exit bad }"
'

test_expect_success 'a tunekit under tunekit lock runs under its hold, not waiting for it' '
	t0=$(now) &&
	timeout 60 "$TUNEKIT_BIN" lock --measure-lock "$L" -- \
		sh -c "\"\$0\" measure -q --measure-lock \"\$1\" --task $TASK --naive" \
		"$TUNEKIT_BIN" "$L" >out &&
	t1=$(now) &&
	test "$(tsv_col out valid)" = 1 &&
	awk -v a="$t0" -v b="$t1" "BEGIN { exit !(b - a < 30) }"
'

test_expect_success 'tunekit lock exits with its command'"'"'s status' '
	test_expect_code 0 tunekit lock --measure-lock "$L" -- true &&
	test_expect_code 3 tunekit lock --measure-lock "$L" -- sh -c "exit 3" &&
	test_expect_code 127 tunekit lock --measure-lock "$L" -- no-such-command 2>err &&
	grep -q "cannot run no-such-command" err &&
	test_expect_code 2 tunekit lock --measure-lock "$L" 2>err &&
	grep -q "no command" err &&
	test_expect_code 0 tunekit lock --measure-lock none -- true &&
	mkdir lockdir2 &&
	test_expect_code 1 tunekit lock --measure-lock lockdir2 -- true 2>err &&
	grep -q "measurement lock" err
'

test_expect_success 'the bench scripts take tunekit'"'"'s lock, not a file of their own' '
	! grep -n "flock\|tunekit-measure.lock" "$TOP"/tests/bench/*.sh &&
	grep -q "\"\$TK\" lock -- " "$TOP/tests/bench/kernels.sh" &&
	grep -q "\"\$TK\" lock -- " "$TOP/tests/bench/split.sh"
'

test_expect_success 'an interrupt while waiting for the lock exits 130 and records nothing' '
	{ flock "$L" sleep 4 & } &&
	holder=$! &&
	sleep 0.5 &&
	{ "$TUNEKIT_BIN" measure --measure-lock "$L" --db int.db --task $TASK --naive >out 2>err & } &&
	pid=$! &&
	sleep 1 &&
	kill -INT $pid &&
	{ wait $pid; rc=$?; } &&
	wait $holder &&
	test $rc -eq 130 &&
	grep -q "interrupted while waiting for the measurement lock" err &&
	test "$(sqlite3 int.db "SELECT COUNT(*) FROM measurement")" -eq 0
'

# Each measurement keeps the load average per CPU seen before its timed runs
# (NULL when unknown), and report best flags the records timed on a busy
# machine (load above 1 per CPU).
test_expect_success 'measurements record the load; report best flags busy ones' '
	tunekit measure -q --measure-lock "$L" --db load.db --task $TASK --naive >out &&
	if awk "{ exit !(\$1 > 0.05) }" /proc/loadavg; then
		test "$(sqlite3 load.db "SELECT COUNT(*) FROM measurement WHERE load > 0")" -eq 1
	fi &&
	sqlite3 load.db "UPDATE measurement SET load = 3.5" &&
	tunekit report --db load.db best >best &&
	test "$(tsv_col best busy)" = 1 &&
	sqlite3 load.db "UPDATE measurement SET load = 0.4" &&
	tunekit report --db load.db best >best &&
	test "$(tsv_col best busy)" = 0 &&
	sqlite3 load.db "UPDATE measurement SET load = NULL" &&
	tunekit report --db load.db best >best &&
	test -z "$(tsv_col best busy)" && test "$(tsv_col best task)" = "dense:k=8,m=8,n=8"
'

test_expect_success 'a version-2 store gains the load column when next written' '
	tunekit measure -q --measure-lock "$L" --db v2.db --task $TASK --naive >/dev/null &&
	sqlite3 v2.db "ALTER TABLE measurement DROP COLUMN bounded;
		ALTER TABLE measurement DROP COLUMN load; PRAGMA user_version = 2" &&
	tunekit measure -q --measure-lock "$L" --db v2.db --task $TASK --naive >/dev/null &&
	test "$(sqlite3 v2.db "PRAGMA user_version")" -eq 4 &&
	test "$(sqlite3 v2.db "SELECT COUNT(*) FROM measurement WHERE load IS NULL AND id = 1")" -eq 1 &&
	tunekit report --db v2.db best >best && test_rows best 1
'

test_expect_success 'a lock path that cannot be a lock is an error' '
	mkdir lockdir &&
	test_expect_code 1 tunekit measure -q --measure-lock lockdir --task $TASK --naive >out 2>err &&
	grep -q "measurement lock lockdir" err && test $(wc -l <err) -eq 1 &&
	ln -s "$L" lock.link &&
	test_expect_code 1 tunekit measure -q --measure-lock lock.link --task $TASK --naive 2>err &&
	grep -q "measurement lock" err &&
	test_expect_code 2 tunekit measure -q --measure-lock "" --task $TASK --naive 2>err &&
	grep -q "measure-lock" err
'

test_done
