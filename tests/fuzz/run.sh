#!/bin/sh
# run.sh BUILD CPU_SECONDS NAME...: fuzz each harness BUILD/fuzz-NAME until it
# has had CPU_SECONDS of CPU time (user + system), with tests/fuzz/corpus/NAME
# as seeds (new inputs go to BUILD/corpus/NAME), and print one line per
# harness: CPU and wall seconds, executions, new corpus inputs, crashes.
# CPU time, not wall time: on a loaded machine (make fuzz at nice 19 beside
# builds) a harness given N wall seconds gets a fraction of N on a CPU, so a
# wall budget says little about how hard a reader was tried. libFuzzer has
# only a wall limit, so a harness runs in rounds of at most the CPU time
# still missing, each round resuming from the corpus the last one grew.
# Crash inputs land in BUILD/crashes/NAME/; exit 1 if there is any. A unit
# that takes long is a hang only past 60 wall seconds (-timeout): at nice 19
# beside a build a 0.1 s input was seen to take 12 s, which libFuzzer's
# default of 10 would have written as a slow unit.
set -u
build=$1 target=$2
shift 2
dir=$(cd "$(dirname "$0")" && pwd)
total=0
# the crash, leak, timeout and out-of-memory inputs of harness $1; a slow
# unit is no failure (a harness stopped by SIGSTOP writes one on waking)
found() {
	ls "$build/crashes/$1" | grep -v '^slow-unit-' || true
}
printf '%-14s %7s %7s %12s %8s %8s %8s\n' harness cpu_s wall_s executions exec/cpu_s corpus crashes
for name in "$@"; do
	mkdir -p "$build/corpus/$name" "$build/crashes/$name"
	seeds=$(ls "$build/corpus/$name" | wc -l)
	cpu=0 wall=0 execs=0
	: >"$build/$name.log"
	while [ "$cpu" -lt "$target" ]; do
		left=$((target - cpu))
		start=$(date +%s)
		/usr/bin/time -f '%U %S' -o "$build/$name.time" \
			"$build/fuzz-$name" -max_total_time="$left" -print_final_stats=1 \
			-timeout=60 -report_slow_units=60 -rss_limit_mb=4096 -artifact_prefix="$build/crashes/$name/" \
			"$build/corpus/$name" "$dir/corpus/$name" >>"$build/$name.log" 2>&1
		wall=$((wall + $(date +%s) - start))
		used=$(awk 'END { printf "%d", $1 + $2 + 0.5 }' "$build/$name.time")
		cpu=$((cpu + (used > 0 ? used : 1)))
		n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/$name.log" | tail -1)
		execs=$((execs + ${n:-0}))
		[ -z "$(found "$name")" ] || break
	done
	crashes=$(found "$name" | wc -l)
	total=$((total + crashes))
	printf '%-14s %7s %7s %12s %8s %8s %8s\n' "$name" "$cpu" "$wall" "$execs" \
		"$((execs / (cpu > 0 ? cpu : 1)))" \
		"+$(($(ls "$build/corpus/$name" | wc -l) - seeds))" "$crashes"
done
if [ "$total" -gt 0 ]; then
	echo "fuzz: $total crash input(s) in $build/crashes (logs: $build/NAME.log)"
	exit 1
fi
