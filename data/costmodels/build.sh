#!/bin/sh
# build.sh [TUNEKIT]: train the built-in cost models from the offline dataset
# (make costmodels; a maintainer's step, not part of the build). One xgb
# model on itervar features per hardware of data/dataset/dataset.db.gz,
# every record of that hardware, seed 1, AutoTVM's settings with early
# stopping; writes hw-ID.model and models.tsv (the file, its kind and
# features, the hardware's CPU and ISA, its training rows) beside this
# script. The binary embeds them (tunekit help models; tune --model-file
# builtin picks the nearest to the target).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
BIN=${1:-$here/../../tunekit}
work=$(mktemp -d "${TMPDIR:-/tmp}/tunekit-costmodels.XXXXXX")
trap 'rm -rf "$work"' EXIT
gunzip -c "$here/../dataset/dataset.db.gz" >"$work/ds.db"
"$BIN" extract-features -q --db "$work/ds.db" --kind itervar >/dev/null
printf 'file\tkind\tfeature\tcpu\tisa\trows\n' >"$work/models.tsv"
sqlite3 -separator '	' "$work/ds.db" "SELECT id, cpu, isa FROM hardware ORDER BY id" |
while IFS='	' read -r id cpu isa; do
	"$BIN" train -q --db "$work/ds.db" --model xgb --feature itervar --hardware "$id" \
		--seed 1 --out "$work/hw-$id.model" >"$work/train.tsv"
	rows=$(awk -F'\t' '$1 == "train" { print $2 }' "$work/train.tsv")
	printf 'hw-%s.model\txgb\titervar\t%s\t%s\t%s\n' "$id" "$cpu" "$isa" "$rows" >>"$work/models.tsv"
	[ -t 2 ] && echo "hardware $id ($cpu, $isa): $rows rows" >&2
	cp "$work/hw-$id.model" "$here/"
done
cp "$work/models.tsv" "$here/models.tsv"
