# tcompile — see README.md.  `make demo` builds and runs the quick-start
# example; `make test` runs the whole suite (last line: N passed, N failed).
CC      ?= cc
CFLAGS  ?= -O2 -g
WARN     = -std=c99 -Wall -Wextra -Werror -pedantic
LIBS     = -lm -lpthread
BUILD    = build

SRC = $(wildcard src/*.c src/*.h)

.PHONY: all demo test header examples clean

all: header examples

# tcompile.h is generated from src/ (and committed); rebuild it when src/ changes.
header: tcompile.h
tcompile.h: $(SRC) tools/amalgamate.sh
	tools/amalgamate.sh

$(BUILD)/%: examples/%.c tcompile.h
	@mkdir -p $(BUILD)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)

examples: $(BUILD)/quickstart $(BUILD)/graph_breaks

demo: $(BUILD)/quickstart
	./$(BUILD)/quickstart

test: tcompile.h
	sh tests/run_all.sh

clean:
	rm -rf $(BUILD)
