#!/bin/sh
# ci-benchmark.sh: a nightly benchmark job to copy into a CI pipeline. It
# measures the best configurations of the store kept from the last release
# again, on this machine and now (after a compiler, library or code change),
# into a new store, and gates on `tunekit report check`: the job fails when
# a kernel got slower than the release's beyond the noise of the
# measurements and the threshold. The JUnit file is for the CI service's
# test view; the table goes to the job's log.
#
# usage: ci-benchmark.sh RELEASE.db [WORKDIR]
#
#   RELEASE.db  the store of the last release (read only). Best: the
#               nightly.db this job wrote for the release build, kept as
#               the baseline of the next one, so that both sides are
#               measured alike. The tuning store works too, but its records
#               have the tuner's few short repeats: a wider interval, and
#               "unchanged" for more of what is a small regression.
#   WORKDIR     where nightly.db (the new measurements), check.xml (the
#               JUnit file) and best.tsv (the configurations) are written;
#               default ./ci-benchmark. An old nightly.db there is removed
#               first.
#
# environment:
#   TUNEKIT     the tunekit binary (default: tunekit from PATH)
#   TARGET      the --target the release store was measured with (default
#               native); the hardware must be the same, or the check fails
#               with status 2
#   THRESHOLD   percent beyond which slower fails the job (default 5)
#   RELEASE_TUNEKIT
#               the release's tunekit binary, when the job can keep it: the
#               job then measures the release's kernels again too, in the
#               same session, interleaved with this tunekit's kernel by
#               kernel (for each kernel ROUNDS short passes per side, in the
#               order A B B A A B ...), and checks against those instead of
#               the stored figures, so that a busy or drifting machine (a
#               shared CI runner) slows both sides alike: the two sides of
#               a kernel are measured a second apart, not a whole pass
#               apart, and report check compares them pair by pair.
#               RELEASE.db then only names the configurations.
#   ROUNDS      passes per side and kernel with RELEASE_TUNEKIT (default 8)
#   MEASURE     the options of tunekit measure (default "--clock cpu
#               --repeat 20 --min-repeat-ms 50": CPU time, which time spent
#               waiting for a CPU that another process holds does not
#               inflate, so that a busy runner does not fail the gate; 20
#               repeats of at least 50 ms each, so that the gate has a
#               sample of the noise; with RELEASE_TUNEKIT "--clock cpu
#               --repeat 3 --min-repeat-ms 50" per pass, 24 repeats per side
#               over the 8 passes). Measure the release store with
#               the same options: CPU and wall times do not compare (report check exits 2).
#
# Exit status: that of tunekit report check: 0 nothing slower, 1 a kernel
# is slower (named on stderr), 2 the stores do not compare (other hardware,
# no task in common), 3 a store cannot be read; or measure's status if the
# measurements fail.
set -u
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: ci-benchmark.sh RELEASE.db [WORKDIR]" >&2; exit 2; }
release=$1
work=${2:-ci-benchmark}
tk=${TUNEKIT:-tunekit}
target=${TARGET:-native}
threshold=${THRESHOLD:-5}

mkdir -p "$work" || exit 2
nightly=$work/nightly.db
rm -f "$nightly" "$nightly-wal" "$nightly-shm"

# 1. measure the release's best configurations again: report best writes a
# record stream that measure --config - reads
"$tk" report --db "$release" best >"$work/best.tsv" || exit
measure() { # binary, store, record stream, default options
	# shellcheck disable=SC2086 # MEASURE is a list of options
	"$1" measure -q --db "$2" --target "$target" --config - \
		${MEASURE:-$4} <"$3" >/dev/null
}
baseline=$release
if [ -n "${RELEASE_TUNEKIT:-}" ]; then
	# kernel by kernel, the two binaries in turn (ABBA), so that a change of
	# load between passes hits both sides of a kernel alike
	baseline=$work/release-now.db
	rm -f "$baseline" "$baseline-wal" "$baseline-shm"
	pass="--clock cpu --repeat 3 --min-repeat-ms 50"
	n=$(($(wc -l <"$work/best.tsv") - 1))
	k=1
	while [ "$k" -le "$n" ]; do
		{ head -n 1 "$work/best.tsv" && sed -n "$((k + 1))p" "$work/best.tsv"; } \
			>"$work/kernel.tsv" || exit
		r=1
		while [ "$r" -le "${ROUNDS:-8}" ]; do
			if [ $((r % 2)) -eq 1 ]; then
				measure "$RELEASE_TUNEKIT" "$baseline" "$work/kernel.tsv" "$pass" &&
				measure "$tk" "$nightly" "$work/kernel.tsv" "$pass" || exit
			else
				measure "$tk" "$nightly" "$work/kernel.tsv" "$pass" &&
				measure "$RELEASE_TUNEKIT" "$baseline" "$work/kernel.tsv" "$pass" || exit
			fi
			r=$((r + 1))
		done
		k=$((k + 1))
	done
else
	measure "$tk" "$nightly" "$work/best.tsv" "--clock cpu --repeat 20 --min-repeat-ms 50" || exit
fi

# 2. the gate: JUnit XML for the CI service, then the same verdicts as a
# table for the log; the JUnit run's status is the job's
st=0
"$tk" report --db "$nightly" --format junit check --baseline "$baseline" \
	--threshold "$threshold" >"$work/check.xml" || st=$?
"$tk" report -q --db "$nightly" --format table check --baseline "$baseline" \
	--threshold "$threshold" 2>/dev/null
exit $st
