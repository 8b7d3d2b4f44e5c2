#!/bin/sh
# run.sh BUILD SECONDS NAME...: fuzz each harness BUILD/fuzz-NAME for SECONDS
# with tests/fuzz/corpus/NAME as seeds (new inputs go to BUILD/corpus/NAME),
# and print one line per harness: executions, new corpus inputs, crashes.
# Crash inputs land in BUILD/crashes/NAME/; exit 1 if there is any.
set -u
build=$1 secs=$2
shift 2
dir=$(cd "$(dirname "$0")" && pwd)
total=0
printf '%-14s %8s %12s %10s %8s\n' harness seconds executions exec/s crashes
for name in "$@"; do
	mkdir -p "$build/corpus/$name" "$build/crashes/$name"
	"$build/fuzz-$name" -max_total_time="$secs" -print_final_stats=1 -timeout=10 \
		-rss_limit_mb=4096 -artifact_prefix="$build/crashes/$name/" \
		"$build/corpus/$name" "$dir/corpus/$name" >"$build/$name.log" 2>&1
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/$name.log" | tail -1)
	crashes=$(ls "$build/crashes/$name" | wc -l)
	total=$((total + crashes))
	printf '%-14s %8s %12s %10s %8s\n' "$name" "$secs" "${execs:-?}" \
		"$(( ${execs:-0} / (secs > 0 ? secs : 1) ))" "$crashes"
done
if [ "$total" -gt 0 ]; then
	echo "fuzz: $total crash input(s) in $build/crashes (logs: $build/NAME.log)"
	exit 1
fi
