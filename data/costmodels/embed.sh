#!/bin/sh
# embed.sh DIR: the C source that compiles the cost models of DIR/models.tsv
# into the binary (the Makefile writes it to gen/costmodels.c). Each file's
# bytes come in by the assembler's .incbin: a 2 MB array written out in C
# would be 10 MB of source.
set -eu
dir=$(cd "$1" && pwd)
echo '#include "model/builtin.h"'
n=0
tail -n +2 "$dir/models.tsv" | while IFS='	' read -r file kind feature cpu isa rows; do
	n=$((n + 1))
	printf '__asm__(".section .rodata\\n.balign 16\\ncm_model_%d:\\n.incbin \\"%s/%s\\"\\n.previous\\n");\n' \
		"$n" "$dir" "$file"
	printf 'extern const unsigned char cm_model_%d[] __asm__("cm_model_%d");\n' "$n" "$n"
done
echo 'const cm_builtin cm_builtins[] = {'
n=0
tail -n +2 "$dir/models.tsv" | while IFS='	' read -r file kind feature cpu isa rows; do
	n=$((n + 1))
	printf '\t{ "%s", "%s", "%s", "%s", "%s", %d, cm_model_%d, %d },\n' "${file%.model}" "$kind" \
		"$feature" "$cpu" "$isa" "$rows" "$n" "$(wc -c <"$dir/$file")"
done
echo "	{ 0 }"
echo "};"
echo "const int cm_nbuiltins = $(tail -n +2 "$dir/models.tsv" | wc -l);"
