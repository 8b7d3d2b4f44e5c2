#!/bin/sh
# kill.sh N [TUNEKIT]: kill tune, measure, train and import with SIGKILL at N
# random moments each, and check after every kill that
#   - the store passes PRAGMA integrity_check,
#   - every record that was committed before the kill is still there
#     (the ids read from the store just before the signal),
#   - an interrupted tune finishes with --resume, with unique trial numbers.
# Prints one line per command (kills, records kept, failures) and exits 1 on
# any failure. make test runs N=10, make crash-test N=100.
set -u
N=${1:-10}
BIN=${2:-$(cd "$(dirname "$0")/../.." && pwd)/tunekit}
KT=${TUNEKIT_KT_DATA:-/work/shared/data/kernel_tuner}
work=$(mktemp -d "${TMPDIR:-/tmp}/tunekit-crash.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export TUNEKIT_CACHE="${TUNEKIT_CACHE:-$work/cache}"
DB=$work/crash.db
failures=0

# A random delay in seconds, 0 to $1 (tenths), from awk's generator.
seed=$$
delay() {
	seed=$((seed + 1))
	awk -v s="$seed" -v m="$1" 'BEGIN { srand(s); printf "%.2f", rand() * m }'
}

fail() {
	echo "FAIL ($1, kill $2): $3"
	failures=$((failures + 1))
}

# ids of committed measurements (a reader sees only committed rows)
ids() {
	sqlite3 "$DB" "SELECT id FROM measurement" 2>/dev/null | sort
}

# check NAME I: the store after a kill
check() {
	ok=$(sqlite3 "$DB" "PRAGMA integrity_check" 2>&1)
	[ "$ok" = ok ] || fail "$1" "$2" "integrity_check: $ok"
	ids >after
	missing=$(comm -23 before after | wc -l)
	[ "$missing" -eq 0 ] || fail "$1" "$2" "$missing committed records lost"
}

# run NAME MAXDELAY CMD...: start CMD, wait a random moment, snapshot the
# committed ids, SIGKILL it, check.
run() {
	name=$1 max=$2
	shift 2
	"$@" >/dev/null 2>&1 &
	pid=$!
	sleep "$(delay "$max")"
	ids >before
	kill -KILL $pid 2>/dev/null
	wait $pid 2>/dev/null
	check "$name" "$i"
}

TASK='dense:m=32,n=32,k=32'
printf '%-8s %6s %9s\n' command kills records
for cmd in tune measure train import; do
	rm -f "$DB" "$DB-wal" "$DB-shm"
	i=0
	while [ $i -lt "$N" ]; do
		i=$((i + 1))
		case $cmd in
		tune)
			run tune 4 "$BIN" tune -q --db "$DB" --task "$TASK" --trials 24 --batch 4 \
				--plan-size 8 --repeat 1 --confirm 0 --feature knob --seed $i
			r=$(sqlite3 "$DB" "SELECT max(id) FROM run WHERE ended IS NULL" 2>/dev/null)
			if [ -n "$r" ]; then
				"$BIN" tune -q --db "$DB" --resume --run "$r" >/dev/null 2>err ||
					fail tune "$i" "resume of run $r: $(cat err)"
				dup=$(sqlite3 "$DB" "SELECT count(*) FROM (SELECT trial FROM measurement
					WHERE run_id = $r GROUP BY trial HAVING count(*) > 1)")
				[ "$dup" -eq 0 ] || fail tune "$i" "run $r: $dup trial numbers repeat"
			fi
			;;
		measure)
			run measure 8 "$BIN" measure -q --db "$DB" --task "$TASK" --sample 32 --batch 2 --repeat 1 --seed $i
			;;
		train)
			if [ $i -eq 1 ]; then
				"$BIN" measure -q --db "$DB" --task "$TASK" --sample 24 --repeat 1 >/dev/null 2>&1 &&
				"$BIN" extract-features -q --db "$DB" --kind knob >/dev/null 2>&1 ||
					fail train 0 "cannot make the training records"
			fi
			run train 1 "$BIN" train -q --db "$DB" --feature knob --rounds 200 --out "$work/m$i.model"
			;;
		import)
			[ -r "$KT/convolution_A100.json.gz" ] || { echo "import: no Kernel Tuner data, skipped"; break; }
			run import 8 "$BIN" import --db "$DB" kernel-tuner "$KT/convolution_A100.json.gz" \
				"$KT/gemm_RTX_3090.json.gz"
			;;
		esac
	done
	printf '%-8s %6d %9s\n' "$cmd" "$i" "$(sqlite3 "$DB" "SELECT count(*) FROM measurement" 2>/dev/null)"
done
if [ $failures -gt 0 ]; then
	echo "crash test: $failures failure(s)"
	exit 1
fi
echo "crash test: $((4 * N)) kills, nothing lost"
