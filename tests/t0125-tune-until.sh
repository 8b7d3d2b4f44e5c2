#!/bin/sh
# tune --until N: a task is tuned only by the trials it lacks in the store,
# earlier runs' configurations are never measured again; report best
# --network: the network's tasks and its estimated latency; examples/tune.mk:
# a make target per task of a model, safe under make -j2, idempotent.
. "$(dirname "$0")/lib.sh"

A='dense:m=16,n=16,k=16'
B='dense:m=8,n=8,k=8'

# distinct configurations and records of a task in store $1
configs() {
	sqlite3 "$1" "SELECT count(DISTINCT m.config_id) FROM measurement m JOIN config c ON
		c.id = m.config_id JOIN task t ON t.id = c.task_id WHERE t.key = '$2'"
}

test_expect_success 'until N tunes a new task N trials' '
	tunekit tune -q --task $A --until 6 --confirm 0 >out &&
	test "$(configs test.db dense:k=16,m=16,n=16)" = 6
'

test_expect_success 'until N again tunes nothing and says so, exit 0' '
	tunekit tune --task $A --until 6 >out 2>err &&
	test ! -s out &&
	grep "every task has 6 trials" err &&
	test "$(sqlite3 test.db "SELECT count(*) FROM run")" = 1
'

test_expect_success 'a larger N tunes only the difference, no configuration twice' '
	tunekit tune -q --task dense:k=16,m=16,n=16 --until 10 --confirm 0 >out &&
	test "$(tail -n +2 out | wc -l)" = 4 &&
	test "$(configs test.db dense:k=16,m=16,n=16)" = 10 &&
	test "$(sqlite3 test.db "SELECT count(*) FROM measurement")" = 10
'

test_expect_success 'several tasks: those short of N share what they lack' '
	tunekit tune -q --task $A --task $B --until 10 --confirm 0 >out &&
	test "$(tail -n +2 out | cut -f4 | sort -u)" = dense:k=8,m=8,n=8 &&
	test "$(configs test.db dense:k=8,m=8,n=8)" = 10
'

test_expect_success 'until is refused with --trials, --resume, --replay or below 1' '
	test_expect_code 2 tunekit tune --task $A --until 5 --trials 3 &&
	test_expect_code 2 tunekit tune --resume --until 5 &&
	test_expect_code 2 tunekit tune --task $A --until 0 &&
	test_expect_code 2 tunekit tune --task $A --until 5 --replay test.db
'

printf "# two layers\nweight\ttask\n3\t%s\n2\t%s\n1\tdense:m=4,n=4,k=4\n" $A $B >net.tsv

test_expect_success 'report best --network: its tasks with weights, the estimate on stderr' '
	tunekit report --network net.tsv best >best 2>err &&
	test "$(head -1 best | tr "\t" "\n" | tail -1)" = weight &&
	test "$(tail -n +2 best | wc -l)" = 2 &&
	test "$(tail -n +2 best | cut -f11 | sort | tr "\n" " ")" = "2 3 " &&
	grep "^network net.tsv on hardware 1: estimated latency .* and more (2 of 3 tasks tuned)" err &&
	want=$(tail -n +2 best | awk -F"\t" "{ s += \$5 * \$NF } END { print s }") &&
	got=$(sed -n "s/.*estimated latency \([0-9.]* [mun]*s\) .*/\1/p" err |
		awk "{ print \$1 * (\$2 == \"ns\" ? 1e-9 : \$2 == \"us\" ? 1e-6 : \$2 == \"ms\" ? 1e-3 : 1) }") &&
	awk -v a="$want" -v b="$got" "BEGIN { exit !(b > 0 && a / b > 0.99 && a / b < 1.01) }"
'

test_expect_success 'report best --network: a network none of whose tasks was tuned' '
	printf "weight\ttask\n1\tdense:m=3,n=3,k=3\n" >none.tsv &&
	tunekit report --network none.tsv best >best 2>err &&
	test "$(wc -l <best)" = 1 &&
	grep "none of its 1 tasks has a valid record" err
'

MK=$TOP/examples/tune.mk
mk() {
	make -f "$MK" MODEL=net.tsv DB=mk.db TUNEKIT="$TUNEKIT_BIN" TUNEFLAGS="--confirm 0" "$@"
}

test_expect_success 'examples/tune.mk: make -j2 tunes every task into one store' '
	{ mk -j2 TRIALS=5 >out 2>&1 || { cat out; false; }; } &&
	for t in dense:k=16,m=16,n=16 dense:k=8,m=8,n=8 dense:k=4,m=4,n=4; do
		test "$(configs mk.db $t)" = 5 || return 1
	done &&
	test "$(sqlite3 mk.db "SELECT count(*) FROM measurement")" = 15 &&
	test "$(sqlite3 mk.db "SELECT count(*) FROM run")" = 3
'

test_expect_success 'examples/tune.mk: a second make does nothing' '
	mk -j2 TRIALS=5 >out 2>&1 &&
	grep "Nothing to be done" out &&
	test "$(sqlite3 mk.db "SELECT count(*) FROM run")" = 3
'

test_expect_success 'examples/tune.mk: a larger TRIALS tunes only what each task lacks' '
	mk -j2 TRIALS=8 >out 2>&1 &&
	for t in dense:k=16,m=16,n=16 dense:k=8,m=8,n=8 dense:k=4,m=4,n=4; do
		test "$(configs mk.db $t)" = 8 || return 1
	done &&
	test "$(sqlite3 mk.db "SELECT count(*) FROM measurement")" = 24
'

test_expect_success 'examples/tune.mk: make report prints the estimate of all tasks' '
	mk report >out 2>&1 &&
	grep "^network net.tsv on hardware 1: estimated latency [0-9.]* [mun]*s (3 of 3 tasks tuned)" out ||
	{ cat out; false; }
'

test_expect_success 'examples/tune.mk: no MODEL is a make error' '
	test_must_fail make -f "$MK" >out 2>&1 &&
	grep "give MODEL=" out
'

test_done
