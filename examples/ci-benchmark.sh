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
#   RELEASE.db  the store of the last release (read only)
#   WORKDIR     where nightly.db (the new measurements) and check.xml (the
#               JUnit file) are written; default ./ci-benchmark. An old
#               nightly.db there is removed first.
#
# environment:
#   TUNEKIT     the tunekit binary (default: tunekit from PATH)
#   TARGET      the --target the release store was measured with (default
#               native); the hardware must be the same, or the check fails
#               with status 2
#   THRESHOLD   percent beyond which slower fails the job (default 5)
#   MEASURE     the options of tunekit measure (default "--repeat 20
#               --min-repeat-ms 50": 20 repeats of at least 50 ms each, so
#               that the gate has a sample of the noise, and a repeat
#               averages over the scheduler's time slices on a busy machine)
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
# shellcheck disable=SC2086 # MEASURE is a list of options
"$tk" report --db "$release" best |
	"$tk" measure -q --db "$nightly" --target "$target" --config - \
		${MEASURE:---repeat 20 --min-repeat-ms 50} >/dev/null ||
	exit

# 2. the gate: JUnit XML for the CI service, then the same verdicts as a
# table for the log; the JUnit run's status is the job's
st=0
"$tk" report --db "$nightly" --format junit check --baseline "$release" \
	--threshold "$threshold" >"$work/check.xml" || st=$?
"$tk" report -q --db "$nightly" --format table check --baseline "$release" \
	--threshold "$threshold" 2>/dev/null
exit $st
