#!/bin/sh
# merge and --shard: a network tuned in four shards and merged holds the
# records one process makes; merging twice adds nothing; damaged inputs
# are refused; bad shards are usage errors.
. "$(dirname "$0")/lib.sh"

# Four tiny tasks; 16 trials are one round of 4 each, all of them drawn
# before the first model fit, so one process and four shards choose alike.
cp "$TEST_DIR/data/tiny-network.tsv" tiny.tsv
FAST='--repeat 1 --min-repeat-ms 1 --confirm 0 --trials 16 --seed 7'

# The (task, config) pairs of a store's measurements, sorted.
pairs() {
	sqlite3 "$1" "SELECT t.key || ' ' || c.text FROM measurement m
		JOIN config c ON c.id = m.config_id JOIN task t ON t.id = c.task_id" | sort
}

test_expect_success 'four shards in four processes, merged, measure what one process does' '
	tunekit tune -q --db one.db --network tiny.tsv $FAST >one.tsv &&
	for i in 1 2 3 4; do
		"$TUNEKIT_BIN" tune -q --db s$i.db --network tiny.tsv $FAST --shard $i/4 >s$i.tsv &
	done &&
	wait &&
	for i in 1 2 3 4; do test_rows s$i.tsv 4 || return 1; done &&
	md5sum s1.db s2.db s3.db s4.db >inputs.md5 &&
	tunekit merge all.db s1.db s2.db s3.db s4.db >merge.tsv &&
	md5sum -c --quiet inputs.md5 &&
	head -1 merge.tsv | grep -q "^input	hardware	tasks	configs	runs	runs_known	records	duplicates" &&
	test "$(tsv_col merge.tsv records 2)" -eq 4 &&
	test "$(awk -F"\t" "NR > 1 { n += \$7 } END { print n }" merge.tsv)" -eq 16 &&
	test "$(tsv_col merge.tsv hardware 2)" -eq 1 && test "$(tsv_col merge.tsv hardware 3)" -eq 0 &&
	pairs one.db >want && pairs all.db >got &&
	test $(wc -l <want) -eq 16 &&
	test_cmp want got
'

test_expect_success 'each shard ran its own share: one task, its trials, its parameters' '
	for i in 1 2 3 4; do
		test "$(sqlite3 s$i.db "SELECT count(DISTINCT task_id) FROM config")" -eq 1 &&
		sqlite3 s$i.db "SELECT params FROM run" >params &&
		grep -q "^shard=$i/4\$" params && grep -q "^trials=16\$" params &&
		test $(grep -c "^task=" params) -eq 4 || return 1
	done &&
	test "$(sqlite3 s2.db "SELECT key FROM task")" = "dense:k=16,m=8,n=8"
'

test_expect_success 'runs with the same id on different hosts stay apart, trials unique' '
	test "$(sqlite3 s1.db "SELECT group_concat(id) FROM run")" = 1 &&
	test "$(sqlite3 s4.db "SELECT group_concat(id) FROM run")" = 1 &&
	test "$(sqlite3 all.db "SELECT count(*) FROM run")" -eq 4 &&
	test "$(sqlite3 all.db "SELECT count(*) FROM (SELECT run_id, trial FROM measurement
		GROUP BY run_id, trial HAVING count(*) > 1)")" -eq 0 &&
	test "$(sqlite3 all.db "SELECT count(*) FROM run_log")" -eq \
		"$(for i in 1 2 3 4; do sqlite3 s$i.db "SELECT count(*) FROM run_log"; done |
		awk "{ n += \$1 } END { print n }")"
'

test_expect_success 'merging the same stores again adds nothing' '
	sqlite3 all.db "SELECT * FROM measurement ORDER BY id" >before &&
	tunekit merge all.db s3.db s1.db s2.db s4.db >again.tsv &&
	awk -F"\t" "NR > 1 && (\$2 + \$3 + \$4 + \$5 + \$7 + \$9 + \$10 + \$11 + \$12 != 0 ||
		\$6 != 1 || \$8 != 4) { print; bad = 1 } END { exit bad }" again.tsv &&
	sqlite3 all.db "SELECT * FROM measurement ORDER BY id" >after &&
	test_cmp before after
'

test_expect_success 'report best of the merged store has every task of the network' '
	tunekit report --db all.db best >best &&
	test_rows best 4 &&
	awk -F"\t" "NR > 1 { print \$2 }" best | sort >tasks &&
	awk -F"\t" "NR > 2 { print \$2 }" tiny.tsv | sort >want &&
	test_cmp want tasks
'

test_expect_success 'a truncated input is refused with one line, exit 3, OUT untouched' '
	head -c 8192 s2.db >cut.db &&
	sqlite3 all.db .dump >before &&
	test_expect_code 3 tunekit merge all.db s1.db cut.db >out 2>err &&
	test $(wc -l <err) -eq 1 &&
	grep -q "^tunekit merge: cut.db: record store is damaged" err &&
	test_cmp /dev/null out &&
	sqlite3 all.db .dump >after &&
	test_cmp before after &&
	test_expect_code 3 tunekit merge new.db cut.db 2>err &&
	test ! -e new.db
'

test_expect_success 'other inputs that cannot be merged' '
	echo "not a store" >junk.db &&
	test_expect_code 3 tunekit merge all.db junk.db 2>err &&
	grep -q "junk.db: not a tunekit record store" err &&
	test_expect_code 3 tunekit merge all.db absent.db 2>err &&
	grep -q "absent.db: cannot open record store" err &&
	test_expect_code 2 tunekit merge all.db all.db 2>err &&
	grep -q "all.db is the output store" err &&
	test_expect_code 2 tunekit merge all.db 2>err &&
	test $(wc -l <err) -eq 1 &&
	test_expect_code 2 tunekit merge --format xml all.db s1.db 2>err &&
	test $(wc -l <err) -eq 1
'

test_expect_success 'a store of 160000 records to merge' '
	cp s1.db big.db &&
	sqlite3 big.db "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000)
		INSERT INTO measurement(config_id, hardware_id, run_id, trial, valid, error, message,
		mean, std, median, number, nrepeat, times, compile_s, at, load)
		SELECT config_id, hardware_id, run_id, 4 * i + trial, valid, error, message, mean, std,
		median, number, nrepeat, times, compile_s, at + i, load FROM measurement, n" &&
	tunekit merge -q k.db s2.db >/dev/null
'

test_expect_success 'a merge killed with SIGKILL leaves OUT whole, and the next one completes it' '
	"$TUNEKIT_BIN" merge -q k.db big.db >/dev/null 2>&1 &
	pid=$!
	sleep 0.3
	kill -9 $pid
	wait $pid
	n=$(sqlite3 big.db "SELECT count(*) FROM measurement") &&
	test "$(sqlite3 k.db "PRAGMA integrity_check")" = ok &&
	got=$(sqlite3 k.db "SELECT count(*) FROM measurement m JOIN run r ON r.id = m.run_id
		WHERE r.argv LIKE \"%--shard 1/4%\"") &&
	echo "killed merge left $got of $n records" >&2 &&
	{ test "$got" -eq 0 || test "$got" -eq "$n"; } &&
	test "$(sqlite3 k.db "SELECT count(*) FROM measurement m JOIN run r ON r.id = m.run_id
		WHERE r.argv LIKE \"%--shard 2/4%\"")" -eq 4 &&
	tunekit merge k.db big.db >sum &&
	test "$(sqlite3 k.db "SELECT count(*) FROM measurement")" -eq $((n + 4))
'

test_expect_success 'the summary as JSON' '
	tunekit merge --format json j.db s1.db >j.json &&
	grep -q "\"input\": \"s1.db\", \"hardware\": 1, \"tasks\": 1, \"configs\": 4, \"runs\": 1" j.json
'

test_expect_success 'a bad --shard is a usage error of one line' '
	for s in 0/4 5/4 x 1/0 4 -1/4 1/4x ""; do
		test_expect_code 2 tunekit tune --db bad.db --network tiny.tsv --trials 4 --shard "$s" \
			2>err </dev/null >/dev/null &&
		test $(wc -l <err) -eq 1 && grep -q "shard" err &&
		test_expect_code 2 tunekit measure --db bad.db --network tiny.tsv -n 1 --shard "$s" \
			2>err >/dev/null &&
		test $(wc -l <err) -eq 1 && grep -q "shard" err || { echo "shard \"$s\""; return 1; }
	done
'

test_expect_success 'more shards than tasks: an empty share says so and exits 0' '
	tunekit tune --db e6.db --network tiny.tsv $FAST --shard 6/6 >out 2>err &&
	grep -q "shard 6/6 of 4 tasks and 16 trials has nothing to tune" err &&
	test_cmp /dev/null out &&
	tunekit merge -q e.db e6.db >sum &&
	test "$(tsv_col sum runs)" -eq 0
'

test_expect_success 'measure --shard: tasks across shards, or one task s configurations' '
	tunekit measure -q --db m.db --network tiny.tsv -n 2 --repeat 1 --min-repeat-ms 1 >/dev/null &&
	for i in 1 2 3; do
		tunekit measure -q --db m$i.db --network tiny.tsv -n 2 --repeat 1 --min-repeat-ms 1 \
			--shard $i/3 >/dev/null || return 1
	done &&
	test "$(sqlite3 m1.db "SELECT count(*) FROM task")" -eq 2 &&
	tunekit merge -q mm.db m1.db m2.db m3.db >/dev/null &&
	pairs m.db >want && pairs mm.db >got && test_cmp want got &&
	T=dense:k=8,m=8,n=8 &&
	tunekit measure -q --db c.db -t $T -n 5 --naive --repeat 1 --min-repeat-ms 1 >/dev/null &&
	for i in 1 2 3 4; do
		tunekit measure -q --db c$i.db -t $T -n 5 --naive --repeat 1 --min-repeat-ms 1 \
			--shard $i/4 >c$i.tsv || return 1
	done &&
	test_rows c1.tsv 2 && test_rows c4.tsv 1 &&
	tunekit merge -q cm.db c1.db c2.db c3.db c4.db >/dev/null &&
	pairs c.db >want && pairs cm.db >got && test $(wc -l <want) -eq 6 && test_cmp want got
'

test_done
