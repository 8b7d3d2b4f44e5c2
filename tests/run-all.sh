#!/bin/sh
# Run every tests/t*.sh against the built ./tunekit; exit 1 if any failed.
# Scripts share one compile cache so identical kernels are built once.
cd "$(dirname "$0")" || exit 1
TUNEKIT_CACHE=$(mktemp -d "${TMPDIR:-/tmp}/tunekit-testcache.XXXXXX")
export TUNEKIT_CACHE
trap 'rm -rf "$TUNEKIT_CACHE"' EXIT
failed=0
for t in t[0-9]*.sh; do
	echo "== $t"
	start=$(date +%s)
	if ! sh "./$t"; then
		failed=$((failed + 1))
	fi
	echo "   ($(( $(date +%s) - start )) s)"
done
if [ $failed -ne 0 ]; then
	echo "$failed test script(s) failed"
	exit 1
fi
echo "all test scripts passed"
