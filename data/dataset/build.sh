#!/bin/sh
# build.sh: build, or continue building, tunekit's offline dataset: every
# distinct task of the network zoo measured on several CPU targets of this
# machine, first with random configurations, then with configurations a
# model-guided tuner chose. Real measurements only.
#
#   data/dataset/build.sh [MINUTES]     stop starting new units after MINUTES
#
# Work is cut into units (task x target x phase), each one tunekit run in
# the store $DATASET_DB; a unit is done when its runs hold its trials. A
# killed build continues where it stopped: a tune unit resumes its run, a
# measure unit measures the configurations it still lacks. The first
# build on a machine starts from the shipped data/dataset/dataset.db.gz, so
# builds on other machines (other CPUs: other hardware) add to it.
#
# Environment: TUNEKIT (./tunekit), DATASET_DB
# (data/dataset/build/dataset.db), DATASET_TARGETS (default below),
# DATASET_RANDOM (16 random configurations per task and target),
# DATASET_GUIDED (48 trials of xgb+sa, the first 16 of them random),
# DATASET_PHASES (random guided common: common measures on every other
# target the configurations the first target has of the task, so that one
# set of programs has a label on every target, as TenSet's; repeat, not
# by default, times once more each configuration the target has of the
# task with fewer than DATASET_RECORDS (3) records, one of them valid: a
# configuration's label is the median of its records, and records taken
# a pass apart do not share one burst of load; list it twice to bring
# single records to three),
# DATASET_COMMON_FROM (the store's hardware id whose configurations the
# common phase measures, instead of the first target's: another machine's
# records, so that a new CPU gets the same programs as an old one),
# DATASET_NETWORKS (the order tasks are visited in), DATASET_SKIP_NETWORKS
# (tasks that occur in these networks are not visited: with the held-out
# networks, more training data leaves the evaluation pools as they are),
# DATASET_MAX_LOAD (before
# each unit, wait until the 1-minute load average per CPU is under this; 0,
# the default, never waits: on a shared machine 1.5 keeps other work from
# spreading the timings).
set -eu

TK=${TUNEKIT:-./tunekit}
DB=${DATASET_DB:-data/dataset/build/dataset.db}
SHIP=data/dataset/dataset.db.gz
NRANDOM=${DATASET_RANDOM:-16}
NGUIDED=${DATASET_GUIDED:-48}
NRECORDS=${DATASET_RECORDS:-3}
MINUTES=${1:-0}
MAXLOAD=${DATASET_MAX_LOAD:-0}
# Held-out networks first, so a partial dataset can already be evaluated.
NETWORKS=${DATASET_NETWORKS:-resnet-18 bert-base vgg-16 alexnet squeezenet-1.0 mobilenet-v2 resnet-18-nchwc mobilenet-v2-nchwc bert-tiny bert-medium bert-large resnet-50 wide-resnet-50-2 bert-base-64 bert-base-256 resnet-18-256 resnet-18-240 bert-tiny-64 bert-tiny-256 bert-medium-64 bert-medium-256 bert-large-64 bert-large-256 resnext-50-32x4d regnet-y-400mf efficientnet-b0 mobilenet-v3-large convnext-tiny inception-v3 googlenet densenet-121 shufflenet-v2-x1.0 deeplabv3-resnet50 transformer-encoder}
# Three ISAs where the CPU has AVX-512; otherwise a second compiler makes the third.
if [ -z "${DATASET_TARGETS:-}" ]; then
	if grep -qw avx512f /proc/cpuinfo; then
		DATASET_TARGETS="cpu:isa=avx512 cpu:isa=avx2 cpu:isa=sse2"
	else
		DATASET_TARGETS="cpu:isa=avx2 cpu:isa=sse2 cpu:isa=avx2,cc=clang"
	fi
fi
# Timing settings of every unit: short repeats, the dataset wants breadth.
TIMING="--repeat 3 --min-repeat-ms 5 --timeout 3"

die() { echo "build.sh: $*" >&2; exit 1; }
[ -x "$TK" ] || die "no tunekit binary at $TK (run make)"
mkdir -p "$(dirname "$DB")"
if [ ! -e "$DB" ] && [ -e "$SHIP" ]; then
	gunzip -c "$SHIP" > "$DB.tmp" && mv "$DB.tmp" "$DB"
fi
tty=0
[ -t 2 ] && tty=1
start=$(date +%s)

# The distinct tasks of networks $*, in order of first appearance: the
# hand-derived lists, else the model zoo's (data/models/NAME.tasks.tsv).
net_tasks() {
	for n in "$@"; do
		f=data/networks/$n.tsv
		[ -e "$f" ] || f=data/models/$n.tasks.tsv
		[ -e "$f" ] || die "no network $n (data/networks/$n.tsv or data/models/$n.tasks.tsv)"
		grep -v '^#' "$f" | tail -n +2 | cut -f2
	done | awk '!seen[$0]++'
}
tasks=$(net_tasks $NETWORKS)
if [ -n "${DATASET_SKIP_NETWORKS:-}" ]; then
	net_tasks $DATASET_SKIP_NETWORKS > "$DB.skip"
	tasks=$(echo "$tasks" | awk 'NR == FNR { no[$0] = 1; next } !($0 in no)' "$DB.skip" -)
	rm -f "$DB.skip"
fi
[ -n "$tasks" ] || die "no tasks to visit"
ntask=$(echo "$tasks" | wc -l)
ntarget=$(echo $DATASET_TARGETS | wc -w)
PHASES=${DATASET_PHASES:-random guided common}
nunit=$((ntask * ntarget * $(echo $PHASES | wc -w)))

# The hardware key of each target on this machine (a line each, in the
# order of DATASET_TARGETS): a unit's runs are those on its hardware, so
# that a build on another CPU measures its own units, not the ones the
# shipped dataset did elsewhere with the same --target.
keys=$("$TK" help targets $DATASET_TARGETS) || die "cannot resolve the targets $DATASET_TARGETS"
if [ -n "${DATASET_COMMON_FROM:-}" ]; then
	"$TK" report --db "$DB" --format tsv hardware | awk -F'\t' -v h="$DATASET_COMMON_FROM" 'NR > 1 && $1 == h { f = 1 } END { exit !f }' ||
		die "DATASET_COMMON_FROM=$DATASET_COMMON_FROM is no hardware id of $DB"
fi

# The store's id of hardware key $1 (empty until something was measured on it).
hw_id() {
	[ -e "$DB" ] || return 0
	"$TK" report --db "$DB" --format tsv hardware | awk -F'\t' -v k="$1" 'NR > 1 && $7 == k { print $1 }'
}

# Runs already in the store on hardware $1: run, trials, the command
# without its program and its --db (a store is the same wherever it lies).
runs() {
	[ -n "$1" ] || return 0
	"$TK" report runs --db "$DB" --format tsv | awk -F'\t' -v hw="$1" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$col["hw"] == hw { c = $col["command"]; sub(/^[^ ]* /, "", c); sub(/ --db [^ ]*/, "", c)
			print $col["run"] "\t" $col["trials"] "\t" c }'
}

# The distinct task<TAB>config lines of hardware $1's records of task $2, sorted.
configs() {
	"$TK" report --db "$DB" --format tsv --hardware "$1" --task "$2" records |
		awk -F'\t' 'NR > 1 { print $2 "\t" $3 }' | LC_ALL=C sort -u
}

# Measure on target $1 the task<TAB>config lines of $DB.todo, if any.
# Its status is measure's: a unit whose measure fails stops the build.
measure_todo() {
	rc=0
	if [ -s "$DB.todo" ]; then
		{ printf 'task\tconfig\n'; cat "$DB.todo"; } |
			"$TK" measure --db "$DB" --target "$1" -q $TIMING --config - > /dev/null || rc=$?
	fi
	rm -f "$DB.todo"
	return $rc
}

# unit PHASE TASK TARGET KEY: run what the unit still lacks.
unit() {
	phase=$1 task=$2 target=$3 hw=$(hw_id "$4")
	case $phase in
	random)
		want=$NRANDOM
		args="--task $task --target $target -q $TIMING"
		have=$(runs "$hw" | awk -F'\t' -v a="measure $args" 'index($3, a) == 1 { s += $2 } END { print s + 0 }')
		[ "$have" -ge "$want" ] && return 0
		# A measure killed partway: the configurations it lacks, drawn anew.
		"$TK" measure --db "$DB" $args --sample $((want - have)) --seed $((1 + have)) > /dev/null ;;
	common)
		# What the first target (or DATASET_COMMON_FROM) measured of the
		# task and this one lacks.
		src=${DATASET_COMMON_FROM:-$(hw_id "$(echo "$keys" | head -n 1)")}
		[ -n "$src" ] && [ "$src" != "$hw" ] || return 0
		configs "$src" "$task" > "$DB.want"
		if [ -n "$hw" ]; then configs "$hw" "$task"; fi > "$DB.have"
		LC_ALL=C comm -23 "$DB.want" "$DB.have" > "$DB.todo"
		rm -f "$DB.want" "$DB.have"
		measure_todo "$target" ;;
	repeat)
		[ -n "$hw" ] || return 0
		"$TK" report --db "$DB" --format tsv --hardware "$hw" --task "$task" records |
			awk -F'\t' -v r="$NRECORDS" '
				NR > 1 { k = $2 "\t" $3; n[k]++; if ($5 == 1) v[k] = 1 }
				END { for (k in n) if (v[k] && n[k] < r) print k }' | LC_ALL=C sort > "$DB.todo"
		measure_todo "$target" ;;
	guided)
		want=$NGUIDED
		args="--task $task --target $target -q $TIMING --trials $want --plan-size 16 --confirm 0"
		line=$(runs "$hw" | awk -F'\t' -v a="tune $args" '$3 == a' | tail -n 1)
		if [ -z "$line" ]; then
			"$TK" tune --db "$DB" $args > /dev/null
		elif [ "$(echo "$line" | cut -f2)" -lt "$want" ]; then
			"$TK" tune --db "$DB" --resume --run "$(echo "$line" | cut -f1)" --target "$target" -q > /dev/null
		fi ;;
	esac
}

# Wait for a quiet enough machine (DATASET_MAX_LOAD).
wait_quiet() {
	[ "$MAXLOAD" = 0 ] && return 0
	while ! awk -v n="$(nproc)" -v m="$MAXLOAD" '{ exit !($1 / n < m) }' /proc/loadavg; do
		sleep 15
	done
}

i=0
for phase in $PHASES; do
	for task in $tasks; do
		t=0
		for target in $DATASET_TARGETS; do
			i=$((i + 1)) t=$((t + 1))
			key=$(echo "$keys" | sed -n "${t}p")
			now=$(date +%s)
			if [ "$MINUTES" -gt 0 ] && [ $((now - start)) -ge $((MINUTES * 60)) ]; then
				[ $tty = 1 ] && echo "build.sh: $MINUTES minutes are up at unit $i/$nunit" >&2
				exit 0
			fi
			[ $tty = 1 ] && printf '[%d/%d %dm] %s %s %s\n' $i $nunit \
				$(((now - start) / 60)) $phase "$target" "$task" >&2
			# Invalid configurations are records, not failures: a unit
			# whose tunekit fails stops the build (what was measured stays).
			wait_quiet
			unit $phase "$task" "$target" "$key" || die "unit $phase $target $task failed (exit $?)"
		done
	done
done
[ $tty = 1 ] && echo "build.sh: all $nunit units done" >&2
exit 0
