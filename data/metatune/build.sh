#!/bin/sh
# build.sh: build, or continue building, MetaTune's meta-training dataset:
# the 47 convolution kernels of tasks.tsv (the paper's Table 2 ranges), each
# with random configurations measured on one target, then their graph
# features. Real measurements only.
#
#   data/metatune/build.sh [MINUTES]    stop starting new kernels after MINUTES
#
# A unit is one kernel: `tunekit measure --sample`, one run each. A killed
# build continues where it stopped: a kernel's unit measures the
# configurations it still lacks (counted from the store's runs), with a seed
# that moves on, so nothing measured is lost and nothing is redone.
#
# The first build on a machine starts from the shipped
# data/metatune/metatune.db.gz (what earlier builds measured: `make
# metatune-pack` writes it), so a build spans sessions and machines.
#
# METATUNE_SET=data/metaeval builds another set the same way: the kernels
# of DIR/tasks.tsv into DIR/build/NAME.db, started from the shipped
# DIR/NAME.db.gz (NAME: DIR's last component).
#
# Environment: TUNEKIT (./tunekit), METATUNE_SET (data/metatune),
# METATUNE_DB (SET/build/NAME.db), METATUNE_TARGET (native),
# METATUNE_SAMPLE (200 configurations per kernel), METATUNE_TASKS (all 47;
# N: the first N kernels of tasks.tsv, which cover every operator from 5 on),
# METATUNE_TIMEOUT (15: seconds one kernel run may take).
set -eu

TK=${TUNEKIT:-./tunekit}
SET=${METATUNE_SET:-data/metatune}
NAME=$(basename "$SET")
DB=${METATUNE_DB:-$SET/build/$NAME.db}
TARGET=${METATUNE_TARGET:-native}
WANT=${METATUNE_SAMPLE:-200}
NTASK=${METATUNE_TASKS:-0}
MINUTES=${1:-0}
LIST=$SET/tasks.tsv
# Short repeats, as the offline dataset's: it wants breadth. The paper's
# larger kernels (a 221x221 conv2d is 6 GFLOP) run for seconds in a poor
# configuration: a 3 s limit made all six of one such kernel time-outs.
TIMING="--repeat 3 --min-repeat-ms 5 --timeout ${METATUNE_TIMEOUT:-15}"

die() { echo "build.sh: $*" >&2; exit 1; }
[ -x "$TK" ] || die "no tunekit binary at $TK (run make)"
[ -r "$LIST" ] || die "no $LIST"
mkdir -p "$(dirname "$DB")"
SHIP=$SET/$NAME.db.gz
if [ ! -e "$DB" ] && [ -e "$SHIP" ]; then
	gunzip -c "$SHIP" > "$DB.tmp" && mv "$DB.tmp" "$DB"
fi
tty=0
[ -t 2 ] && tty=1
start=$(date +%s)

tasks=$(grep -v '^#' "$LIST" | tail -n +2 | cut -f2)
[ "$NTASK" -gt 0 ] && tasks=$(echo "$tasks" | head -n "$NTASK")
n=$(echo "$tasks" | wc -l)

# The target's hardware key on this machine: a kernel's runs are those on
# this hardware, so a store built on another CPU (or shared between
# machines) does not count as this machine's measurements.
key=$("$TK" help targets "$TARGET") || die "cannot resolve the target $TARGET"
hw_id() {
	[ -e "$DB" ] || return 0
	"$TK" report --db "$DB" --format tsv hardware | awk -F'\t' -v k="$key" 'NR > 1 && $7 == k { print $1 }'
}

# Trials of the runs on this hardware whose command (without its program
# and its --db: a store is the same wherever it lies) starts with $1.
have() {
	hw=$(hw_id)
	[ -n "$hw" ] || { echo 0; return; }
	"$TK" report runs --db "$DB" --format tsv | awk -F'\t' -v a="$1" -v hw="$hw" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$col["hw"] == hw { c = $col["command"]; sub(/^[^ ]* /, "", c); sub(/ --db [^ ]*/, "", c)
			if (index(c, a) == 1) s += $col["trials"] }
		END { print s + 0 }'
}

i=0
for task in $tasks; do
	i=$((i + 1))
	now=$(date +%s)
	if [ "$MINUTES" -gt 0 ] && [ $((now - start)) -ge $((MINUTES * 60)) ]; then
		[ $tty = 1 ] && echo "build.sh: $MINUTES minutes are up at kernel $i/$n" >&2
		break
	fi
	args="--task $task --target $TARGET -q $TIMING"
	got=$(have "measure $args")
	[ "$got" -ge "$WANT" ] && continue
	[ $tty = 1 ] && printf '[%d/%d %dm] %s: %d of %d\n' $i $n $(((now - start) / 60)) \
		"$task" "$got" "$WANT" >&2
	# Invalid configurations are records, not failures.
	"$TK" measure --db "$DB" $args --sample $((WANT - got)) --seed $((1 + got)) > /dev/null ||
		die "kernel $task failed (exit $?)"
done
# What pretrain-meta reads (idempotent: only the new configurations).
[ -e "$DB" ] && "$TK" extract-features --db "$DB" --kind graph -q
exit 0
