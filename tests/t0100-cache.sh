#!/bin/sh
# The compile cache: private (a planted or modified object is never loaded,
# a shared or linked directory is refused), bounded (least recently used
# kernels go), and shown and cleaned by tunekit cache.
. "$(dirname "$0")/lib.sh"

TASK='dense:m=8,n=8,k=8'

# A kernel with the ABI whose constructor leaves a mark: loaded means run.
cat >planted.c <<PLANT
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void)
{ int fd = open("$TRASH/pwned", O_WRONLY | O_CREAT, 0644); if (fd >= 0) close(fd); }
const int tk_abi = 1;
const unsigned long tk_workspace_floats = 0;
void tk_kernel(float *const *b, float *ws) { (void)b; (void)ws; }
PLANT

test_expect_success 'setup: a planted object, and the name tunekit gives the naive kernel' '
	cc -shared -fPIC -o planted.so planted.c &&
	TUNEKIT_CACHE=$TRASH/c1 tunekit measure -q --task $TASK --naive >out &&
	test "$(tsv_col out valid)" = 1 &&
	ls c1/*.so >objs && test $(wc -l <objs) -eq 1 &&
	basename "$(cat objs)" >name
'

# Defect 3 of issue 20: the cache loaded any object it found under the name.
test_expect_success 'an object planted in the cache in place of a kernel is not loaded' '
	cp planted.so "c1/$(cat name)" &&
	TUNEKIT_CACHE=$TRASH/c1 tunekit measure -q --task $TASK --naive >out &&
	test ! -e pwned &&
	test "$(tsv_col out valid)" = 1 &&
	! cmp -s planted.so "c1/$(cat name)" &&
	sql "SELECT compile_s FROM measurement ORDER BY id DESC LIMIT 1" | awk "{ exit !(\$1 > 0) }"
'

test_expect_success 'a kernel modified in the cache is compiled again, not loaded' '
	printf "\\177ELF-garbage" | dd of="c1/$(cat name)" bs=1 seek=100 conv=notrunc 2>/dev/null &&
	TUNEKIT_CACHE=$TRASH/c1 tunekit measure -q --task $TASK --naive >out &&
	test "$(tsv_col out valid)" = 1 &&
	sql "SELECT compile_s FROM measurement ORDER BY id DESC LIMIT 1" | awk "{ exit !(\$1 > 0) }" &&
	TUNEKIT_CACHE=$TRASH/c1 tunekit measure -q --task $TASK --naive >out &&
	sql "SELECT compile_s FROM measurement ORDER BY id DESC LIMIT 1" | awk "{ exit !(\$1 == 0) }"
'

# The issue's demonstration: a directory someone else made for us, writable by
# them, with the object in it. Refused as a whole, before anything is loaded.
test_expect_success 'a cache directory others may write to is refused, its objects unused' '
	mkdir shared && cp planted.so "shared/$(cat name)" && chmod 777 shared &&
	test_expect_code 1 env TUNEKIT_CACHE=$TRASH/shared "$TUNEKIT_BIN" measure -q --task $TASK --naive >out 2>err &&
	grep -q "writable by others" err && test $(wc -l <err) -eq 1 &&
	test ! -e pwned &&
	test "$(stat -c %a shared)" = 777 &&
	test_expect_code 1 env TUNEKIT_CACHE=$TRASH/shared "$TUNEKIT_BIN" cache 2>err &&
	grep -q "writable by others" err
'

test_expect_success 'a cache directory that is a symbolic link is refused' '
	mkdir real && chmod 700 real && cp planted.so "real/$(cat name)" && ln -s real link &&
	test_expect_code 1 env TUNEKIT_CACHE=$TRASH/link "$TUNEKIT_BIN" measure -q --task $TASK --naive 2>err &&
	grep -q "symbolic link" err &&
	test ! -e pwned
'

test_expect_success 'without HOME the cache is in the password entry home, not in /tmp' '
	home=$(getent passwd "$(id -u)" | cut -d: -f6) &&
	env -u HOME -u XDG_CACHE_HOME -u TUNEKIT_CACHE "$TUNEKIT_BIN" cache --format tsv >info &&
	if [ -n "$home" ] && [ "$home" != / ] && [ -w "$home" ]; then
		test "$(tsv_col info directory)" = "$home/.cache/tunekit"
	else
		test "$(tsv_col info directory)" = "/tmp/tunekit-cache-$(id -u)"
	fi
'

test_expect_success 'a new cache directory is private' '
	TUNEKIT_CACHE=$TRASH/new/deeper tunekit measure -q --task $TASK --naive >/dev/null &&
	test "$(stat -c %a new/deeper)" = 700 && test "$(stat -c %a new)" = 700 &&
	test "$(stat -c %a new/deeper/ref)" = 700 &&
	for f in new/deeper/* new/deeper/ref/*; do
		test -d "$f" || test "$(stat -c %a "$f")" = 600 || { ls -l "$f"; exit 1; }
	done
'

test_expect_success 'cache info shows the directory, kernels, size and limit' '
	TUNEKIT_CACHE=$TRASH/c2 tunekit measure -q --task $TASK --naive --sample 3 >/dev/null &&
	echo "not a kernel" >c2/notes.txt &&
	TUNEKIT_CACHE=$TRASH/c2 tunekit cache info >info &&
	test "$(tsv_col info directory)" = "$TRASH/c2" &&
	test "$(tsv_col info entries)" -eq 4 &&
	test "$(tsv_col info size)" -eq "$(cat c2/*.so c2/*.c c2/*.sha256 | wc -c)" &&
	test "$(tsv_col info limit)" -eq 1073741824 &&
	test "$(tsv_col info stale)" -eq 0 &&
	tunekit cache --cache-dir "$TRASH/c2" --format json >json &&
	grep -q "\"entries\": 4" json &&
	TUNEKIT_CACHE_MAX=64M tunekit cache --cache-dir "$TRASH/c2" >info &&
	test "$(tsv_col info limit)" -eq 67108864 &&
	tunekit cache --cache-dir "$TRASH/none" >info && test "$(tsv_col info entries)" -eq 0 &&
	test ! -e none
'

test_expect_success 'cache clean removes the least recently used kernels, then all' '
	ls -t c2/*.sha256 >byuse &&
	touch -d "2 hours ago" c2/* && touch "$(sed -n 1p byuse)" "$(sed -n 2p byuse)" &&
	keep1=$(sed -n 1p byuse) && keep2=$(sed -n 2p byuse) &&
	size=$(cat "${keep1%.sha256}".* "${keep2%.sha256}".* | wc -c) &&
	tunekit cache clean --cache-dir "$TRASH/c2" --max-size $size 2>err &&
	grep -q "removed 2 kernels" err &&
	test -e "$keep1" && test -e "$keep2" &&
	test "$(tunekit cache --cache-dir "$TRASH/c2" | tail -1 | cut -f2)" -eq 2 &&
	tunekit cache clean -q --cache-dir "$TRASH/c2" --all 2>err && test ! -s err &&
	test "$(tunekit cache --cache-dir "$TRASH/c2" | tail -1 | cut -f2)" -eq 0 &&
	test -e c2/notes.txt
'

# Defect 7 of issue 20: the cache grew without bound.
test_expect_success 'measuring keeps the cache within TUNEKIT_CACHE_MAX' '
	TUNEKIT_CACHE=$TRASH/c3 TUNEKIT_CACHE_MAX=20K tunekit measure -q --task $TASK --sample 8 --batch 3 >out &&
	test "$(awk -F"\t" "NR > 1 && \$7 != 1" out | wc -l)" -eq 0 &&
	test "$(cat c3/* | wc -c)" -le 20480 &&
	TUNEKIT_CACHE=$TRASH/c3 tunekit measure -q --task $TASK --sample 8 --batch 3 >/dev/null &&
	test "$(cat c3/* | wc -c)" -gt 20480
'

test_expect_success 'bad cache commands, sizes and limits exit 2' '
	test_expect_code 2 tunekit cache frob 2>err && grep -q "unknown cache command" err &&
	test_expect_code 2 tunekit cache clean --all --max-size 1M 2>err &&
	test_expect_code 2 tunekit cache clean --max-size 1.5G 2>err && grep -q "bad size" err &&
	test_expect_code 2 tunekit cache info --all 2>err &&
	test_expect_code 2 tunekit cache info extra 2>err &&
	test_expect_code 2 env TUNEKIT_CACHE_MAX=lots "$TUNEKIT_BIN" cache 2>err && grep -q TUNEKIT_CACHE_MAX err &&
	test_expect_code 2 env TUNEKIT_CACHE_MAX=0 "$TUNEKIT_BIN" measure -q --task $TASK --naive 2>err &&
	grep -q TUNEKIT_CACHE_MAX err && test $(wc -l <err) -eq 1
'

test_done
