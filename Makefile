# parsa — top-level build.  See README.md.
#
#   make          build everything into build/
#   make test     unit, reader, corpus and CLI tests; ends "N passed, N failed"
#   make check    the same tests under ASan+UBSan (build/asan)
#   make tsan     the parameter server's and the thread pool's tests, threaded
#                 parsa runs and the HTTP service's tests under TSan (build/tsan)
#   make demo     partition the bundled samples in data/ and print the reports
#   make bench    benchmarks on ../shared/data (long; writes bench/results)
#   make fuzz     libFuzzer targets with clang (bounded run per target)
#   make deps     install the Debian packages the build needs (root or sudo)

CC      ?= gcc
BUILD   ?= build
OPT     ?= -O2
SANITIZE ?=
CFLAGS_BASE = -std=c11 $(OPT) -g -Wall -Wextra -Wmissing-prototypes \
	-Wno-missing-field-initializers -D_GNU_SOURCE -pthread \
	-Ibase -Iparsa -Iserver -Ipartitioner -Ihttp -Itrainer
ifneq ($(SANITIZE),)
CFLAGS_BASE += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDSAN = -fsanitize=$(SANITIZE)
else
# Release builds drop the invariant asserts; the sanitizer builds (make
# check, make tsan) keep them.
CFLAGS_BASE += -DNDEBUG
endif
PKGS    = jansson zlib libevent libevent_pthreads
CFLAGS_PKG := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS_PKG   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -ljansson -lz -levent -levent_pthreads)
# MPI is optional at build time: without mpi.h the MPI transport compiles to
# stubs that fail with a clear error, and the MPI tests skip.
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS   := $(shell pkg-config --libs ompi-c 2>/dev/null)
override CFLAGS := $(CFLAGS_BASE) $(CFLAGS_PKG) $(MPI_CFLAGS) $(CFLAGS)
LDLIBS  = $(LDSAN) -lmetis $(LIBS_PKG) $(MPI_LIBS) -lm -pthread

PARSA_SRC = $(wildcard base/*.c) $(wildcard parsa/*.c)
SERVER_SRC = $(wildcard server/*.c)
PART_SRC  = $(filter-out partitioner/part_main.c,$(wildcard partitioner/*.c)) \
	$(wildcard http/*.c) $(wildcard trainer/*.c)
TEST_SRC  = $(wildcard tests/test_*.c)
FUZZ_SRC  = $(filter-out tests/fuzz_main.c,$(wildcard tests/fuzz_*.c))

PARSA_OBJ = $(PARSA_SRC:%.c=$(BUILD)/obj/%.o)
SERVER_OBJ = $(SERVER_SRC:%.c=$(BUILD)/obj/%.o)
PART_OBJ  = $(PART_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN  = $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
FUZZ_BIN  = $(FUZZ_SRC:tests/%.c=$(BUILD)/tests/%)

LIBPARSA  = $(BUILD)/libparsa.a
LIBPART   = $(BUILD)/libpart.a
LIBSERVER = $(BUILD)/libpsserver.a
PARSA_BIN = $(BUILD)/parsa

.PHONY: all test check tsan demo bench fuzz deps clean lint headers-check
all: $(PARSA_BIN) $(TEST_BIN) $(FUZZ_BIN)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIBPARSA): $(PARSA_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(LIBSERVER): $(SERVER_OBJ) $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard base/*.c))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(LIBPART): $(PART_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(PARSA_BIN): $(BUILD)/obj/partitioner/part_main.o $(LIBPART) $(LIBSERVER) $(LIBPARSA)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/test_%: tests/test_%.c tests/harness.h tests/testutil.h tests/testpart.h $(LIBPART) $(LIBSERVER) $(LIBPARSA)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -o $@ $< $(LIBPART) $(LIBSERVER) $(LIBPARSA) $(LDLIBS)

# Fuzz targets: built here with a standalone main() that replays a corpus.
$(BUILD)/tests/fuzz_%: tests/fuzz_%.c tests/fuzz_main.c $(LIBPART) $(LIBSERVER) $(LIBPARSA)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -o $@ $< tests/fuzz_main.c $(LIBPART) $(LIBSERVER) $(LIBPARSA) $(LDLIBS)

deps:
	@bash scripts/deps.sh

test: deps
	$(MAKE) all
	@bash scripts/run-tests.sh $(BUILD)

check: deps
	$(MAKE) all BUILD=build/asan SANITIZE=address,undefined OPT=-O1
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		bash scripts/run-tests.sh build/asan

# The parameter server's thread tests under ThreadSanitizer.
tsan: deps
	$(MAKE) build/tsan/tests/test_ps_threads build/tsan/tests/test_pool build/tsan/parsa BUILD=build/tsan SANITIZE=thread OPT=-O1
	TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_ps_threads
	TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_pool
	bash scripts/tsan-cli.sh build/tsan
	TSAN_OPTIONS=halt_on_error=1 PARSA_BIN=build/tsan/parsa python3 tests/http/test_http.py

demo: deps
	$(MAKE) $(PARSA_BIN)
	@bash scripts/demo.sh $(BUILD)

bench: deps
	$(MAKE) $(PARSA_BIN)
	@bash scripts/bench.sh $(BUILD)

fuzz: deps
	@bash scripts/fuzz.sh

lint:
	@! grep -nE '\b(sprintf|strcpy|strcat|gets|strtok|atoi|atol)\(' parsa/*.c server/*.c partitioner/*.c http/*.c trainer/*.c || \
		(echo "lint: banned function"; false)
	@! grep -nE '\b(exit|abort)\(' base/*.c parsa/*.c server/*.c || (echo "lint: exit/abort in library code"; false)

headers-check:
	@for h in base/*.h parsa/*.h server/*.h partitioner/*.h http/*.h trainer/*.h; do \
		[ -f "$$h" ] || continue; \
		echo "#include \"$$h\"" | $(CC) $(CFLAGS) -I. -x c -fsyntax-only - || exit 1; \
	done; echo "headers-check: ok"

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
