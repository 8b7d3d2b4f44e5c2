#!/bin/sh
# gate.sh: how often the regression gate (tunekit report check, run by
# examples/ci-benchmark.sh) gets it right on this machine (issue 28). N
# rounds; in each, the job re-measures the best configurations of TUNED.db
# (a tuning store, e.g. make bench-kernels') with nothing changed: it should
# pass. Then the store it measured, every latency made 20% slower with the
# sqlite3 shell, is checked against the same baseline: a planted
# regression, it should fail. Prints one line per round and the counts. Not
# a test: timings depend on the machine and its load.
#
# The baseline, by GATE_BASELINE:
#   session (default)  the job's RELEASE_TUNEKIT mode with this same binary
#                      (nothing changed): the release's kernels measured
#                      again in the same session, in turn with the
#                      current ones kernel by kernel (compared pair by
#                      pair)
#   stored             the stored figures of a release store: the job run
#                      once at the start, its nightly.db kept as the
#                      release's, as a team keeps the job's store of each
#                      release
#
# usage: gate.sh TUNEKIT TUNED.db TARGET N WORKDIR
#   TARGET  the --target TUNED.db was tuned for (cpu:threads=1 for a
#           make bench-kernels store at one thread)
set -u
[ $# -eq 5 ] || { echo "usage: gate.sh TUNEKIT TUNED.db TARGET N WORKDIR" >&2; exit 2; }
TK=$1 TUNED=$2 TGT=$3 N=$4 DIR=$5
MODE=${GATE_BASELINE:-session}
HERE=$(cd "$(dirname "$0")" && pwd)
CI=$HERE/../../../examples/ci-benchmark.sh
mkdir -p "$DIR" || exit 2
REL=$TUNED
case $MODE in
session) ;;
stored)
	TUNEKIT=$TK TARGET=$TGT sh "$CI" "$TUNED" "$DIR/release" >"$DIR/release.log" 2>&1
	[ -f "$DIR/release/nightly.db" ] || { echo "gate.sh: the release job failed" >&2; exit 1; }
	REL=$DIR/release.db
	cp "$DIR/release/nightly.db" "$REL"
	;;
*) echo "gate.sh: GATE_BASELINE is session or stored" >&2; exit 2 ;;
esac

# the verdicts of a check TSV on one line
verdicts() {
	awk -F'\t' 'NR > 1 { printf "%s%s %s [%s, %s]", s, $3, $4, $5, $6; s = "; " }' "$1"
}

pass=0 fail=0 i=1
while [ $i -le "$N" ]; do
	if [ "$MODE" = session ]; then
		RELEASE_TUNEKIT=$TK TUNEKIT=$TK TARGET=$TGT sh "$CI" "$REL" "$DIR/r$i" \
			>"$DIR/r$i.log" 2>&1
		st=$?
		base=$DIR/r$i/release-now.db
	else
		TUNEKIT=$TK TARGET=$TGT sh "$CI" "$REL" "$DIR/r$i" >"$DIR/r$i.log" 2>&1
		st=$?
		base=$REL
	fi
	[ $st -eq 0 ] && pass=$((pass + 1))
	# the job's verdicts again as TSV (the same seed: the same verdicts)
	"$TK" report --db "$DIR/r$i/nightly.db" --format tsv check --baseline "$base" \
		>"$DIR/r$i.tsv" 2>/dev/null
	cp "$DIR/r$i/nightly.db" "$DIR/p$i.db"
	sqlite3 "$DIR/p$i.db" \
		"UPDATE measurement SET median = median * 1.2, mean = mean * 1.2, std = std * 1.2"
	"$TK" report --db "$DIR/p$i.db" --format tsv check --baseline "$base" \
		>"$DIR/p$i.tsv" 2>/dev/null
	pst=$?
	[ $pst -eq 1 ] && fail=$((fail + 1))
	printf 'round %d: unchanged: exit %d (%s); planted +20%%: exit %d (%s)\n' "$i" "$st" \
		"$(verdicts "$DIR/r$i.tsv")" "$pst" "$(verdicts "$DIR/p$i.tsv")"
	i=$((i + 1))
done
echo "baseline: $MODE; unchanged kernels re-measured: passed $pass of $N"
echo "baseline: $MODE; planted 20% regression: failed $fail of $N"
