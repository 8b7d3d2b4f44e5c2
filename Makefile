# tunekit: auto-tuning of tensor programs.
#
#   make            build ./tunekit
#   make deps       install the Debian packages tunekit needs (as root)
#   make test       unit tests (tests/unit) and command-line tests (tests/t*.sh)
#   make test-scale the tests of merge, --shard and the recipes for many machines
#   make check-asan the same tests on a build with AddressSanitizer and UBSan
#   make crash-test SIGKILL each writing command at 100 random moments
#   make fuzz       libFuzzer on each input reader (FUZZ_S CPU seconds each)
#   make demo       measure a small GEMM and a ResNet-18 convolution
#   make dataset    build or continue the offline dataset (DATASET_MINUTES=N)
#   make costmodels train the built-in cost models again from the dataset
#   make metatune-dataset  build or continue MetaTune's meta-training set
#   make bench-meta MetaTune's Table 4: meta model against xgb, xgb-xfer
#   make bench      benchmarks (not in CI)
#   make bench-nn   GFLOPS of lib/nn's linear and attention layers (not in CI)
#   make bench-tlp  TLP and MTL-TLP against xgb on the offline dataset
#   make bench-generalize  leave-one-family-out: xgb, TLP, MTL-TLP and meta on
#                   network families they never saw (GEN_HARDWARE=ID)
#   make bench-active  train --select active:F against a uniform draw and all records
#   make bench-transfer  a model moved to new hardware: Moses, fine-tuning,
#                   xgb warm start, MTL, scratch (Kernel Tuner GPUs, CPUs)
#   make bench-kernels  tuned kernels against OpenBLAS, oneDNN and the FMA peak
#                   (not in CI; needs make bench-deps, as root, once)
#   make bench-ml2  ML2Tuner (P+V+A) against xgb and its ablations (vta-sim, CPU, Kernel Tuner replays)
#   make bench-measure  configurations measured per minute, against a baseline
#   make bench-compile  compiler seconds per generated kernel, against a baseline
#   make bench-tune-speed  seconds per trial of tune, with and without bounded
#                   timing, or against TUNE_SPEED_BASE=BIN (TUNE_SPEED_GUIDED=1:
#                   both guided by a tlp model)
#   make install    install to $(DESTDIR)$(PREFIX)

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BUILD ?= build

CC ?= cc
CFLAGS ?= -O2 -g
# SANITIZE: compiler and linker flags of an instrumented build (check-asan).
SANITIZE ?=
CFLAGS += $(SANITIZE)
LDFLAGS += $(SANITIZE)
CFLAGS += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare -MMD -MP
CPPFLAGS += -Ilib

PKGS = sqlite3 zlib jansson xgboost openblas libprotobuf-c
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lsqlite3 -lz -ljansson -lxgboost -lopenblas -lprotobuf-c)
LDLIBS += $(PKG_LIBS) -lpthread -ldl -lm
CPPFLAGS += $(PKG_CFLAGS)

# libopenblas-dev: cblas_sgemm under lib/nn. protobuf-c-compiler,
# libprotobuf-c-dev and libonnx-dev (its onnx.proto): the ONNX reader of
# lib/import. sqlite3 (the shell), mandoc and bsdextrautils (col) are for
# the tests, libonnx-testdata (ONNX's own node tests, tests/unit/onnx.c)
# and time (the peak memory of an import, tests/t0130-onnx.sh) too;
# parallel, rsync, slurmctld, slurmd and slurm-client for those of the
# recipes for many machines (tests/t0121-recipes.sh starts a one-node Slurm
# cluster).
DEBIAN_PACKAGES = build-essential pkg-config libsqlite3-dev zlib1g-dev clang \
	libxgboost-dev libjansson-dev libopenblas-dev \
	protobuf-c-compiler libprotobuf-c-dev libonnx-dev \
	sqlite3 mandoc bsdextrautils libonnx-testdata time parallel rsync slurmctld slurmd slurm-client

VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0)
CPPFLAGS += -DTK_VERSION='"$(VERSION)"'

LIB_SRC := $(sort $(wildcard lib/*/*.c))
CMD_SRC := $(sort $(wildcard cmd/*.c))
# Built-in networks: the hand-derived lists, and the task lists of the model
# zoo's ONNX graphs (data/models/NAME.tasks.tsv) that have no hand-derived one.
HAND_NETWORKS := $(sort $(wildcard data/networks/*.tsv))
ZOO_NETWORKS := $(filter-out $(HAND_NETWORKS:data/networks/%.tsv=data/models/%.tasks.tsv), \
	$(sort $(wildcard data/models/*.tasks.tsv)))
NETWORKS := $(HAND_NETWORKS) $(ZOO_NETWORKS)
# The ONNX graphs of built-in networks that have convolutions, for --layout.
GRAPHS := $(patsubst %.tasks.tsv,%.onnx,$(shell grep -l conv data/models/*.tasks.tsv 2>/dev/null))
# Built-in cost models: data/costmodels/models.tsv and the files it names.
COSTMODELS := $(shell awk -F'\t' 'NR > 1 { print "data/costmodels/" $$1 }' data/costmodels/models.tsv 2>/dev/null)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/schema_sql.o $(BUILD)/gen/networks.o \
	$(BUILD)/gen/onnx.pb-c.o $(BUILD)/gen/costmodels.o $(BUILD)/gen/graphs.o
CMD_OBJ := $(CMD_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZERS := $(filter-out replay,$(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/*.c)))
REPLAY_BIN := $(FUZZERS:%=$(BUILD)/fuzz-replay/%)
CMDS := $(patsubst cmd/%.c,%,$(filter-out cmd/main.c cmd/common.c,$(CMD_SRC)))

# The binary; check-asan builds its own under $(BUILD).
BIN ?= tunekit

all: $(BIN)

$(BIN): $(CMD_OBJ) $(BUILD)/libtunekit.a
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
$(BUILD)/gen/networks.c: $(NETWORKS) Makefile
	@mkdir -p $(dir $@)
	{ echo 'typedef struct { const char *name, *text; } builtin;'; \
	  echo 'const builtin tk_builtin_networks[] = {'; \
	  for f in $(NETWORKS); do \
	    printf '{ "%s",\n' "$$(basename $$f .tsv | sed 's/[.]tasks$$//')"; \
	    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g' -e 's/^/"/' -e 's/$$/\\n"/' $$f; \
	    echo '},'; \
	  done; \
	  echo '{ 0, 0 } };'; \
	  echo 'const char *const tk_builtin_network_names[] = {'; \
	  for f in $(NETWORKS); do printf '"%s",\n' "$$(basename $$f .tsv | sed 's/[.]tasks$$//')"; done; \
	  echo '0 };'; } > $@

# The graphs of built-in networks with convolutions (data/models/embed.sh).
$(BUILD)/gen/graphs.c: data/models/embed.sh $(GRAPHS) Makefile
	@mkdir -p $(dir $@)
	sh data/models/embed.sh $(GRAPHS) > $@

# The cost models too (data/costmodels/embed.sh).
$(BUILD)/gen/costmodels.c: data/costmodels/embed.sh data/costmodels/models.tsv $(COSTMODELS)
	@mkdir -p $(dir $@)
	sh data/costmodels/embed.sh data/costmodels > $@

# The ONNX reader's protobuf-c code, generated from the system's onnx.proto
# (libonnx-dev), never committed: it follows the installed protobuf-c.
ONNX_PROTO ?= /usr/include/onnx/onnx.proto
CPPFLAGS += -I$(BUILD)/gen
$(BUILD)/gen/onnx.pb-c.c $(BUILD)/gen/onnx.pb-c.h: $(ONNX_PROTO)
	@mkdir -p $(dir $@)
	protoc-c --c_out=$(BUILD)/gen -I$(dir $(ONNX_PROTO)) $(ONNX_PROTO)
$(BUILD)/lib/import/onnx.o: $(BUILD)/gen/onnx.pb-c.h

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(BUILD)/libtunekit.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libtunekit.a $(LDLIBS)

# Each fuzz harness built with the ordinary compiler and a main that feeds
# it files: make test replays the corpora (seeds and past crash inputs).
$(BUILD)/fuzz-replay/%: tests/fuzz/%.c tests/fuzz/replay.c tests/fuzz/fuzz.h $(BUILD)/libtunekit.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< tests/fuzz/replay.c $(BUILD)/libtunekit.a $(LDLIBS)

deps:
	apt-get update -qq
	apt-get install -y --no-install-recommends $(DEBIAN_PACKAGES)

test: $(BIN) $(UNIT_BIN) $(REPLAY_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done
	@set -e; for f in $(FUZZERS); do echo "== fuzz corpus $$f"; timeout 120 $(BUILD)/fuzz-replay/$$f tests/fuzz/corpus/$$f/*; done
	@for m in man/*.1; do mandoc -Tlint -W warning $$m || exit 1; done
	@cd tests && TUNEKIT_BIN=$(abspath $(BIN)) ./run-all.sh
	@echo "== crash test (SIGKILL at $(CRASH_N) moments per command)"
	@sh tests/crash/kill.sh $(CRASH_N) $(abspath $(BIN))

# The shell tests of merge, --shard and the recipes of examples/ alone.
test-scale: $(BIN)
	@cd tests && for t in t0120-merge.sh t0121-recipes.sh; do \
	  echo "== $$t"; TUNEKIT_BIN=$(abspath $(BIN)) sh ./$$t || exit 1; done

# SIGKILL tune, measure, train and import at CRASH_N random moments each:
# the store stays intact, no committed record is lost, --resume finishes.
CRASH_N ?= 10
crash-test: $(BIN)
	sh tests/crash/kill.sh 100 $(abspath $(BIN))

# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer.
# Reports go to files (a test that expects a failing exit status would hide
# one), and any report fails the target; an empty report file (opened, and
# nothing written: a process killed at that moment, say) is listed and holds
# no finding. tests/run-all.sh names the script during which each report
# appeared. Signals stay the kernels' own: a planted crash must still be
# classified as a crash, not as an ASan exit.
ASAN_BUILD = $(BUILD)/asan
ASAN_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
check-asan:
	rm -rf $(ASAN_BUILD)/reports && mkdir -p $(ASAN_BUILD)/reports
	ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_abort=0:allocator_may_return_null=1:detect_leaks=1:log_path=$(abspath $(ASAN_BUILD))/reports/asan \
	UBSAN_OPTIONS=print_stacktrace=1:log_path=$(abspath $(ASAN_BUILD))/reports/ubsan \
	LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp) \
	TK_SANITIZER_REPORTS=$(abspath $(ASAN_BUILD))/reports \
	$(MAKE) BUILD=$(ASAN_BUILD) BIN=$(ASAN_BUILD)/tunekit SANITIZE='$(ASAN_FLAGS)' test
	@cd $(ASAN_BUILD)/reports && empty=$$(find . -type f -empty | sort) && \
	full=$$(find . -type f ! -empty | sort) && \
	if [ -n "$$empty" ]; then echo "check-asan: empty report files, no finding:" $$empty; fi && \
	if [ -n "$$full" ]; then \
		for f in $$full; do echo "== $$f"; head -40 $$f; done; \
		echo "check-asan: $$(echo "$$full" | wc -l) sanitizer report(s)"; exit 1; \
	else echo "check-asan: no sanitizer reports"; fi

# libFuzzer (clang) on each harness of tests/fuzz for FUZZ_S seconds of CPU
# time (not wall time), the library instrumented with ASan and UBSan; prints
# executions and crashes per harness. Not in CI: `make test` replays the corpora instead.
FUZZ_S ?= 60
FUZZ_BUILD = $(BUILD)/fuzz
FUZZ_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined
fuzz:
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=clang SANITIZE='$(FUZZ_FLAGS) -fsanitize=fuzzer-no-link' $(FUZZ_BUILD)/libtunekit.a
	set -e; for f in $(FUZZERS); do \
		clang $(CPPFLAGS) -O1 -g $(FUZZ_FLAGS) -fsanitize=fuzzer -o $(FUZZ_BUILD)/fuzz-$$f \
			tests/fuzz/$$f.c $(FUZZ_BUILD)/libtunekit.a $(LDLIBS); \
	done
	sh tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_S) $(FUZZERS)

# The main job on a built-in default: a GEMM and a ResNet-18 convolution,
# the naive loop nest against the best of random configurations.
DEMO_DB ?= demo.db
demo: tunekit
	rm -f $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm
	./tunekit measure --db $(DEMO_DB) --naive --sample 32 \
		--task dense:m=256,n=256,k=256 --task conv2d:c=64,h=56,w=56,k=64,pad=1 >/dev/null
	./tunekit report --db $(DEMO_DB) --format table best

# The offline dataset (data/dataset/README.md): measure until every unit is
# done or DATASET_MINUTES are up; a killed build continues where it stopped.
DATASET_MINUTES ?= 0
dataset: tunekit
	sh data/dataset/build.sh $(DATASET_MINUTES)
# MetaTune's meta-training set (data/metatune/README.md): the paper's 47
# convolution kernels x METATUNE_SAMPLE configurations, resumably; stop
# starting kernels after METATUNE_MINUTES (0: never), METATUNE_TASKS=N for the
# first N kernels only.
METATUNE_MINUTES ?= 0
metatune-dataset: tunekit
	METATUNE_SAMPLE='$(METATUNE_SAMPLE)' METATUNE_TASKS='$(METATUNE_TASKS)' \
	sh data/metatune/build.sh $(METATUNE_MINUTES)
METATUNE_SAMPLE ?= 200
METATUNE_TASKS ?= 0
# Its shipped copy (data/metatune/metatune.db.gz) and manifest.
metatune-pack:
	sh data/dataset/pack.sh data/metatune/build/metatune.db data/metatune
# MetaTune's evaluation kernels (data/metaeval/README.md): ResNet-18's 11
# convolutions x 272 random configurations, built and shipped the same way.
metaeval-dataset: tunekit
	METATUNE_SET=data/metaeval METATUNE_SAMPLE=272 sh data/metatune/build.sh $(METATUNE_MINUTES)
metaeval-pack:
	sh data/dataset/pack.sh data/metaeval/build/metaeval.db data/metaeval
# The shipped copy (data/dataset/dataset.db.gz) and its manifest.
dataset-pack:
	sh data/dataset/pack.sh
# The built-in cost models (data/costmodels/), trained again from the
# shipped dataset: after dataset-pack, then rebuild the binary.
costmodels: tunekit
	sh data/costmodels/build.sh ./tunekit
# TLP and MTL-TLP against xgb on the dataset's held-out networks, and the
# replayed search on their pools (tests/bench/tlp.sh).
# Then MTL-TLP on Kernel Tuner's GPU spaces (tests/bench/kt-mtl.sh).
TLP_DATASET ?= data/dataset/build/dataset.db
KT_SEEDS ?= 3
$(BUILD)/bench/tlp_score: tests/bench/tlp_score.c $(BUILD)/libtunekit.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libtunekit.a $(LDLIBS)
bench-tlp: tunekit $(BUILD)/bench/tlp_score
	$(BLAS_CORE) $(BUILD)/bench/tlp_score
	sh tests/bench/tlp.sh ./tunekit $(TLP_DATASET) $(BUILD)/bench/tlp
	sh tests/bench/kt-mtl.sh ./tunekit $(BUILD)/bench/tlp $(KT_SEEDS)

# Leave-one-family-out on the offline dataset (tests/bench/generalize.sh):
# each family of data/dataset/families.tsv held out in turn, xgb, tlp,
# mtl-tlp and meta trained on the others; GEN_HARDWARE (default: the
# hardware with the most records), GEN_MODELS, GEN_EPOCHS, GEN_TRAIN.
GEN_DATASET ?= $(TLP_DATASET)
bench-generalize: tunekit
	GEN_HARDWARE='$(GEN_HARDWARE)' GEN_MODELS='$(GEN_MODELS)' GEN_EPOCHS='$(GEN_EPOCHS)' \
	GEN_TRAIN='$(GEN_TRAIN)' sh tests/bench/generalize.sh ./tunekit $(GEN_DATASET) \
		$(BUILD)/bench/generalize

# Active selection (tests/bench/active.sh): xgb (ACTIVE_MODELS="xgb tlp" for
# TLP too) trained on all of the target's training records, on a uniform
# draw of ACTIVE_FRACTION of them and on as many chosen by --select active,
# bench-tlp's split, ACTIVE_SEEDS seeds.
ACTIVE_DATASET ?= $(TLP_DATASET)
bench-active: tunekit
	ACTIVE_HARDWARE='$(ACTIVE_HARDWARE)' ACTIVE_MODELS='$(ACTIVE_MODELS)' \
	ACTIVE_FRACTION='$(ACTIVE_FRACTION)' ACTIVE_SEEDS='$(ACTIVE_SEEDS)' \
		sh tests/bench/active.sh ./tunekit $(ACTIVE_DATASET) $(BUILD)/bench/active

# Transfer to new hardware (issue 23): each method of tunekit transfer from
# a few of the target's records, Kernel Tuner's convolution A100 -> A4000
# and -> MI250X, and the offline dataset's avx512 -> avx2, sse2 when
# TRANSFER_DATASET is readable (tests/bench/transfer.sh); then the replayed
# search with transfer and the adaptive controller (tests/bench/
# transfer-search.sh). TRANSFER_SEEDS=1 TRANSFER_FRACTIONS=0.1
# TRANSFER_SEARCH_SEEDS=1 is a quick run.
TRANSFER_SEEDS ?= 3
TRANSFER_DATASET ?= $(TLP_DATASET)
TRANSFER_FRACTIONS ?= 0.05 0.1
TRANSFER_SEARCH_SEEDS ?= 5
TRANSFER_BUDGET ?= 300
bench-transfer: tunekit
	TRANSFER_FRACTIONS='$(TRANSFER_FRACTIONS)' sh tests/bench/transfer.sh ./tunekit \
		$(BUILD)/bench/transfer $(TRANSFER_SEEDS) $(TRANSFER_DATASET)
	sh tests/bench/transfer-search.sh ./tunekit $(BUILD)/bench/transfer \
		$(TRANSFER_SEARCH_SEEDS) $(TRANSFER_BUDGET)

# MetaTune's Table 4 (tests/bench/meta.sh): MSE and MSE(D) of the meta model
# (meta-trained on the metatune-dataset set), xgb and xgb with transfer
# learning after n measurements of held-out kernels, of the convolutions of
# four networks in the offline dataset, and across targets.
META_SOURCE ?= data/metatune/build/metatune.db
META_DATASET ?= data/dataset/build/dataset.db
META_REPEATS ?= 3
$(BUILD)/bench/meta_eval: tests/bench/meta_eval.c $(BUILD)/libtunekit.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libtunekit.a $(LDLIBS)
# META_TUNE=1: then the output quality, networks tuned for real by xgb+sa,
# xgb-xfer, meta+bo and meta+sa at equal budgets (tests/bench/meta-tune.sh;
# an hour or more of this CPU per network and budget).
META_TUNE ?= 0
bench-meta: tunekit $(BUILD)/bench/meta_eval
	META_REPEATS='$(META_REPEATS)' sh tests/bench/meta.sh ./tunekit $(META_SOURCE) \
		$(META_DATASET) $(BUILD)/bench/meta $(BUILD)/bench/meta_eval
	[ '$(META_TUNE)' != 1 ] || sh tests/bench/meta-tune.sh ./tunekit $(META_SOURCE) \
		$(BUILD)/bench/meta/all.model $(BUILD)/bench/meta

# Benchmarks, not in CI: feature extraction throughput, and the trials each
# search needs on replayed Kernel Tuner spaces (median of 10 seeds).
$(BUILD)/bench/features: tests/bench/features.c $(BUILD)/libtunekit.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libtunekit.a $(LDLIBS)

# The benches of lib/nn run on the OpenBLAS kernels tunekit itself runs:
# where OpenBLAS falls back to SSE3 on a CPU newer than it, tunekit starts
# again with OPENBLAS_CORETYPE set (man tunekit), and so do these.
BLAS_CORE = OPENBLAS_CORETYPE="$${OPENBLAS_CORETYPE:-$$(./tunekit --version | sed -n 's/^OpenBLAS core //p')}"

# lib/nn at TLP's size: GFLOPS of the linear layer and the attention,
# forward and backward, median of NN_RUNS runs (tests/bench/nn.c).
NN_BATCH ?= 512
NN_RUNS ?= 7
$(BUILD)/bench/nn: tests/bench/nn.c $(BUILD)/libtunekit.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libtunekit.a $(LDLIBS)

bench-nn: tunekit $(BUILD)/bench/nn
	$(BLAS_CORE) $(BUILD)/bench/nn $(NN_BATCH) $(NN_RUNS)

bench: tunekit $(BUILD)/bench/features
	$(BUILD)/bench/features 1000
	sh tests/bench/search.sh ./tunekit $(BUILD)/bench 10 2000

# AdaTune's ablation on real measurements: 3 tasks x 4 methods x SEEDS x BUDGET
# seconds (about 1 h 50 min with the defaults).
ADATUNE_SEEDS ?= 3
ADATUNE_BUDGET ?= 180
bench-adatune: tunekit
	sh tests/bench/adatune.sh ./tunekit $(BUILD)/bench/adatune $(ADATUNE_SEEDS) $(ADATUNE_BUDGET)

# ML2Tuner against xgb and its ablations: ResNet-18's conv layers on the
# simulated VTA (zcu102), CPU tasks measured here (about 20 minutes), and
# Kernel Tuner's GPU spaces with failed configurations replayed (about 8
# minutes). ML2_PARTS="kt" runs only the replays, keeping the other rows.
ML2_SEEDS ?= 3
ML2_VTA_TRIALS ?= 50
ML2_CPU_TRIALS ?= 30
ML2_CPU_SEEDS ?= 2
ML2_KT_TRIALS ?= 300
ML2_KT_SEEDS ?= 20
ML2_PARTS ?= vta-sim cpu kt
bench-ml2: tunekit
	ML2_PARTS="$(ML2_PARTS)" sh tests/bench/ml2.sh ./tunekit $(BUILD)/bench/ml2 $(ML2_SEEDS) \
		$(ML2_VTA_TRIALS) $(ML2_CPU_TRIALS) $(ML2_CPU_SEEDS) $(ML2_KT_TRIALS) $(ML2_KT_SEEDS)

# The kernel benchmark (issue 4): tune each workload, export the best kernel
# and time it against OpenBLAS, BLIS or oneDNN in one process, with the FP32
# peak; prints one table (tests/bench/kernels.sh). The BLAS baseline is the
# fastest correct of every OpenBLAS core type and BLIS configuration the CPU
# runs (issue 28), chosen in the benchmark's own commands: the caller's
# OPENBLAS_CORETYPE is left as it is. The store is kept outside $(BUILD) so
# that a re-run resumes. oneDNN and BLIS are needed by the benchmark only;
# tunekit links OpenBLAS for lib/nn (`make deps` installs it).
BENCH_TRIALS ?= 300
BENCH_THREADS ?= 1 2
BENCH_DB ?= bench-kernels.db
BENCH_TRANSFER ?= 1
BENCH_DEBIAN_PACKAGES = libopenblas-dev libdnnl-dev libblis-dev

bench-kernels: tunekit
	BENCH_TRIALS='$(BENCH_TRIALS)' BENCH_THREADS='$(BENCH_THREADS)' \
	BENCH_DB='$(BENCH_DB)' BENCH_TRANSFER='$(BENCH_TRANSFER)' WORKLOADS='$(WORKLOADS)' \
	CC='$(CC)' sh tests/bench/kernels.sh ./tunekit $(BUILD)/bench/kernels

# Measurement throughput (issue 29): configurations per minute of measure on
# a fixed task mix from an empty compile cache, this build against a
# baseline built from MEASURE_BASE (default: where this branch left main) in
# a git worktree under $(BUILD), interleaved, medians of MEASURE_ROUNDS.
# MEASURE_TUNE=1 then compares the best kernels both binaries' tunes find
# (tests/bench/measure-tune.sh; MEASURE_TUNE_TRIALS, _SEEDS, _TASKS, _ROUNDS).
MEASURE_TUNE ?= 0
MEASURE_BASE ?= $(shell git merge-base HEAD main 2>/dev/null || echo HEAD)
MEASURE_ROUNDS ?= 3
MEASURE_SAMPLE ?= 8
MEASURE_BASEDIR = $(BUILD)/bench/measure/base
measure-base:
	@rev=$$(git rev-parse '$(MEASURE_BASE)') && \
	if [ "$$(git -C $(MEASURE_BASEDIR) rev-parse HEAD 2>/dev/null)" != "$$rev" ]; then \
		git worktree remove --force $(MEASURE_BASEDIR) 2>/dev/null; rm -rf $(MEASURE_BASEDIR); \
		git worktree prune && git worktree add --detach $(MEASURE_BASEDIR) $$rev; \
	fi
	$(MAKE) -C $(MEASURE_BASEDIR) tunekit

bench-measure: tunekit measure-base
	sh tests/bench/measure.sh ./tunekit $(MEASURE_BASEDIR)/tunekit $(BUILD)/bench/measure \
		$(MEASURE_ROUNDS) $(MEASURE_SAMPLE)
	[ '$(MEASURE_TUNE)' != 1 ] || sh tests/bench/measure-tune.sh ./tunekit \
		$(MEASURE_BASEDIR)/tunekit $(BUILD)/bench/measure-tune

# Compiler time per kernel (tests/bench/compile.sh): the C this build and
# the MEASURE_BASE build generate for the same sampled configurations of
# the bench-measure mix, compiled in turn, one at a time.
bench-compile: tunekit measure-base
	sh tests/bench/compile.sh ./tunekit $(MEASURE_BASEDIR)/tunekit $(MEASURE_SAMPLE)

# Tuning speed with and without bounded timing (issue 56; tests/bench/
# tune-speed.sh): the same xgb+sa tunes of a mix (GEMM 1024^3, a transformer
# dense layer, a ResNet 3x3 conv, a BERT batch_matmul, a depthwise conv) with
# --bound 0 and the default, interleaved, TUNE_SPEED_SEEDS seeds of
# TUNE_SPEED_TRIALS trials; s/trial, the time split and the best kernels'
# latency ratio. About 2 x 5 x 3 tunes of 1-3 minutes: run it on a quiet machine.
TUNE_SPEED_SEEDS ?= 3
TUNE_SPEED_TRIALS ?= 96
bench-tune-speed: tunekit
	sh tests/bench/tune-speed.sh ./tunekit $(BUILD)/bench/tune-speed $(TUNE_SPEED_SEEDS) \
		$(TUNE_SPEED_TRIALS)

# Guided tuning on layers of networks outside the offline dataset (issue 55;
# tests/bench/guided.sh): tune --model-file (the offline model, adapted and
# guarded) against xgb+sa at equal trials, GUIDED_SEEDS seeds of
# GUIDED_TRIALS real trials per layer: the trials the guided run needs to
# reach xgb+sa's best, and the ratio of the final kernels. About 2 x 6 x 3
# tunes of a few minutes each: run it on a quiet machine. GUIDED_LAYERS
# (one task a line) and GUIDED_MODEL_FILE change the layers and the model.
# Then, with Kernel Tuner's files in TUNEKIT_KT_DATA, the guard alone on
# replays (tests/bench/guided-replay.sh, about a minute): models of other
# GPUs and a wrong one guiding the A100's space, with and without it.
# GUIDED_PARTS="replay" runs only that.
GUIDED_SEEDS ?= 3
GUIDED_TRIALS ?= 200
GUIDED_DATASET ?= data/dataset/dataset.db.gz
GUIDED_REPLAY_SEEDS ?= 10
GUIDED_PARTS ?= real replay
TUNEKIT_KT_DATA ?= /work/shared/data/kernel_tuner
bench-guided: tunekit
	case " $(GUIDED_PARTS) " in *" real "*) sh tests/bench/guided.sh ./tunekit \
		$(GUIDED_DATASET) $(BUILD)/bench/guided $(GUIDED_SEEDS) $(GUIDED_TRIALS);; esac
	case " $(GUIDED_PARTS) " in *" replay "*) sh tests/bench/guided-replay.sh ./tunekit \
		$(TUNEKIT_KT_DATA) $(BUILD)/bench/guided-replay $(GUIDED_REPLAY_SEEDS) \
		$(GUIDED_TRIALS);; esac

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

.PHONY: all deps test test-scale check-asan crash-test fuzz demo dataset dataset-pack costmodels metatune-dataset metatune-pack metaeval-dataset metaeval-pack bench-meta bench-tlp bench-transfer bench bench-nn bench-adatune bench-ml2 bench-kernels bench-measure bench-compile bench-tune-speed bench-guided measure-base bench-deps install uninstall clean bench-generalize bench-active

-include $(LIB_OBJ:.o=.d) $(CMD_OBJ:.o=.d)
