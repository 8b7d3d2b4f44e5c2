#!/bin/sh
# extract-features: vectors of the documented lengths in the feature table
# (tlp among them, and train and tune taking it), idempotence, record
# streams passed through, imported tasks, bad input.
. "$(dirname "$0")/lib.sh"

DENSE='dense:m=24,n=40,k=16'
CONV='conv2d:c=4,h=10,w=10,k=8,pad=1'

# n of every stored vector of KIND for the configurations of tasks like OP%
feat_n() {
	sql "SELECT DISTINCT f.n FROM feature f JOIN config c ON c.id = f.config_id
	     JOIN task t ON t.id = c.task_id WHERE f.kind = '$1' AND t.key LIKE '$2%'"
}

test_expect_success 'setup: measure dense and conv2d configurations' '
	tunekit measure -q --task $DENSE --task $CONV --sample 3 --naive --repeat 1 >m.tsv &&
	test_rows m.tsv 8
'

test_expect_success 'itervar, knob and curve vectors have the documented lengths' '
	tunekit extract-features 2>err >out &&
	test ! -s out &&
	grep -q "^itervar: 8 configurations, 8 new, 0 invalid, [0-9]* per second$" err &&
	tunekit extract-features -q --kind knob 2>err && test ! -s err &&
	tunekit extract-features --kind curve 2>/dev/null &&
	test "$(sql "SELECT COUNT(*) FROM feature WHERE version = 2 AND kind != '\''curve'\''")" -eq 16 &&
	test "$(sql "SELECT COUNT(DISTINCT kind) FROM feature")" -eq 3 &&
	test "$(feat_n itervar dense)" = 152 &&
	test "$(feat_n itervar conv2d)" = 304 &&
	test "$(feat_n curve dense)" = 120 &&
	test "$(feat_n curve conv2d)" = 120 &&
	test "$(feat_n knob dense)" = 17 &&
	test "$(feat_n knob conv2d)" = 25 &&
	test "$(sql "SELECT COUNT(*) FROM feature WHERE length(data) < 8")" -eq 0
'

test_expect_success 'a second run adds nothing' '
	sql "SELECT config_id, kind, hex(data) FROM feature ORDER BY 1, 2" >before &&
	tunekit extract-features 2>err &&
	grep -q "^itervar: 8 configurations, 0 new, 0 invalid" err &&
	tunekit extract-features --kind knob 2>err &&
	grep -q "^knob: 8 configurations, 0 new" err &&
	sql "SELECT config_id, kind, hex(data) FROM feature ORDER BY 1, 2" >after &&
	test_cmp before after
'

test_expect_success 'tlp vectors are L x E = 32 x 25 for every task, stored once' '
	tunekit extract-features --kind tlp 2>err >out &&
	test ! -s out &&
	grep -q "^tlp: 8 configurations, 8 new, 0 invalid, [0-9]* per second$" err &&
	test "$(feat_n tlp dense)" = 800 &&
	test "$(feat_n tlp conv2d)" = 800 &&
	test "$(sql "SELECT DISTINCT version FROM feature WHERE kind = '\''tlp'\''")" = 2 &&
	tunekit extract-features -k tlp 2>err &&
	grep -q "^tlp: 8 configurations, 0 new, 0 invalid" err
'

test_expect_success 'graph vectors are one super-graph of 67 nodes x 30 and 100 edges for every task' '
	tunekit extract-features --kind graph 2>err >out &&
	test ! -s out &&
	grep -q "^graph: 8 configurations, 8 new, 0 invalid, [0-9]* per second$" err &&
	test "$(feat_n graph dense)" = 2210 &&
	test "$(feat_n graph conv2d)" = 2210 &&
	test "$(sql "SELECT DISTINCT version FROM feature WHERE kind = '\''graph'\''")" = 1 &&
	tunekit extract-features -k graph 2>err &&
	grep -q "^graph: 8 configurations, 0 new, 0 invalid" err
'

test_expect_success 'train and tune take tlp features where the model does' '
	tunekit train -q --feature tlp --out tlp.model >out &&
	grep -a -q "^feature tlp$" tlp.model && grep -a -q "^feature_length 800$" tlp.model &&
	test_expect_code 2 tunekit train --model rfei --feature tlp --out x.model 2>err &&
	grep -q "model rfei does not take tlp features" err &&
	test_expect_code 2 tunekit train --feature bogus 2>err &&
	grep -q "unknown feature kind .bogus. (itervar, knob, curve, tlp, graph or hidden)" err &&
	test_expect_code 2 tunekit tune --task $DENSE --trials 1 --feature bogus 2>err &&
	grep -q "unknown feature kind .bogus. (knob, itervar, curve, tlp, graph, hidden)" err
'

# An unknown --hardware selected nothing and exited 0.
test_expect_success '--hardware selects the configurations measured there; an unknown one is exit 2' '
	hw=$(tsv_col m.tsv hw) &&
	tunekit measure -q --task $DENSE --sample 2 --seed 9 --repeat 1 >m2.tsv &&
	test_expect_code 2 tunekit extract-features --hardware -1 2>err &&
	test_expect_code 2 tunekit extract-features --hardware $((hw + 1)) 2>err &&
	test $(wc -l <err) -eq 1 && grep -q -- "--hardware: no hardware $((hw + 1))" err &&
	test_expect_code 2 tunekit extract-features --hardware 999 2>err &&
	tunekit extract-features --hardware $hw 2>err &&
	grep -q "^itervar: 10 configurations, 2 new" err
'

test_expect_success 'a measure stream passes through unchanged; only its configurations get features' '
	tunekit measure -q --db s.db --task $DENSE --sample 3 --seed 4 --repeat 1 >direct &&
	sqlite3 s.db "DELETE FROM feature" &&
	tunekit measure -q --db s.db --task $CONV --sample 2 --seed 5 --repeat 1 | tee teed |
		tunekit extract-features -q --db s.db --kind itervar - >passed &&
	test_rows passed 2 &&
	test_cmp teed passed &&
	test "$(sqlite3 s.db "SELECT COUNT(*) FROM feature")" -eq 2 &&
	ids=$(awk -F"\t" "NR > 1 { printf \"%s%s\", s, \$1; s = \",\" }" passed) &&
	test "$(sqlite3 s.db "SELECT COUNT(*) FROM feature f JOIN measurement m
		ON m.config_id = f.config_id WHERE m.id IN ($ids) AND f.kind = '\''itervar'\''
		AND f.n = 304")" -eq 2 &&
	tunekit extract-features -q --db s.db --kind itervar - <direct >again &&
	test_cmp direct again &&
	test "$(sqlite3 s.db "SELECT COUNT(*) FROM feature")" -eq 5
'

test_expect_success 'the stream is the same as without extract-features, comments and all' '
	{ echo "# a comment"; cat m.tsv; echo; } >in &&
	tunekit extract-features --kind curve - <in >out 2>err &&
	test_cmp in out &&
	grep -q "^curve: 8 configurations, 0 new" err &&
	printf "id\ttask\n%s\t%s" "$(tsv_col m2.tsv id)" "$DENSE" >nonl &&
	tunekit extract-features -q - <nonl >out &&
	test_cmp nonl out
'

test_expect_success 'small batches give the same result' '
	rm -f b.db &&
	tunekit measure -q --db b.db --task $DENSE --sample 5 --seed 3 --repeat 1 >b.tsv &&
	tunekit extract-features -q --db b.db --batch 2 --kind knob - <b.tsv >out &&
	test_cmp b.tsv out &&
	tunekit extract-features --db b.db --batch 2 --kind curve 2>err &&
	grep -q "^curve: 5 configurations, 5 new" err &&
	test "$(sqlite3 b.db "SELECT COUNT(*) FROM feature")" -eq 10
'

test_expect_success 'imported tasks get knob features; the loop-nest kinds skip them' '
	sql "INSERT INTO task (key, op, flops, space) VALUES ('\''kt:add'\'', '\''kt'\'', 1,
	     '\''{\"knobs\": [{\"name\": \"block\", \"values\": [16, 32]},
	                     {\"name\": \"mode\", \"values\": [\"a\", \"b\"]}]}'\'');
	     INSERT INTO config (task_id, idx, text, sched) SELECT id, NULL, '\''block=32;mode=b'\'', '\'''\''
	     FROM task WHERE key = '\''kt:add'\''" &&
	tunekit extract-features --kind itervar 2>err &&
	grep -q "note: 1 configurations of kt:add skipped" err &&
	grep -q ", 1 skipped, " err &&
	tunekit extract-features --kind tlp 2>err &&
	grep -q "note: 1 configurations of kt:add skipped: tlp features need a template task" err &&
	tunekit extract-features --kind knob 2>err &&
	grep -q "^knob: 11 configurations, 3 new, 0 invalid, [0-9]* per second$" err &&
	test "$(feat_n knob kt:)" = 3
'

test_expect_success 'an unlowerable configuration gets zeros, but its schedule has tlp features' '
	big="tile_i=1x1x1024;tile_j=1x1x1024;order=0;vec=j;unroll=0;unroll_explicit=0;pack_A=0;pack_B=0" &&
	tunekit measure -q --db z.db --task dense:m=1024,n=1024,k=1 --config "$big" --naive \
		--repeat 1 >z.tsv &&
	test "$(awk -F"\t" "NR > 1 && \$7 == 0" z.tsv | wc -l)" -eq 1 &&
	tunekit extract-features --db z.db 2>err &&
	grep -q "^itervar: 2 configurations, 2 new, 1 invalid" err &&
	test "$(sqlite3 z.db "SELECT COUNT(DISTINCT n) FROM feature")" -eq 1 &&
	test "$(sqlite3 z.db "SELECT n FROM feature LIMIT 1")" -eq 114 &&
	tunekit extract-features --db z.db --kind tlp 2>err &&
	grep -q "^tlp: 2 configurations, 2 new, 0 invalid" err
'

test_expect_success 'streams without ids, unknown ids and bad options exit 2' '
	printf "%s\t%s\n" $DENSE "tile_i=24x1x1" >bare &&
	test_expect_code 2 tunekit extract-features - <bare >out 2>err &&
	grep -q "no id column" err && test ! -s out &&
	cut -f 2- m.tsv >noid &&
	test_expect_code 2 tunekit extract-features - <noid >out 2>err &&
	grep -q "no id column" err &&
	printf "id\ttask\n99999\t%s\n" $DENSE >unknown &&
	test_expect_code 2 tunekit extract-features - <unknown 2>err &&
	grep -q "99999" err &&
	printf "id\ttask\nx\t%s\n" $DENSE >badid &&
	test_expect_code 2 tunekit extract-features - <badid 2>err &&
	test_expect_code 2 tunekit extract-features --kind bogus 2>err &&
	grep -q "unknown feature kind .bogus. (knob, itervar, curve, tlp, graph, hidden)" err &&
	test_expect_code 2 tunekit extract-features --batch 0 2>err &&
	test_expect_code 2 tunekit extract-features foo 2>err &&
	test_expect_code 2 tunekit extract-features - - </dev/null 2>err
'

test_expect_success 'a corrupt store exits 3' '
	echo "not a database" >bad.db &&
	test_expect_code 3 tunekit extract-features --db bad.db 2>err
'

test_expect_success 'the man page documents every option' '
	tunekit extract-features --help >help &&
	sed "/^common options:/,\$d" help | grep -o -- "--[a-z][a-z-]*" | sort -u >opts &&
	test -s opts &&
	mandoc -Tascii "$TOP/man/tunekit-extract-features.1" | col -b >page &&
	for o in $(cat opts); do grep -q -- "$o" page || { echo "undocumented: $o"; exit 1; }; done &&
	mandoc -Tlint -W warning "$TOP/man/tunekit-extract-features.1"
'

test_done
