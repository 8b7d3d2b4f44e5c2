#!/bin/sh
# embed.sh MODEL.onnx...: the C source that compiles these ONNX graphs into
# the binary (the Makefile writes it to gen/graphs.c), so that a built-in
# network NAME finds the graph of data/models/NAME.onnx for --layout. The
# bytes come in by the assembler's .incbin, as data/costmodels/embed.sh's.
set -eu
echo '#include <stddef.h>'
n=0
for f in "$@"; do
	n=$((n + 1))
	printf '__asm__(".section .rodata\\n.balign 16\\ntk_graph_%d:\\n.incbin \\"%s\\"\\n.previous\\n");\n' \
		"$n" "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"
	printf 'extern const unsigned char tk_graph_%d[] __asm__("tk_graph_%d");\n' "$n" "$n"
done
echo 'const struct { const char *name; const unsigned char *data; size_t size; } tk_builtin_graphs[] = {'
n=0
for f in "$@"; do
	n=$((n + 1))
	printf '\t{ "%s", tk_graph_%d, %d },\n' "$(basename "$f" .onnx)" "$n" "$(wc -c <"$f")"
done
echo '	{ 0, 0, 0 }'
echo '};'
