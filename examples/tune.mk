# Tune every task of a model into one store, a make target per task.
#
#   make -j2 -f examples/tune.mk MODEL=model.onnx TRIALS=200 DB=runs.db
#   make -f examples/tune.mk MODEL=model.onnx DB=runs.db report
#
# MODEL is an ONNX model (its tasks come from 'tunekit import onnx'; give
# INPUT='--input x=1x3x224x224' for an input of symbolic size) or a network
# file (weight<TAB>task lines, as data/networks/*.tsv). Each task is tuned by
# 'tunekit tune --until TRIALS', which tunes a task only by the trials it lacks
# in the store: a second make does nothing (a stamp per task and TRIALS under
# STATE), and a larger TRIALS tunes only the difference. Parallel jobs share
# the store safely; their kernels are timed one at a time under tunekit's
# measure lock, so -j2 overlaps compiling with timing.
# 'make report' prints the best configuration of each task and, on stderr,
# the network's estimated latency (sum of weight x best latency).

ifndef MODEL
$(error give MODEL=model.onnx (or a network file NAME.tsv))
endif
TUNEKIT ?= tunekit
TRIALS ?= 200
DB ?= tunekit.db
NAME ?= $(basename $(notdir $(MODEL)))
STATE ?= $(DB).make/$(NAME)
INPUT ?=
TUNEFLAGS ?=

.PHONY: all report clean
all:

# The model's tasks as a network file, and as make variables TASK_1 ... TASK_n.
$(STATE)/$(NAME).tsv: $(MODEL)
	@mkdir -p $(@D)
	case '$<' in *.onnx) $(TUNEKIT) import onnx '$<' $(INPUT) ;; *) cat '$<' ;; esac > $@.tmp
	@mv $@.tmp $@

$(STATE)/tasks.mk: $(STATE)/$(NAME).tsv
	awk -F'\t' '!/^#/ && $$1 != "weight" && NF == 2 { n++; printf "TASK_%d := %s\n", n, $$2 } \
	    END { printf "NTASK := %d\n", n }' '$<' > $@.tmp
	@mv $@.tmp $@

include $(STATE)/tasks.mk

STAMPS := $(foreach i,$(shell seq 1 $(NTASK)),$(STATE)/task$(i).$(TRIALS))
all: $(STAMPS)

$(STATE)/task%.$(TRIALS): $(STATE)/$(NAME).tsv
	@echo "tune $(TASK_$*) until $(TRIALS) trials"
	@$(TUNEKIT) tune -q --db '$(DB)' --task '$(TASK_$*)' --until $(TRIALS) $(TUNEFLAGS) >/dev/null
	@touch $@

report: $(STATE)/$(NAME).tsv
	$(TUNEKIT) report --db '$(DB)' --network '$<' best

clean:
	rm -rf '$(STATE)'
