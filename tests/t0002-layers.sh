#!/bin/sh
# The layers of lib/: no folder includes a folder that includes it back
# (tests/bin/layers), and only lib/store speaks SQL.
. "$(dirname "$0")/lib.sh"

# mkfile PATH LINE...: a source file holding the given lines.
mkfile() {
	f=$1
	shift
	mkdir -p "$(dirname "$f")" && printf '%s\n' "$@" >"$f"
}

test_expect_success 'the folders of lib/ include each other without a circle' '
	layers "$TOP/lib" &&
	layers --order "$TOP/lib" >order &&
	test "$(head -1 order)" = util
'

test_expect_success 'the store and codegen stay low: base and util below both' '
	layers --edges "$TOP/lib" >edges &&
	awk "\$1 == \"store\" && \$2 != \"base\" && \$2 != \"util\"" edges >up &&
	awk "\$1 == \"codegen\" && (\$2 == \"measure\" || \$2 == \"store\")" edges >>up &&
	test_cmp /dev/null up &&
	grep -q "^store base " edges &&
	grep -q "^measure base " edges &&
	grep -q "^codegen base " edges
'

test_expect_success 'the checker finds a circle of two folders and names its includes' '
	mkfile t1/a/a.h "#include \"b/b.h\"" &&
	mkfile t1/b/b.c "#include \"../a/a.h\"" "#include \"b.h\"" &&
	mkfile t1/b/b.h "/* b */" &&
	test_expect_code 1 layers t1 >out &&
	grep -q "circle: a b\$" out &&
	grep -q "a -> b  (t1/a/a.h:1)" out &&
	grep -q "b -> a  (t1/b/b.c:1)" out
'

test_expect_success 'a circle through three folders; the same edge is counted once per include' '
	mkfile t2/low/x.h "#include \"top/z.h\"" &&
	mkfile t2/mid/y.h "#include \"low/x.h\"" &&
	mkfile t2/mid/y.c "#include \"y.h\"" "#include \"low/x.h\"" &&
	mkfile t2/top/z.h "#include \"mid/y.h\"" &&
	mkfile t2/top/ok.h "/* unrelated */" &&
	test_expect_code 1 layers t2 >out &&
	grep -q "circle: low mid top\$" out &&
	grep -q "mid -> low  (t2/mid/y.c:2 and 1 more)" out &&
	! grep -q ok.h out
'

test_expect_success 'layers: local headers, comments, strings and system headers make no edge' '
	mkfile t3/a/a.h "#include <stdio.h>" "#include \"sqlite3.h\"" "#include \"b/b.h\"" &&
	mkfile t3/b/b.h "#include \"b2.h\"" &&
	mkfile t3/b/b2.h "/* #include \"a/a.h\" */" \
		" * and #include \"a/a.h\" in a comment" \
		"static const char s[] = \"#include \\\"a/a.h\\\"\";" &&
	mkfile t3/b/a/a.h "/* b/a/a.h: found next to b/b.h first */" &&
	mkfile t3/b/c.c "#include \"a/a.h\"" &&
	layers t3 &&
	layers --edges t3 >edges &&
	printf "a b 1\n" >want &&
	test_cmp want edges &&
	layers --order t3 >order &&
	printf "b\na\n" >want &&
	test_cmp want order
'

test_expect_success 'layers: a missing or wrong argument exits 2' '
	test_expect_code 2 layers 2>err && grep -q usage err &&
	test_expect_code 2 layers no-such-dir 2>err && grep -q usage err
'

test_expect_success 'only lib/store speaks SQL: no sqlite3 outside it' '
	(cd "$TOP" && grep -rl sqlite3 lib cmd) >sql &&
	grep -q "^lib/store/store.c\$" sql &&
	{ grep -v "^lib/store/" sql >outside || :; } &&
	test_cmp /dev/null outside &&
	(cd "$TOP" && grep -rl --include="*.h" "sqlite3\.h" lib cmd) >hdr &&
	echo lib/store/store_int.h >want &&
	test_cmp want hdr
'

test_expect_success 'no public store header hands out the SQLite connection' '
	(cd "$TOP" && grep -l sqlite3 lib/store/*.h) >hdr &&
	echo lib/store/store_int.h >want &&
	test_cmp want hdr
'

test_done
