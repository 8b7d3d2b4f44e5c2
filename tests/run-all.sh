#!/bin/sh
# Run every tests/t*.sh against the built ./tunekit; exit 1 if any failed.
# Scripts share one compile cache so identical kernels are built once.
# Under check-asan, TK_SANITIZER_REPORTS names the sanitizers' report
# directory: the reports that appear during a script are named after it.
cd "$(dirname "$0")" || exit 1
TUNEKIT_CACHE=$(mktemp -d "${TMPDIR:-/tmp}/tunekit-testcache.XXXXXX")
export TUNEKIT_CACHE
trap 'rm -rf "$TUNEKIT_CACHE" "$TUNEKIT_CACHE.reports"' EXIT
reports() {
	[ -n "${TK_SANITIZER_REPORTS:-}" ] || return 0
	ls "$TK_SANITIZER_REPORTS" 2>/dev/null | LC_ALL=C sort
}
reports | sed 's/^/   sanitizer report (before the scripts): /'
failed=0
for t in t[0-9]*.sh; do
	echo "== $t"
	start=$(date +%s)
	reports > "$TUNEKIT_CACHE.reports"
	if ! sh "./$t"; then
		failed=$((failed + 1))
	fi
	reports | LC_ALL=C comm -13 "$TUNEKIT_CACHE.reports" - | sed 's/^/   sanitizer report: /'
	echo "   ($(( $(date +%s) - start )) s)"
done
if [ $failed -ne 0 ]; then
	echo "$failed test script(s) failed"
	exit 1
fi
echo "all test scripts passed"
