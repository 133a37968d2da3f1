# parsa — top-level build.  See README.md.
#
#   make          build everything into build/
#   make test     layers-check, then unit, reader, corpus, CLI, HTTP and
#                 trainer tests; the last line is "N passed, N failed"
#   make check    the same tests under ASan+UBSan (build/asan)
#   make tsan     the parameter server's, the thread pool's and the parallel
#                 reader's tests, threaded parsa runs and the HTTP service's
#                 tests under TSan (build/tsan)
#   make demo     partition the bundled samples in data/ and print the reports
#   make bench    benchmarks on ../shared/data (long; writes bench/results)
#   make fuzz     libFuzzer targets with clang (bounded run per target)
#   make chaos    kill -9 / full-disk chaos and load on the HTTP service
#   make deps     install the Debian packages the build needs (root or sudo)

CC      ?= gcc
BUILD   ?= build
OPT     ?= -O2
SANITIZE ?=
VERSION  = 0.1.0
CFLAGS_BASE = -std=c11 $(OPT) -g -Wall -Wextra -Wmissing-prototypes \
	-Wno-missing-field-initializers -D_GNU_SOURCE -pthread
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
# MPI is optional at build time and loaded only when used: the transport
# (server/ps_mpi_plugin.c) is built into its own plugin, $(BUILD)/parsa-mpi.so,
# the one object linked with OpenMPI, which the program and libparsa.so open
# (dlopen) on the first MPI call (server/ps_transport_mpi.h).  Without the
# ompi-c module no plugin is built: --mpi fails with a clear error and the
# MPI tests skip.
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS   := $(shell pkg-config --libs ompi-c 2>/dev/null)
override CFLAGS := $(CFLAGS_BASE) $(CFLAGS_PKG) $(CFLAGS)
LDLIBS  = $(LDSAN) -lmetis $(LIBS_PKG) -lm -pthread

# ---- layers ---------------------------------------------------------------
# The folders are layers, bottom up.  USES_<layer> lists the layers whose
# headers its files may include besides its own: the one statement of the
# allowed arrows.  Each layer compiles with -I of exactly those folders (a
# wrong-way include does not compile) and becomes one library, linked only
# with the libraries of the layers it uses; `make layers-check`
# (scripts/layers-check.py) reads this table and checks every include line
# and every library's undefined symbols against it.
LAYERS = base parsa server partitioner api http trainer app
USES_base        =
USES_parsa       = base
USES_server      = base
USES_partitioner = base parsa server
USES_api         = base parsa server partitioner
USES_http        = base parsa server partitioner
USES_trainer     = base parsa server partitioner
USES_app         = base parsa server partitioner api http trainer
LIB_base         = $(BUILD)/libbase.a
LIB_parsa        = $(BUILD)/libparsa_core.a
LIB_server       = $(BUILD)/libpsserver.a
LIB_partitioner  = $(BUILD)/libpart.a
LIB_api          = $(BUILD)/libapi.a
LIB_http         = $(BUILD)/libhttp.a
LIB_trainer      = $(BUILD)/libtrainer.a
layer_inc = $(foreach l,$(1) $(USES_$(1)),-I$(l)) $(INC_$(1))
# the C API's public header (include/parsa.h) for the api layer
INC_api          = -Iinclude
reverse = $(if $(1),$(call reverse,$(wordlist 2,$(words $(1)),$(1))) $(firstword $(1)))
# The layers that are libraries, and every library top down (link order).
LIB_LAYERS = $(foreach l,$(LAYERS),$(if $(LIB_$(l)),$(l)))
ALL_LIBS = $(foreach l,$(call reverse,$(LIB_LAYERS)),$(LIB_$(l)))
ALL_INC  = $(foreach l,$(LAYERS),-I$(l)) -Iinclude

# the MPI plugin's source is not part of the server layer's library
MPI_PLUGIN_SRC = server/ps_mpi_plugin.c
$(foreach l,$(LAYERS),$(eval $(l)_OBJ = $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out $(MPI_PLUGIN_SRC),$(wildcard $(l)/*.c)))))
$(foreach l,$(LAYERS),$(eval $(BUILD)/obj/$(l)/%.o: LAYER_INC := $(call layer_inc,$(l))))
$(foreach l,$(LIB_LAYERS),$(eval $(LIB_$(l)): $($(l)_OBJ)))

TEST_SRC  = $(wildcard tests/test_*.c)
FUZZ_SRC  = $(filter-out tests/fuzz_main.c,$(wildcard tests/fuzz_*.c))
TEST_BIN  = $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
FUZZ_BIN  = $(FUZZ_SRC:tests/%.c=$(BUILD)/tests/%)

# The web page (http/ui/), built into libhttp as const arrays (http_ui.h).
UI_FILES  = $(wildcard http/ui/*)
UI_GEN    = $(BUILD)/gen/http_ui_assets.c
UI_OBJ    = $(BUILD)/obj/gen/http_ui_assets.o
PARSA_BIN = $(BUILD)/parsa

# ---- the installed C library (include/parsa.h; README "C library") ------
# libparsa.so from a separate PIC object set compiled with hidden
# visibility (only the PSA_API functions of api/ are exported), libparsa.a
# from the ordinary objects; both hold the layers the API needs.
SO_LAYERS = base parsa server partitioner api
SO_MAJOR  = 0
SO_NAME   = libparsa.so.$(SO_MAJOR)
SO        = $(BUILD)/libparsa.so.$(VERSION)
STATIC    = $(BUILD)/libparsa.a
SO_LIBS_PKG := $(shell pkg-config --libs jansson zlib 2>/dev/null || echo -ljansson -lz)
SO_LDLIBS = $(LDSAN) -lmetis $(SO_LIBS_PKG) -lm -pthread
PIC_OBJ   = $(foreach l,$(SO_LAYERS),$(patsubst %.c,$(BUILD)/pic/obj/%.o,$(filter-out $(MPI_PLUGIN_SRC),$(wildcard $(l)/*.c))))
$(foreach l,$(SO_LAYERS),$(eval $(BUILD)/pic/obj/$(l)/%.o: LAYER_INC := $(call layer_inc,$(l))))
MAN_STAMP = $(BUILD)/man/.stamp
PREFIX  ?= /usr/local
DESTDIR ?=
MANDIR  ?= $(PREFIX)/share/man
MAN_CMDS = partition eval gen serve train
D = $(DESTDIR)$(PREFIX)
.PHONY: install uninstall python

$(BUILD)/pic/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden $(LAYER_INC) $(XDEFS) -MMD -MP -c $< -o $@

# The MPI plugin: the transport and, hidden inside, its own copies of the
# base and server functions it calls (from a PIC archive of those layers);
# it exports only ps_mpi_plugin_v1 (server/ps_mpi_plugin.h).
MPI_PLUGIN     = $(if $(MPI_LIBS),$(BUILD)/parsa-mpi.so)
MPI_PLUGIN_OBJ = $(BUILD)/pic/obj/server/ps_mpi_plugin.o
MPI_PLUGIN_DEP = $(BUILD)/pic/libpsserver_pic.a
$(MPI_PLUGIN_OBJ): XDEFS = $(MPI_CFLAGS)
$(MPI_PLUGIN_DEP): $(filter $(BUILD)/pic/obj/base/% $(BUILD)/pic/obj/server/%,$(PIC_OBJ))
	rm -f $@ && ar rcs $@ $^
$(BUILD)/parsa-mpi.so: $(MPI_PLUGIN_OBJ) $(MPI_PLUGIN_DEP)
	$(CC) $(CFLAGS) -shared $(if $(SANITIZE),,-Wl,--no-undefined) -o $@ $^ \
		$(LDSAN) $(MPI_LIBS) -lm -pthread

$(SO): $(PIC_OBJ)
	$(CC) $(CFLAGS) -shared -Wl,-soname,$(SO_NAME) -Wl,--no-undefined -o $@ $^ $(SO_LDLIBS)
	ln -sf libparsa.so.$(VERSION) $(BUILD)/$(SO_NAME)
	ln -sf libparsa.so.$(VERSION) $(BUILD)/libparsa.so

$(STATIC): $(foreach l,$(SO_LAYERS),$($(l)_OBJ))
	rm -f $@ && ar rcs $@ $^

# man pages from the --help texts (scripts/man-pages.py)
$(MAN_STAMP): $(PARSA_BIN) scripts/man-pages.py
	python3 scripts/man-pages.py $(PARSA_BIN) $(dir $@) $(VERSION) $(MAN_CMDS)
	@touch $@

install: $(PARSA_BIN) $(SO) $(STATIC) $(MAN_STAMP) $(MPI_PLUGIN)
	install -d $(D)/bin $(D)/lib/pkgconfig $(D)/include $(DESTDIR)$(MANDIR)/man1
	install -m 755 $(PARSA_BIN) $(D)/bin/parsa
	install -m 755 $(SO) $(D)/lib/libparsa.so.$(VERSION)
	ln -sf libparsa.so.$(VERSION) $(D)/lib/$(SO_NAME)
	ln -sf $(SO_NAME) $(D)/lib/libparsa.so
	install -m 644 $(STATIC) $(D)/lib/libparsa.a
	$(if $(MPI_PLUGIN),install -d $(D)/lib/parsa && install -m 755 $(MPI_PLUGIN) $(D)/lib/parsa/parsa-mpi.so)
	install -m 644 include/parsa.h $(D)/include/parsa.h
	install -m 644 $(BUILD)/man/parsa.1 $(MAN_CMDS:%=$(BUILD)/man/parsa-%.1) $(DESTDIR)$(MANDIR)/man1/
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include' '' \
		'Name: parsa' 'Description: Parsa graph partitioning for parameter servers (C API)' \
		'Version: $(VERSION)' 'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -lparsa' \
		'Requires.private: jansson zlib' \
		'Libs.private: -lmetis -lm -pthread' > $(D)/lib/pkgconfig/parsa.pc

# The Python package in place (python/parsa beside its library): then
# `PYTHONPATH=python python3 -c "import parsa"` or `pip install ./python`.
python: $(SO)
	cp $(SO) python/parsa/libparsa.so.0

# Removes what install put there, then the folders it made if empty.
uninstall:
	rm -f $(D)/bin/parsa $(D)/lib/libparsa.so.$(VERSION) $(D)/lib/$(SO_NAME) \
		$(D)/lib/libparsa.so $(D)/lib/libparsa.a $(D)/lib/parsa/parsa-mpi.so $(D)/include/parsa.h \
		$(D)/lib/pkgconfig/parsa.pc $(DESTDIR)$(MANDIR)/man1/parsa.1 \
		$(MAN_CMDS:%=$(DESTDIR)$(MANDIR)/man1/parsa-%.1)
	-rmdir $(D)/bin $(D)/lib/pkgconfig $(D)/lib/parsa $(D)/lib $(D)/include \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR) 2>/dev/null; \
	rmdir $(DESTDIR)$(PREFIX)/share 2>/dev/null; true

# plain `make` builds everything (the per-layer library rules come first)
.DEFAULT_GOAL := all

.PHONY: all libs test check tsan demo bench bench-hosts bench-scale chaos screenshots fuzz deps clean lint headers-check layers-check
all: $(PARSA_BIN) $(TEST_BIN) $(FUZZ_BIN) $(MPI_PLUGIN) $(if $(SANITIZE),,$(SO) $(STATIC) $(MAN_STAMP))
libs: $(ALL_LIBS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LAYER_INC) $(XDEFS) -MMD -MP -c $< -o $@

$(BUILD)/obj/app/%.o: XDEFS = -DPARSA_VERSION='"$(VERSION)"'

$(ALL_LIBS):
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# (the plugin comes with the program: --mpi finds it beside it)
$(PARSA_BIN): $(app_OBJ) $(ALL_LIBS) | $(MPI_PLUGIN)
	$(CC) $(CFLAGS) -o $@ $(app_OBJ) $(ALL_LIBS) $(LDLIBS)

$(LIB_http): $(UI_OBJ)
$(UI_GEN): $(UI_FILES) scripts/embed-ui.py
	@mkdir -p $(dir $@)
	python3 scripts/embed-ui.py $@ $(UI_FILES)
$(UI_OBJ): $(UI_GEN) http/http_ui.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ihttp -c $< -o $@

$(BUILD)/tests/test_%: tests/test_%.c tests/harness.h tests/testutil.h tests/testpart.h $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ALL_INC) -Itests $(TEST_DEFS) -o $@ $< $(ALL_LIBS) $(LDLIBS) $(TEST_LDFLAGS)

# (a build with the plugin fails, rather than skips, when it cannot load it)
$(BUILD)/tests/test_ps_mpi: | $(MPI_PLUGIN)
$(BUILD)/tests/test_ps_mpi: TEST_DEFS = $(if $(MPI_PLUGIN),-DPS_EXPECT_MPI_PLUGIN)

# test_allocfail fails each allocation of the libraries in turn: their
# malloc, calloc, realloc and free calls go through its wrappers.
$(BUILD)/tests/test_allocfail: TEST_LDFLAGS = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free

# The reader's own speed (BENCHMARKS.md "Reading"): not part of make all.
$(BUILD)/bench/read_bench: bench/read_bench.c $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ALL_INC) -o $@ $< $(ALL_LIBS) $(LDLIBS)

# What a second thread gives on this machine now (bench/machine.c), printed
# by make bench-scale beside the thread floors.
$(BUILD)/bench/machine: bench/machine.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -pthread

# Fuzz targets: built here with a standalone main() that replays a corpus.
$(BUILD)/tests/fuzz_%: tests/fuzz_%.c tests/fuzz_main.c $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ALL_INC) -Itests -o $@ $< tests/fuzz_main.c $(ALL_LIBS) $(LDLIBS)

# Include lines and library symbols against the USES_ table above.
layers-check: $(ALL_LIBS)
	@python3 scripts/layers-check.py . $(BUILD)

deps:
	@bash scripts/deps.sh

test: deps
	$(MAKE) all
	@python3 scripts/layers-check.py . $(BUILD)
	@$(MAKE) --no-print-directory lint
	@bash scripts/run-tests.sh $(BUILD)

# The readers' tests and every fuzz corpus again under clang's UBSan: it
# checks what gcc's does not (an offset applied to a null pointer, which
# the parallel reader did with a dataset's first chunk without nonzeros).
UBC_PROGS = test_preader test_reader test_cache fuzz_libsvm fuzz_snap fuzz_pairs \
	fuzz_pcsr fuzz_placement fuzz_psmsg fuzz_http

check: deps
	$(MAKE) all BUILD=build/asan SANITIZE=address,undefined OPT=-O1
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		bash scripts/run-tests.sh build/asan
	$(MAKE) $(addprefix build/ubc/tests/,$(UBC_PROGS)) BUILD=build/ubc CC=clang \
		SANITIZE=undefined OPT=-O1
	@UBSAN_OPTIONS=print_stacktrace=1 bash scripts/run-tests.sh build/ubc $(UBC_PROGS)

# The parameter server's thread tests under ThreadSanitizer.
tsan: deps
	$(MAKE) build/tsan/tests/test_ps_threads build/tsan/tests/test_ps_consist build/tsan/tests/test_pool build/tsan/tests/test_fm build/tsan/tests/test_preader build/tsan/tests/test_lanes build/tsan/tests/test_levels build/tsan/tests/test_partv build/tsan/tests/test_pcount build/tsan/tests/test_placement build/tsan/parsa BUILD=build/tsan SANITIZE=thread OPT=-O1
	TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_ps_threads
	TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_ps_consist
	TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_pool
	TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_fm
	TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_preader
	TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_lanes
	TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_levels
	TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_partv
	TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_pcount
	TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_placement
	bash scripts/tsan-cli.sh build/tsan
	TSAN_OPTIONS=halt_on_error=1 PARSA_BIN=build/tsan/parsa python3 tests/http/test_http.py
	TSAN_OPTIONS=halt_on_error=1 PARSA_BIN=build/tsan/parsa python3 tests/http/test_events.py

# The README's screenshots of the web page (needs ../shared/data, chromium).
screenshots: deps
	$(MAKE) $(PARSA_BIN)
	python3 scripts/ui-screenshots.py $(BUILD)

demo: deps
	$(MAKE) $(PARSA_BIN)
	@bash scripts/demo.sh $(BUILD)

bench: deps
	$(MAKE) $(PARSA_BIN)
	@bash scripts/bench.sh $(BUILD)

# Training across emulated hosts (network namespaces, root; long): set
# BENCH_QUIET to a lock prefix for the timed groups (scripts/bench-hosts.sh)
bench-hosts: deps
	$(MAKE) $(PARSA_BIN)
	@bash scripts/bench-hosts.sh $(BUILD)

# Scale (issue 17): 10M and 100M nonzeros (BENCH_SCALE_ARGS="--sizes
# 10M,100M,1B" for a billion: ~10 GB of text in $PARSA_BENCH_TMP), the
# large shared sets, streaming and MPI over emulated hosts, beside METIS.
bench-scale: deps
	$(MAKE) $(PARSA_BIN) $(BUILD)/bench/machine
	@mkdir -p bench/results
	python3 bench/scale.py $(BUILD) $(BENCH_SCALE_ARGS) | tee bench/results/scale-$$(date +%Y%m%d-%H%M%S).md

# Chaos and load on the HTTP service (issue 19; BENCHMARKS.md "HTTP
# service"): 200 kill -9 of parsa serve with restarts and checks, then a
# full disk (a tmpfs it mounts: root), then wrk lookups during a best job
# on gowalla and /healthz with 2,000 idle + 200 slowloris connections.
# CHAOS_ARGS / LOAD_ARGS pass options (e.g. CHAOS_ARGS="--kills 50").
chaos: deps
	$(MAKE) $(PARSA_BIN)
	@mkdir -p bench/results
	@t=$$(date +%Y%m%d-%H%M%S); \
	python3 bench/chaos.py $(BUILD) $(CHAOS_ARGS) > bench/results/chaos-$$t.md; c=$$?; \
	cat bench/results/chaos-$$t.md; \
	python3 bench/load.py $(BUILD) $(LOAD_ARGS) > bench/results/load-$$t.md; l=$$?; \
	cat bench/results/load-$$t.md; \
	[ $$c -eq 0 ] && [ $$l -eq 0 ]

fuzz: deps
	@bash scripts/fuzz.sh

lint:
	@! grep -nE '\b(sprintf|strcpy|strcat|gets|strtok|atoi|atol)\(' $(foreach l,$(LAYERS),$(l)/*.c) || \
		(echo "lint: banned function"; false)
	@! grep -nE '\b(exit|abort)\(' base/*.c parsa/*.c server/*.c || (echo "lint: exit/abort in library code"; false)
	@! grep -sn '__builtin_prefetch' $(foreach l,$(LAYERS),$(l)/*.c $(l)/*.h) | grep -v '^base/base_prefetch.h' || \
		(echo "lint: __builtin_prefetch outside base_prefetch.h (GCC may delete it)"; false)

# Each header compiles alone, with its own layer's include path.
headers-check:
	@$(foreach l,$(LAYERS),for h in $(l)/*.h; do [ -f "$$h" ] || continue; \
		echo "#include \"$$h\"" | $(CC) $(CFLAGS) -I. $(call layer_inc,$(l)) \
		-x c -fsyntax-only - || exit 1; done;) echo "headers-check: ok"

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj $(BUILD)/pic -name '*.d' 2>/dev/null)
