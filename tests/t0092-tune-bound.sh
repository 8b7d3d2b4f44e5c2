#!/bin/sh
# tune --bound: bounded timing. A trial whose first timed repeat is past K x
# its task's best so far keeps that one repeat and is marked bounded; such
# records are never a task's best nor confirmed; stores of schema version 3
# gain the column.
. "$(dirname "$0")/lib.sh"

# configurations of this task differ in speed by 10x and more
TASK='dense:m=128,n=128,k=128'
K=1.2

test_expect_success 'a tune with a small --bound makes bounded records, and says so' '
	tunekit tune --task $TASK --trials 32 --batch 16 --bound $K --confirm 2 --seed 3 \
		>records 2>err &&
	n=$(sql "SELECT COUNT(*) FROM measurement WHERE bounded") && echo "$n bounded" &&
	test $n -ge 1 &&
	grep -q "^run 1: 32 trials (.*), $n bounded" err &&
	tunekit report runs >runs && test "$(tsv_col runs bounded)" -eq $n
'

test_expect_success 'a bounded record is one repeat past the bound, the others are timed in full' '
	test "$(sql "SELECT COUNT(*) FROM measurement WHERE bounded AND NOT valid")" -eq 0 &&
	test "$(sql "SELECT COUNT(*) FROM measurement WHERE bounded AND nrepeat <> 1")" -eq 0 &&
	test "$(sql "SELECT COUNT(*) FROM measurement WHERE valid AND NOT bounded AND nrepeat <> 5")" -eq 0 &&
	test "$(sql "SELECT COUNT(*) FROM measurement WHERE bounded AND length(times) = 0")" -eq 0 &&
	# the first batch has no best to bound it
	test "$(sql "SELECT COUNT(*) FROM measurement WHERE bounded AND trial < 16")" -eq 0 &&
	# the best when its batch began was at least the fastest earlier record
	test "$(sql "SELECT COUNT(*) FROM measurement b WHERE b.bounded AND NOT b.median >
		$K * (SELECT MIN(a.median) FROM measurement a WHERE a.valid AND a.trial < b.trial)")" -eq 0
'

test_expect_success 'the confirmation measures no bounded configuration and is never bounded' '
	test "$(sql "SELECT COUNT(*) FROM measurement WHERE trial >= 32")" -ge 4 &&
	test "$(sql "SELECT COUNT(*) FROM measurement WHERE trial >= 32 AND bounded")" -eq 0 &&
	test "$(sql "SELECT COUNT(*) FROM measurement a JOIN measurement b
		ON b.config_id = a.config_id AND b.trial >= 32 WHERE a.bounded")" -eq 0
'

test_expect_success 'report records shows the flag' '
	tunekit report records >recs &&
	awk -F"\t" "NR == 1 { for (i = 1; i <= NF; i++) if (\$i == \"bounded\") c = i }
		NR > 1 && \$c == 1 { n++ } END { print n + 0 }" recs >n &&
	test "$(cat n)" -eq "$(sql "SELECT COUNT(*) FROM measurement WHERE bounded")" &&
	test "$(tsv_col recs bounded)" = "$(sql "SELECT bounded FROM measurement ORDER BY id LIMIT 1")"
'

test_expect_success 'report best never rests on a bounded record' '
	cp "$TUNEKIT_DB" fast.db &&
	b=$(sqlite3 fast.db "SELECT id FROM measurement WHERE bounded ORDER BY id LIMIT 1") &&
	sqlite3 fast.db "UPDATE measurement SET median = 1e-9, mean = 1e-9 WHERE id = $b" &&
	tunekit report --db fast.db best >best && test_rows best 1 &&
	test "$(tsv_col best id)" -ne $b &&
	test "$(sqlite3 fast.db "SELECT bounded FROM measurement WHERE id = $(tsv_col best id)")" -eq 0 &&
	# with every valid record bounded the task has no best at all
	sqlite3 fast.db "UPDATE measurement SET bounded = 1 WHERE valid" &&
	tunekit report --db fast.db best >best && test_rows best 0
'

test_expect_success '--bound 0 bounds nothing' '
	tunekit tune -q --db off.db --task $TASK --trials 32 --batch 16 --bound 0 --confirm 0 \
		--seed 3 >/dev/null &&
	test "$(sqlite3 off.db "SELECT COUNT(*) FROM measurement WHERE bounded")" -eq 0 &&
	test "$(sqlite3 off.db "SELECT COUNT(*) FROM measurement WHERE valid AND nrepeat <> 5")" -eq 0 &&
	sqlite3 off.db "SELECT params FROM run" | grep -q "^bound=0$"
'

test_expect_success 'a bound that is not 0 nor a number of at least 1 exits 2' '
	for k in -1 x 0.5 "" 1e400; do
		test_expect_code 2 tunekit tune --db bad.db --task $TASK --trials 4 --bound "$k" \
			2>err || return 1
		grep -q "bound" err || return 1
	done &&
	test_expect_code 2 tunekit tune --db bad.db --task $TASK --trials 4 --bound 0.5 2>err &&
	grep -q "0, or 1 to" err
'

test_expect_success 'a version-3 store gains the bounded column, its records timed in full' '
	tunekit measure -q --db v3.db --task $TASK --naive >/dev/null &&
	sqlite3 v3.db "ALTER TABLE measurement DROP COLUMN bounded; PRAGMA user_version = 3" &&
	tunekit measure -q --db v3.db --task $TASK --naive >/dev/null &&
	test "$(sqlite3 v3.db "PRAGMA user_version")" -eq 4 &&
	test "$(sqlite3 v3.db "SELECT COUNT(*) FROM measurement WHERE bounded = 0")" -eq 2 &&
	tunekit report --db v3.db best >best && test_rows best 1 &&
	tunekit report --db v3.db records >recs && test "$(tsv_col recs bounded)" = 0
'

test_done
