#!/bin/sh
# Per-thread timing of an exported multi-threaded kernel, in blocks that
# alternate with a pure AVX-512 FMA loop (tests/bench/kernels/split.c): when
# one thread's share of the kernel is slow, is its CPU slow, or its memory?
# A benchmark tool (README, "Two threads on a shared host"), not in CI.
#
# usage: split.sh KERNEL_DIR [BLOCKS]
#   KERNEL_DIR  one kernel's directory as `tunekit export` writes it (e.g.
#               build/bench/kernels/t2/NAME after make bench-kernels), built
#               for a target with threads > 1 and isa=avx512
#   BLOCKS      blocks of 200 calls (default 100)
# environment: BENCH_LOCK (the measurement lock the timing runs under, with
#              tunekit lock: default tunekit's own; none: no lock), TUNEKIT
#              (default: the tunekit built in this tree), CC (default cc)
set -e
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: split.sh KERNEL_DIR [BLOCKS]" >&2; exit 2; }
D=$1 BLOCKS=${2:-100}
HERE=$(cd "$(dirname "$0")" && pwd)
TK=${TUNEKIT:-$HERE/../../tunekit}
if [ -n "${BENCH_LOCK:-}" ]; then
	TUNEKIT_MEASURE_LOCK=$BENCH_LOCK
	export TUNEKIT_MEASURE_LOCK
fi
CC=${CC:-cc}
src=
for f in "$D"/*.c; do
	case $(basename "$f") in ref_kernels.c|test_kernels.c) ;; *) src=$f ;; esac
done
[ -n "$src" ] && [ -f "${src%.c}.h" ] || { echo "split.sh: no exported kernel in $D" >&2; exit 2; }
name=$(basename "$src" .c)
nthr=$(sed -n 's/.*#pragma omp parallel for num_threads(\([0-9]*\)).*/\1/p' "$src" | head -1)
[ -n "$nthr" ] && [ "$nthr" -gt 1 ] || { echo "split.sh: $name is not multi-threaded" >&2; exit 2; }
# buffer sizes, in the header's order: " *   bufs[0]  output O[...], 50176 floats"
sizes=$(sed -n 's/^ \*   bufs\[[0-9]*\] .*, \([0-9]*\) floats$/\1/p' "${src%.c}.h")
ws=$(sed -n 's/.*_WORKSPACE_FLOATS \([0-9]*\)UL.*/\1/p' "${src%.c}.h" | head -1)
cflags=$(sed -n 's/^CFLAGS = //p' "$D/Makefile")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

# Every parallel loop: a parallel region whose threads add the time of their
# static share to tk_split_s and note their CPU (the loop ends where the
# braces opened on its first line close).
{
	printf '#define _GNU_SOURCE\n#include <omp.h>\n#include <sched.h>\n'
	printf 'extern double tk_split_s[];\nextern int tk_split_cpu[];\n'
	awk '
	!inloop && /#pragma omp parallel for num_threads\(/ {
		n = $0; sub(/.*num_threads\(/, "", n); sub(/\).*/, "", n)
		print "  #pragma omp parallel num_threads(" n ")"
		print "  {"
		print "  int tk_tid_ = omp_get_thread_num(); double tk_t0_ = omp_get_wtime();"
		print "  tk_split_cpu[tk_tid_] = sched_getcpu();"
		print "  #pragma omp for schedule(static) nowait"
		inloop = 1; depth = 0
		next
	}
	inloop {
		print
		o = gsub(/\{/, "{"); c = gsub(/\}/, "}"); depth += o - c
		if ((o || c) && depth == 0) {
			print "  tk_split_s[tk_tid_] += omp_get_wtime() - tk_t0_;"
			print "  }"
			inloop = 0
		}
		next
	}
	{ print }' "$src"
} >"$W/$name.c"
cp "${src%.c}.h" "$W/"
# shellcheck disable=SC2086 # the flags are word-split on purpose
$CC $cflags -c -o "$W/$name.o" "$W/$name.c"
# shellcheck disable=SC2086
$CC -O2 -march=native -fopenmp -DKERNEL="tk_$name" -DNTHREADS="$nthr" -DWS_FLOATS="${ws:-0}UL" \
	-o "$W/split" "$HERE/kernels/split.c" "$W/$name.o"
echo "# $name, $nthr threads, $BLOCKS blocks"
# shellcheck disable=SC2086
"$TK" lock -- "$W/split" "$BLOCKS" $sizes
