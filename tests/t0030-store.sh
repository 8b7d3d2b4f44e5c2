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

test_expect_success 'a damaged store is refused on open, before anything is printed or written' '
	tunekit measure -q --db dmg.db --task $TASK --sample 24 --batch 24 --repeat 1 >/dev/null &&
	sqlite3 dmg.db "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null &&
	size=$(wc -c <dmg.db) && test "$size" -gt 16384 &&
	printf "\336\255\276\357%.0s" $(seq 1024) | dd of=dmg.db bs=4096 seek=3 conv=notrunc 2>/dev/null &&
	cp dmg.db dmg.orig &&
	test_expect_code 3 tunekit report --db dmg.db best >out 2>err &&
	test ! -s out && test $(wc -l <err) -eq 1 && grep -q "record store is damaged" err &&
	test_expect_code 3 tunekit measure --db dmg.db --task $TASK --naive >out 2>err &&
	test ! -s out &&
	test_expect_code 3 tunekit export --db dmg.db --out exp >out 2>err &&
	test ! -e exp &&
	test_expect_code 3 tunekit extract-features --db dmg.db --kind knob >out 2>err &&
	test ! -s out &&
	cmp dmg.db dmg.orig
'

test_expect_success 'a store in a directory the user cannot write is read (report, export)' '
	id -u nobody >/dev/null 2>&1 && command -v runuser >/dev/null || { echo "# needs root and runuser: skipped"; exit 0; }
	[ "$(id -u)" -eq 0 ] || { echo "# needs root: skipped"; exit 0; }
	mkdir -p ro && tunekit measure -q --db ro/s.db --task $TASK --sample 2 --repeat 1 >/dev/null &&
	rm -f ro/s.db-wal ro/s.db-shm && chmod 755 ro && chmod 644 ro/s.db &&
	chmod 755 "$TRASH" &&
	runuser -u nobody -- "$TUNEKIT_BIN" report --db "$TRASH/ro/s.db" best --format tsv >out 2>err &&
	test_rows out 1 &&
	mkdir -m 777 expdir &&
	runuser -u nobody -- "$TUNEKIT_BIN" export --db "$TRASH/ro/s.db" --out "$TRASH/expdir/k" >/dev/null 2>err &&
	test -e expdir/k/Makefile
'

# A full disk was exit 3 ("database or disk is full"), a read-only
# filesystem "No such file or directory". Both are conditions of the
# machine: exit 1, named. A private mount namespace keeps the small
# filesystem to this test.
test_expect_success 'a full disk is exit 1 "disk full"; a read-only filesystem says so' '
	[ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null || { echo "# needs root and unshare: skipped"; exit 0; }
	mkdir fs && cat >fill.sh <<-EOF &&
	set -e
	mount -t tmpfs -o size=2m tmpfs "$TRASH/fs"
	"$TUNEKIT_BIN" measure -q --db "$TRASH/fs/s.db" --task $TASK --naive --repeat 1 >/dev/null
	dd if=/dev/zero of="$TRASH/fs/fill" bs=64k 2>/dev/null || true
	rc=0; "$TUNEKIT_BIN" measure -q --db "$TRASH/fs/s.db" --task $TASK --sample 40 --repeat 1 \
		>/dev/null 2>"$TRASH/full.err" || rc=\$?; echo \$rc >"$TRASH/full.rc"
	rm "$TRASH/fs/fill"
	mount -o remount,ro "$TRASH/fs"
	rc=0; "$TUNEKIT_BIN" measure -q --db "$TRASH/fs/s.db" --task $TASK --naive --repeat 1 \
		>/dev/null 2>"$TRASH/ro.err" || rc=\$?; echo \$rc >"$TRASH/ro.rc"
	"$TUNEKIT_BIN" report --db "$TRASH/fs/s.db" best --format tsv >"$TRASH/ro.best"
	EOF
	unshare -m sh fill.sh &&
	test "$(cat full.rc)" -eq 1 && test $(wc -l <full.err) -eq 1 &&
	grep -q "s.db: disk full" full.err &&
	test "$(cat ro.rc)" -eq 1 && test $(wc -l <ro.err) -eq 1 &&
	grep -q "s.db: the record store is on a read-only filesystem" ro.err &&
	test_rows ro.best 1
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
	tunekit report --db kill.db runs >runs && test_rows runs 2
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
	test_rows out 3
'

test_done
