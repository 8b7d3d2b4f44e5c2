# tunekit: auto-tuning of tensor programs.
#
#   make            build ./tunekit
#   make deps       install the Debian packages tunekit needs (as root)
#   make test       unit tests (tests/unit) and command-line tests (tests/t*.sh)
#   make demo       measure a small GEMM and a ResNet-18 convolution
#   make bench      benchmarks (not in CI)
#   make bench-kernels  tuned kernels against OpenBLAS, oneDNN and the FMA peak
#                   (not in CI; needs make bench-deps, as root, once)
#   make install    install to $(DESTDIR)$(PREFIX)

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BUILD ?= build

CC ?= cc
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare -MMD -MP
CPPFLAGS += -Ilib

PKGS = sqlite3 zlib jansson xgboost
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lsqlite3 -lz -ljansson -lxgboost)
LDLIBS += $(PKG_LIBS) -ldl -lm
CPPFLAGS += $(PKG_CFLAGS)

# sqlite3 (the shell), mandoc and bsdextrautils (col) are for the tests.
DEBIAN_PACKAGES = build-essential pkg-config libsqlite3-dev zlib1g-dev clang \
	libxgboost-dev libjansson-dev \
	sqlite3 mandoc bsdextrautils

VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0)
CPPFLAGS += -DTK_VERSION='"$(VERSION)"'

LIB_SRC := $(sort $(wildcard lib/*/*.c))
CMD_SRC := $(sort $(wildcard cmd/*.c))
NETWORKS := $(sort $(wildcard data/networks/*.tsv))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/schema_sql.o $(BUILD)/gen/networks.o
CMD_OBJ := $(CMD_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
CMDS := $(patsubst cmd/%.c,%,$(filter-out cmd/main.c cmd/opts.c,$(CMD_SRC)))

all: tunekit

tunekit: $(CMD_OBJ) $(BUILD)/libtunekit.a
	$(CC) $(LDFLAGS) -o $@ $(CMD_OBJ) $(BUILD)/libtunekit.a $(LDLIBS)

$(BUILD)/libtunekit.a: $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $(LIB_OBJ)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# The schema is compiled into the binary as a C string.
$(BUILD)/gen/schema_sql.c: schemas/store.sql
	@mkdir -p $(dir $@)
	{ echo 'const char tk_schema_sql[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; \
	  echo ';'; } > $@

# The network task lists too, so the binary needs no data directory.
$(BUILD)/gen/networks.c: $(NETWORKS)
	@mkdir -p $(dir $@)
	{ echo 'typedef struct { const char *name, *text; } builtin;'; \
	  echo 'const builtin tk_builtin_networks[] = {'; \
	  for f in $(NETWORKS); do \
	    printf '{ "%s",\n' "$$(basename $$f .tsv)"; \
	    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g' -e 's/^/"/' -e 's/$$/\\n"/' $$f; \
	    echo '},'; \
	  done; \
	  echo '{ 0, 0 } };'; \
	  echo 'const char *const tk_builtin_network_names[] = {'; \
	  for f in $(NETWORKS); do printf '"%s",\n' "$$(basename $$f .tsv)"; done; \
	  echo '0 };'; } > $@

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c tests/unit/unit.h $(BUILD)/libtunekit.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libtunekit.a $(LDLIBS)

deps:
	apt-get update -qq
	apt-get install -y --no-install-recommends $(DEBIAN_PACKAGES)

test: tunekit $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done
	@for m in man/*.1; do mandoc -Tlint -W warning $$m || exit 1; done
	@cd tests && ./run-all.sh

# The main job on a built-in default: a GEMM and a ResNet-18 convolution,
# the naive loop nest against the best of random configurations.
DEMO_DB ?= demo.db
demo: tunekit
	rm -f $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm
	./tunekit measure --db $(DEMO_DB) --naive --sample 32 \
		--task dense:m=256,n=256,k=256 --task conv2d:c=64,h=56,w=56,k=64,pad=1 >/dev/null
	./tunekit report --db $(DEMO_DB) --format table best

# Benchmarks, not in CI: feature extraction throughput, and the trials each
# search needs on replayed Kernel Tuner spaces (median of 10 seeds).
$(BUILD)/bench/features: tests/bench/features.c $(BUILD)/libtunekit.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libtunekit.a $(LDLIBS)

bench: tunekit $(BUILD)/bench/features
	$(BUILD)/bench/features 1000
	sh tests/bench/search.sh ./tunekit $(BUILD)/bench 10 2000

# AdaTune's ablation on real measurements: 3 tasks x 4 methods x SEEDS x BUDGET
# seconds (about 1 h 50 min with the defaults).
ADATUNE_SEEDS ?= 3
ADATUNE_BUDGET ?= 180
bench-adatune: tunekit
	sh tests/bench/adatune.sh ./tunekit $(BUILD)/bench/adatune $(ADATUNE_SEEDS) $(ADATUNE_BUDGET)

# The kernel benchmark (issue 4): tune each workload, export the best kernel
# and time it against OpenBLAS, BLIS or oneDNN in one process, with the FP32
# peak; prints one table (tests/bench/kernels.sh). The BLAS baseline is the
# fastest correct of every OpenBLAS core type and BLIS configuration the CPU
# runs (issue 28), chosen in the benchmark's own commands: the caller's
# OPENBLAS_CORETYPE is left as it is. The store is kept outside $(BUILD) so
# that a re-run resumes. The libraries are needed by the benchmark only:
# tunekit does not link them and `make deps` leaves them out.
BENCH_TRIALS ?= 300
BENCH_THREADS ?= 1 2
BENCH_DB ?= bench-kernels.db
BENCH_TRANSFER ?= 1
BENCH_DEBIAN_PACKAGES = libopenblas-dev libdnnl-dev libblis-dev

bench-kernels: tunekit
	BENCH_TRIALS='$(BENCH_TRIALS)' BENCH_THREADS='$(BENCH_THREADS)' \
	BENCH_DB='$(BENCH_DB)' BENCH_TRANSFER='$(BENCH_TRANSFER)' WORKLOADS='$(WORKLOADS)' \
	CC='$(CC)' sh tests/bench/kernels.sh ./tunekit $(BUILD)/bench/kernels

bench-deps:
	apt-get update -qq
	apt-get install -y --no-install-recommends $(BENCH_DEBIAN_PACKAGES)

install: tunekit
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 755 tunekit $(DESTDIR)$(BINDIR)/tunekit
	for c in $(CMDS); do ln -sf tunekit $(DESTDIR)$(BINDIR)/tunekit-$$(echo $$c | tr _ -); done
	install -m 644 man/*.1 $(DESTDIR)$(MANDIR)/man1/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/tunekit $(DESTDIR)$(BINDIR)/tunekit-*
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(wildcard man/*.1)))

clean:
	rm -rf $(BUILD) tunekit

.PHONY: all deps test demo bench bench-adatune bench-kernels bench-deps install uninstall clean

-include $(LIB_OBJ:.o=.d) $(CMD_OBJ:.o=.d)
