#!/bin/sh
# The record store: bad files, killed runs, readers beside writers.
. "$(dirname "$0")/lib.sh"

TASK='dense:m=32,n=32,k=32'

test_expect_success 'a file that is not a store is refused with exit 3 and left alone' '
	head -c 5000 /dev/urandom >junk.db && cp junk.db junk.orig &&
	test_expect_code 3 tunekit report --db junk.db best 2>err && grep -q "not a tunekit record store" err &&
	test_expect_code 3 tunekit measure --db junk.db --task $TASK --naive 2>err &&
	cmp junk.db junk.orig
'

test_expect_success 'an SQLite file of another program is refused and left alone' '
	sqlite3 other.db "CREATE TABLE foo(x); INSERT INTO foo VALUES (1);" && cp other.db other.orig &&
	test_expect_code 3 tunekit measure --db other.db --task $TASK --naive 2>err &&
	cmp other.db other.orig
'

test_expect_success 'a store from a newer tunekit is refused' '
	tunekit measure -q --db new.db --task $TASK --naive >/dev/null &&
	sqlite3 new.db "PRAGMA user_version = 99" &&
	test_expect_code 3 tunekit report --db new.db best 2>err && grep -q "newer" err
'

test_expect_success 'report on a missing store fails cleanly and creates nothing' '
	test_must_fail tunekit report --db missing.db best 2>err &&
	test ! -e missing.db
'

test_expect_success 'a run killed at any moment leaves a consistent store' '
	"$TUNEKIT_BIN" measure -q --db kill.db --task $TASK --sample 40 --batch 2 --repeat 2 >/dev/null &
	pid=$! &&
	n=0 &&
	while [ $n -lt 4 ]; do
		sleep 0.2
		n=$(sqlite3 kill.db "SELECT COUNT(*) FROM measurement" 2>/dev/null || echo 0)
	done &&
	kill -9 $pid && wait $pid 2>/dev/null; true &&
	test "$(sqlite3 kill.db "PRAGMA integrity_check")" = ok &&
	k=$(sqlite3 kill.db "SELECT COUNT(*) FROM measurement") &&
	test $((k % 2)) -eq 0 &&
	test "$(sqlite3 kill.db "SELECT ended IS NULL FROM run")" -eq 1 &&
	tunekit measure -q --db kill.db --task $TASK --naive >/dev/null &&
	test "$(sqlite3 kill.db "SELECT COUNT(*) FROM measurement")" -eq $((k + 1)) &&
	tunekit report --db kill.db runs >runs && test $(tsv_count runs) -eq 2
'

test_expect_success 'SIGINT stops after the batch in flight and keeps it' '
	"$TUNEKIT_BIN" measure -q --db int.db --task $TASK --sample 40 --batch 2 --repeat 2 >/dev/null 2>err &
	pid=$! &&
	n=0 &&
	while [ $n -lt 2 ]; do
		sleep 0.2
		n=$(sqlite3 int.db "SELECT COUNT(*) FROM measurement" 2>/dev/null || echo 0)
	done &&
	kill -INT $pid;
	wait $pid; rc=$?;
	test $rc -eq 130 && grep -q interrupted err &&
	test "$(sqlite3 int.db "SELECT ended IS NOT NULL FROM run")" -eq 1 &&
	test $(( $(sqlite3 int.db "SELECT COUNT(*) FROM measurement") % 2 )) -eq 0
'

test_expect_success 'a reader in a pipeline does not block the writer' '
	tunekit measure -q --db pipe.db --task $TASK --sample 3 |
		tunekit measure -q --db pipe.db --config - >out &&
	test $(tsv_count out) -eq 3
'

test_done
