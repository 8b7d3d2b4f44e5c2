#!/bin/sh
# pack.sh: write the shipped copy of a measured set, DIR/NAME.db.gz (a
# compacted tunekit store; NAME is DIR's last component), and its manifest
# DIR/MANIFEST.md from the build store: the offline dataset (make
# dataset-pack) or MetaTune's meta-training set (make metatune-pack,
# DIR data/metatune).
#
#   data/dataset/pack.sh [BUILD.db [DIR]]
set -eu
SRC=${1:-${DATASET_DB:-data/dataset/build/dataset.db}}
OUT=${2:-data/dataset}
NAME=$(basename "$OUT")
BUILD=$NAME
[ "$NAME" = dataset ] || BUILD=$NAME-dataset
[ -e "$SRC" ] || { echo "pack.sh: no build store at $SRC (make $BUILD)" >&2; exit 1; }
tmp=$OUT/.pack.db
rm -f "$tmp"
# A compacted copy: one file, no WAL, no free pages, and no feature vectors:
# extract-features computes them again from the configurations (the graph
# vectors of the meta-training set are four fifths of its store).
sqlite3 "$SRC" "VACUUM INTO '$tmp'"
sqlite3 "$tmp" "DELETE FROM feature; VACUUM"
gzip -9 -n -c "$tmp" > "$OUT/$NAME.db.gz.tmp"
mv "$OUT/$NAME.db.gz.tmp" "$OUT/$NAME.db.gz"
q() { sqlite3 -separator ' | ' "$tmp" "$1"; }
{
	echo "# $(sed -n '1s/^# //p' "$OUT/README.md"): manifest"
	echo
	echo "Written by \`make $NAME-pack\` on $(date -u +%Y-%m-%d) from the build store;"
	echo "\`make $BUILD\` measures more (see README.md in this directory)."
	echo
	echo "## Counts"
	echo
	echo "| records | valid | invalid | tasks | configurations |"
	echo "|---|---|---|---|---|"
	echo "| $(q "SELECT COUNT(*), SUM(valid), SUM(NOT valid), (SELECT COUNT(*) FROM task),
		(SELECT COUNT(*) FROM config) FROM measurement") |"
	echo
	echo "The load average per CPU when each record was timed (other work on the machine"
	echo 'slows kernels and spreads their times; the `load` column keeps it per record):'
	echo
	echo "| median | 90th percentile | records timed above 1.5 |"
	echo "|---|---|---|"
	n=$(q "SELECT COUNT(*) FROM measurement WHERE load IS NOT NULL")
	echo "| $(q "SELECT printf('%.2f', load) FROM measurement WHERE load IS NOT NULL ORDER BY load
		LIMIT 1 OFFSET $((n / 2))") | $(q "SELECT printf('%.2f', load) FROM measurement WHERE load IS NOT
		NULL ORDER BY load LIMIT 1 OFFSET $((n * 9 / 10))") | $(q "SELECT COUNT(*) FROM measurement
		WHERE load > 1.5") |"
	echo
	echo "## Hardware"
	echo
	echo "Each target is distinct hardware: the CPU (with its family and model), the ISA the"
	echo "kernels were compiled for, the compiler and its version, flags and threads."
	echo
	echo "A program timed more than once on one hardware is one training row, its"
	echo "latency the median of its records (\`man tunekit-train\`)."
	echo
	echo "| id | CPU | ISA | compiler | records | valid | programs | timed 3+ times | tasks |"
	echo "|---|---|---|---|---|---|---|---|---|"
	q "SELECT h.id, h.cpu, h.isa, h.cc, COUNT(*), SUM(m.valid), COUNT(DISTINCT c.id),
		(SELECT COUNT(*) FROM (SELECT 1 FROM measurement x WHERE x.hardware_id = h.id
			GROUP BY x.config_id HAVING COUNT(*) >= 3)), COUNT(DISTINCT c.task_id)
		FROM measurement m JOIN hardware h ON h.id = m.hardware_id JOIN config c ON c.id = m.config_id
		GROUP BY h.id ORDER BY h.id" | sed 's/^/| /; s/$/ |/'
	echo
	if [ "$NAME" = dataset ]; then
	echo "## Split"
	echo
	echo "By network: models train on the tasks of every other network and are scored on"
	echo "the tasks of resnet-18 and bert-base (\`tunekit train --holdout-network resnet-18"
	echo "--holdout-network bert-base\`). A task that also occurs in a training network"
	echo "(the classifier layers) is held out all the same. Invalid records stay in."
	echo
	fi
	echo "## Tasks"
	echo
	echo "| task | records | valid |"
	echo "|---|---|---|"
	q "SELECT t.key, COUNT(*), SUM(m.valid) FROM measurement m JOIN config c ON c.id = m.config_id
		JOIN task t ON t.id = c.task_id GROUP BY t.id ORDER BY t.key" | sed 's/^/| /; s/$/ |/'
} > "$OUT/MANIFEST.md"
rm -f "$tmp"
echo "pack.sh: $(du -h "$OUT/$NAME.db.gz" | cut -f1) in $OUT/$NAME.db.gz; manifest in $OUT/MANIFEST.md" >&2
