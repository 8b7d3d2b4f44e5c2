# Shell-test library, sourced by every tests/tNNNN-*.sh (in the style of
# git's t/test-lib.sh). Each script runs in a fresh temporary directory with
# its own store ($TUNEKIT_DB) and a compile cache shared by the whole test
# run ($TUNEKIT_CACHE, set by run-all.sh), and calls test_done at the end.
#
#   test_expect_success 'what it checks' '
#           cmd1 && cmd2 && ...
#   '
#   test_must_fail CMD...       CMD must exit non-zero, without a signal
#   test_expect_code N CMD...   CMD must exit with status N
#   test_cmp EXPECTED ACTUAL    files must be equal (shows a diff)

set -u
TEST_DIR=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$TEST_DIR/.." && pwd)
TUNEKIT_BIN=${TUNEKIT_BIN:-$TOP/tunekit}
PATH=$TEST_DIR/bin:$PATH
export PATH
test_name=$(basename "$0" .sh)
TRASH=$(mktemp -d "${TMPDIR:-/tmp}/tunekit-$test_name.XXXXXX")
trap 'cd / && rm -rf "$TRASH"' EXIT
cd "$TRASH" || exit 1
TUNEKIT_DB=$TRASH/test.db
TUNEKIT_CACHE=${TUNEKIT_CACHE:-$TRASH/cache}
export TUNEKIT_DB TUNEKIT_CACHE
# Tests that want every kernel valid must not lose one to the adaptive
# compile limit on a loaded machine; tests of the limit set it themselves.
TUNEKIT_BUILD_ADAPT=0
export TUNEKIT_BUILD_ADAPT
unset TUNEKIT_DATA 2>/dev/null || true

test_count=0
test_failed=0

# A function, so `tunekit ... &` would background a subshell: tests that
# signal a running tunekit start "$TUNEKIT_BIN" directly.
tunekit() {
	"$TUNEKIT_BIN" "$@"
}

test_expect_success() {
	test_count=$((test_count + 1))
	if (eval "$2") >"$TRASH/.out" 2>&1; then
		echo "ok $test_count - $1"
	else
		echo "not ok $test_count - $1"
		sed 's/^/#  /' "$TRASH/.out"
		test_failed=$((test_failed + 1))
	fi
}

test_must_fail() {
	"$@"
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "test_must_fail: command succeeded: $*"
		return 1
	elif [ $rc -gt 128 ] && [ $rc -ne 130 ]; then
		echo "test_must_fail: command died of a signal ($rc): $*"
		return 1
	fi
	return 0
}

test_expect_code() {
	want=$1
	shift
	"$@"
	rc=$?
	if [ $rc -ne "$want" ]; then
		echo "test_expect_code: exit $rc, expected $want: $*"
		return 1
	fi
	return 0
}

test_cmp() {
	diff -u "$1" "$2"
}

# The value of column NAME in line LINE (default 2: the first record) of a
# TSV file with a header.
tsv_col() {
	awk -F'\t' -v name="$2" -v line="${3:-2}" '
		NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next }
		NR == line { if (c) print $c }' "$1"
}

# Number of records (lines after the header) of a TSV file.
tsv_count() {
	awk 'NR > 1' "$1" | wc -l
}

# test_rows FILE N: FILE holds N records under its header (says how many if not)
test_rows() {
	set -- "$1" "$2" "$(tsv_count "$1")"
	[ "$3" -eq "$2" ] && return 0
	echo "test_rows: $1 has $3 records, expected $2"
	return 1
}

sql() {
	sqlite3 "$TUNEKIT_DB" "$@"
}

test_done() {
	echo "# $test_name: $test_count tests, $test_failed failed"
	[ $test_failed -eq 0 ]
}
