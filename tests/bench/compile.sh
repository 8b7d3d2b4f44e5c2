#!/bin/sh
# Compile time per kernel (not a test): the C that two tunekit binaries
# generate for the same configurations, each compiled with the kernel flags
# of an AVX-512 target, the two in turn per configuration (each first on
# alternate configurations), so that a machine whose load drifts weighs on
# both alike. Prints per configuration the lines and the compiler's user +
# system seconds of each, then the totals over the sample and per task.
#
# usage: compile.sh NEW BASE [SAMPLE [SEED]]
#   NEW, BASE  tunekit binaries; SAMPLE configurations per task (default 8)
# MEASURE_TASKS (one task a line) overrides the mix of bench-measure;
# KCC and KFLAGS the compiler and flags (default: cc and the flags of
# tunekit's avx512 target at -O3).
set -e
NEW=$1 BASE=$2 SAMPLE=${3:-8} SEED=${4:-1}
[ -x "$NEW" ] && [ -x "$BASE" ] || {
	echo "usage: compile.sh NEW BASE [SAMPLE [SEED]]" >&2
	exit 2
}
TASKS=${MEASURE_TASKS:-$(cat "$(dirname "$0")/measure-tasks.txt")}
KCC=${KCC:-cc}
KFLAGS=${KFLAGS:-"-O3 -fPIC -shared -fno-math-errno -fno-trapping-math -ffp-contract=fast -march=native -mprefer-vector-width=512"}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT

# user + system seconds of compiling $1
ctime() {
	# shellcheck disable=SC2086
	/usr/bin/time -f '%U %S' -o "$DIR/time" $KCC $KFLAGS -o "$DIR/k.so" "$1" >/dev/null 2>&1 </dev/null
	awk '{ print $1 + $2 }' "$DIR/time"
}

i=0
printf 'task\tconfig\tlines_base\tlines_new\tcompile_s_base\tcompile_s_new\n'
echo "$TASKS" | sed '/^$/d' | while read -r t; do
	"$NEW" measure --task "$t" --sample "$SAMPLE" --seed "$SEED" --emit-sched |
		sed -n 's/^# \([^:]*\)$/\1/p' >"$DIR/configs"
	while read -r c; do
		i=$((i + 1))
		"$BASE" measure --task "$t" --config "$c" --emit-c >"$DIR/base.c" </dev/null
		"$NEW" measure --task "$t" --config "$c" --emit-c >"$DIR/new.c" </dev/null
		if [ $((i % 2)) -eq 1 ]; then
			sb=$(ctime "$DIR/base.c"); sn=$(ctime "$DIR/new.c")
		else
			sn=$(ctime "$DIR/new.c"); sb=$(ctime "$DIR/base.c")
		fi
		printf '%s\t%s\t%d\t%d\t%s\t%s\n' "$t" "$c" "$(wc -l <"$DIR/base.c")" \
			"$(wc -l <"$DIR/new.c")" "$sb" "$sn"
	done <"$DIR/configs"
done | tee "$DIR/out.tsv"
awk -F'\t' '{
	n[$1]++; lb[$1] += $3; ln[$1] += $4; cb[$1] += $5; cn[$1] += $6; if ($5 > mb[$1]) mb[$1] = $5
	if ($6 > mn[$1]) mn[$1] = $6
	N++; LB += $3; LN += $4; CB += $5; CN += $6
}
END {
	printf "\n%-45s %3s %13s %17s %13s\n", "task", "n", "lines", "compile_s", "max_s"
	for (t in n)
		printf "%-45s %3d %6d %6d %8.1f %8.1f %6.2f %6.2f\n", t, n[t], lb[t], ln[t], cb[t], cn[t], mb[t], mn[t]
	printf "%-45s %3d %6d %6d %8.1f %8.1f\n", "all", N, LB, LN, CB, CN
	printf "compile seconds per kernel: base %.2f, new %.2f (%.2fx less)\n", CB / N, CN / N, CB / CN
}' "$DIR/out.tsv"
