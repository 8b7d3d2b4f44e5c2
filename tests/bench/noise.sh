#!/bin/sh
# Noise floor of the measurements (run by tests/bench/kernels.sh; issue 4):
# is the ranking of configurations stable from one measurement to the next?
# Takes N valid configurations of TASK from the store's records for TARGET
# (N spread over the records, and the N fastest), measures each twice with
# tunekit measure's defaults (the tuner's evaluator), the two passes
# interleaved in chunks of 10, and prints per set the Spearman rank
# correlation of the two passes and the median relative difference of
# their latencies. The kernels come from the build cache the tuning filled.
#
# usage: noise.sh TUNEKIT DB TARGET WORKDIR TASK...
# environment: NOISE_CONFIGS (default 100), BENCH_LOCK as in kernels.sh
set -e
[ $# -ge 5 ] || { echo "usage: noise.sh TUNEKIT DB TARGET WORKDIR TASK..." >&2; exit 2; }
TK=$1 DB=$2 TARGET=$3 DIR=$4
shift 4
N=${NOISE_CONFIGS:-100}
if [ -n "${BENCH_LOCK:-}" ]; then
	TUNEKIT_MEASURE_LOCK=$BENCH_LOCK
	export TUNEKIT_MEASURE_LOCK
fi
mkdir -p "$DIR"

printf '%-72s %-14s %-7s %4s %8s %11s %7s\n' task target configs n spearman "med |a-b|/b" range
for task in "$@"; do
	# the canonical task key, and the hardware id of TARGET's records (export
	# picks them as kernels.sh does)
	key=$("$TK" measure -t "$task" --naive --emit-sched | sed -n '1s/^# //p')
	hw=$("$TK" export -q --db "$DB" --target "$TARGET" --task "$task" --out "$DIR/noise.export" \
		2>/dev/null | awk -F'\t' 'NR == 2 { print $4 }')
	rm -rf "$DIR/noise.export"
	if [ -z "$hw" ]; then
		echo "noise.sh: $key: no valid records for $TARGET, skipped" >&2
		continue
	fi
	for set in spread fastest; do
		if [ $set = spread ]; then
			order="(c.id * 2654435761) % 1000003" # a fixed shuffle
		else
			order="min(m.median)"
		fi
		sqlite3 -separator '	' "$DB" "SELECT t.key, c.text FROM measurement m
			JOIN config c ON c.id = m.config_id JOIN task t ON t.id = c.task_id
			WHERE t.key = '$key' AND m.hardware_id = $hw AND m.valid
			GROUP BY c.id ORDER BY $order LIMIT $N" >"$DIR/noise.cfg"
		rm -f "$DIR/noise.db" "$DIR/noise.a" "$DIR/noise.b" "$DIR"/noise.part.*
		split -l 10 "$DIR/noise.cfg" "$DIR/noise.part."
		for p in "$DIR"/noise.part.*; do
			"$TK" measure -q --db "$DIR/noise.db" --target "$TARGET" --config - \
				<"$p" >>"$DIR/noise.a"
			"$TK" measure -q --db "$DIR/noise.db" --target "$TARGET" --config - \
				<"$p" >>"$DIR/noise.b"
		done
		rm -f "$DIR"/noise.part.* "$DIR/noise.db"
		awk -F'\t' -v key="$key" -v set="$set" -v target="$TARGET" '
		FNR == 1 { f++; for (i = 1; i <= NF; i++) col[$i] = i; next }
		$col["valid"] == 1 { lat[f, $col["config"]] = $col["latency_s"]; seen[$col["config"]] = 1 }
		function rank(x, r, n,   i, j, c) {
			for (i = 1; i <= n; i++) {
				c = 0
				for (j = 1; j <= n; j++) c += (x[j] < x[i]) + (x[j] == x[i]) / 2
				r[i] = c + 0.5
			}
		}
		END {
			n = 0
			for (c in seen)
				if ((1, c) in lat && (2, c) in lat) {
					n++; a[n] = lat[1, c]; b[n] = lat[2, c]
					e[n] = (a[n] > b[n] ? a[n] - b[n] : b[n] - a[n]) / b[n]
				}
			if (n < 3) { printf "%s %s: fewer than 3 configurations valid twice\n", key, set; exit }
			for (i = 2; i <= n; i++) { x = e[i]; for (j = i - 1; j >= 1 && e[j] > x; j--) e[j + 1] = e[j]; e[j + 1] = x }
			med = n % 2 ? e[(n + 1) / 2] : (e[n / 2] + e[n / 2 + 1]) / 2
			rank(a, ra, n); rank(b, rb, n)
			for (i = 1; i <= n; i++) { ma += ra[i] / n; mb += rb[i] / n }
			for (i = 1; i <= n; i++) {
				sab += (ra[i] - ma) * (rb[i] - mb); saa += (ra[i] - ma) ^ 2; sbb += (rb[i] - mb) ^ 2
			}
			lo = a[1]; hi = a[1]
			for (i = 2; i <= n; i++) { lo = a[i] < lo ? a[i] : lo; hi = a[i] > hi ? a[i] : hi }
			printf "%-72s %-14s %-7s %4d %8.3f %10.2f%% %6.1fx\n", key, target, set, n,
			       sab / sqrt(saa * sbb), 100 * med, hi / lo
		}' "$DIR/noise.a" "$DIR/noise.b"
	done
done
