# tcompile — see README.md.  `make demo` builds and runs the quick-start
# example; `make test` runs the whole suite (last line: N passed, N failed).
CC      ?= cc
CFLAGS  ?= -O2 -g
WARN     = -std=c99 -Wall -Wextra -Werror -pedantic
LIBS     = -lm -lpthread
BUILD    = build

SRC = $(wildcard src/*.h src/*/*.c src/*/*.h)

.PHONY: all demo test header examples clean bench fuzz fuzz-lib check-faults

all: header examples

# tcompile.h is generated from src/ (and committed); rebuild it when src/ changes.
header: tcompile.h
tcompile.h: $(SRC) tools/amalgamate.sh
	tools/amalgamate.sh

$(BUILD)/%: examples/%.c tcompile.h
	@mkdir -p $(BUILD)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)

examples: $(BUILD)/quickstart $(BUILD)/graph_breaks $(BUILD)/resnet $(BUILD)/gpt2 $(BUILD)/vit $(BUILD)/game_agent

demo: $(BUILD)/quickstart
	./$(BUILD)/quickstart

test: tcompile.h
	sh tests/run_all.sh

# Benchmarks (not tests): `make bench WORKLOADS="ew softmax_ln"` for a subset.
WORKLOADS ?=
BENCH_THREADS ?= 2
$(BUILD)/bench: bench/bench.c bench/ref_isa.h tcompile.h
	@mkdir -p $(BUILD)
	$(CC) $(WARN) -O2 -I. $< -o $@ $(LIBS) -ldl

bench: $(BUILD)/bench
	./$(BUILD)/bench -t $(BENCH_THREADS) $(WORKLOADS)

# The long differential fuzzer run (make test runs a bounded one).
FUZZ_GRAPHS ?= 10000
fuzz: tcompile.h
	@mkdir -p $(BUILD)
	$(CC) -std=c99 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. tests/fuzz_fusion.c -o $(BUILD)/fuzz $(LIBS)
	rm -rf $(BUILD)/fuzz-tune-cache
	TC_CACHE_DIR=$(BUILD)/fuzz-tune-cache ./$(BUILD)/fuzz $(FUZZ_GRAPHS)

# The libFuzzer targets (tests/fuzz/: the safetensors parser, the op API,
# compiled vs eager) with clang's fuzzer runtime, FUZZ_TIME seconds each;
# the corpus grows in build/fuzz-lib/corpus/, crashers land in
# build/fuzz-lib/ (make test runs 10 s of each).
FUZZ_TIME ?= 600
FUZZ_TARGETS ?= safetensors ops compile
fuzz-lib: tcompile.h
	sh tests/fuzz/run.sh $(BUILD)/fuzz-lib $(FUZZ_TIME) -O1 $(FUZZ_TARGETS)

# The allocation-failure sweep (tests/check_faults.c) under ASan + UBSan +
# LeakSanitizer: every failure point of every scenario on one thread, then
# every third on two threads (make test runs every 13th on one).
# FAULTS_ARGS="--only mlp" for a subset.
FAULTS_ARGS ?=
SANITIZE = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
check-faults: tcompile.h
	@mkdir -p $(BUILD)
	$(CC) $(WARN) -O0 -g $(SANITIZE) -I. tests/check_faults.c -o $(BUILD)/check_faults $(LIBS)
	ASAN_OPTIONS=detect_leaks=1 ./$(BUILD)/check_faults $(FAULTS_ARGS)
	ASAN_OPTIONS=detect_leaks=1 ./$(BUILD)/check_faults --threads 2 --every 3 $(FAULTS_ARGS)

clean:
	rm -rf $(BUILD)
