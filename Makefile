# rv: one non-recursive makefile.  `make`, `make check`, `make asan`,
# `make bench`, `make install PREFIX=... DESTDIR=...`, `make clean`.
# Library sources are taken from lib/'s folders (lib/README.md) by
# wildcard so that adding a module never touches this file; programs are
# listed explicitly.

PREFIX    ?= /usr/local
MANPREFIX ?= $(PREFIX)/share/man
# python/rvstream, the PyTorch bridge: where Debian's python3 looks for
# packages under PREFIX (/usr/local/lib/python3.11/dist-packages).
PYTHONDIR ?= $(PREFIX)/lib/python$(shell python3 -c \
    'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || \
    echo 3)/dist-packages
# ... installed by that python3's pip, offline: python/pyproject.toml's
# build backend is in the tree and needs nothing it would download.
PIP_INSTALL ?= python3 -m pip install -q --no-index --no-deps --upgrade \
    --root-user-action=ignore \
    --disable-pip-version-check
DESTDIR   ?=
CC        ?= cc
CFLAGS    ?= -O2 -g
BUILD     ?= build
SAN       ?= 0
WERROR    ?= 0

WARN = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
       -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN += -Werror
endif
ifeq ($(SAN),1)
CFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
          -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif

# The CPU training backend runs its convolutions on oneDNN, its other
# GEMMs on OpenBLAS and its loops on OpenMP: Debian's oneDNN and the
# OpenMP build of OpenBLAS share libgomp's one team of threads instead of
# pools spinning against each other on few cores.  OpenBLAS is found by
# rpath whatever the system's libopenblas alternative points to.
MULTIARCH   ?= $(shell $(CC) -print-multiarch 2>/dev/null)
OPENBLAS_DIR ?= /usr/lib/$(MULTIARCH)/openblas-openmp

OPENMP      ?= -fopenmp
ALL_CFLAGS   = -std=c17 $(WARN) $(CFLAGS) -pthread $(OPENMP)
ALL_CPPFLAGS = -D_POSIX_C_SOURCE=200809L -Ilib -MMD -MP \
	       $(ALL_CPPFLAGS_CUDA) $(CPPFLAGS)
LDFLAGS     += $(OPENMP)
LDLIBS      += -ldnnl -lturbojpeg -ljpeg -lpng -lwebpdemux -lwebp -lgif -ltiff \
	       -larchive -lzstd -llzma -lbz2 -lxxhash -lz \
	       $(BLASLIBS) -lpthread -lm
BLASLIBS    ?= -L$(OPENBLAS_DIR) -Wl,-rpath,$(OPENBLAS_DIR) -lopenblas

PROGS = \
	rv-augment \
	rv-batch \
	rv-decode \
	rv-encode \
	rv-inspect \
	rv-refurbish \
	rv-score \
	rv-train-gpu

MAN1 = $(PROGS:%=man/%.1)
MAN5 = man/rv-stream.5 man/rv-feedback.5 man/rv-index.5
MAN7 = man/rv.7 man/rv-ops.7 man/rv-cluster.7

LIBSRC  = $(sort $(wildcard lib/*/*.c))
LIBOBJ  = $(LIBSRC:%.c=$(BUILD)/%.o)

# The CUDA backend (lib/nn/*.cu): built when nvcc is found, CUDA=0 skips it.
# SASS for Ampere and Hopper, PTX for later GPUs; cuDNN 9 and cuBLAS from
# the CUDA tree.  It is a plugin, $(BUILD)/lib/rv/librv-cuda.so (installed
# in $(PREFIX)/lib/rv), the only thing that links the CUDA libraries:
# lib/nn/nn_cuda_load.c opens it from <program's dir>/../lib/rv when a
# program trains on a GPU, so no program pays for loading cuDNN, cuBLAS
# and the runtime (0.4 s of CPU) at start.  The plugin calls librv's
# rv_* functions in the program (one copy, one error buffer): programs
# and unit tests export them, only them, to the dynamic symbol table
# (--export-dynamic-symbol, not -rdynamic's every global symbol).
NVCC      ?= $(firstword $(wildcard /usr/local/cuda/bin/nvcc) \
	     $(shell command -v nvcc 2>/dev/null))
CUDA      ?= $(if $(NVCC),1,0)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 \
	     -gencode arch=compute_90,code=[sm_90,compute_90]
NVCCFLAGS ?= -O2 -g
NVWARN     = -Xcompiler -Wall,-Wextra,-Wno-unused-parameter
ifeq ($(WERROR),1)
NVWARN    += -Werror all-warnings -Xcompiler -Werror
endif
PLUGIN_NAME = librv-cuda.so
PLUGINDIR   = $(BUILD)/lib/rv
EXPORT_RV   = -Wl,--export-dynamic-symbol='rv_*'
ifeq ($(CUDA),1)
CUSRC   = $(sort $(wildcard lib/*/*.cu))
CUOBJ   = $(CUSRC:%.cu=$(BUILD)/%.o)
PLUGIN  = $(PLUGINDIR)/$(PLUGIN_NAME)
ALL_CPPFLAGS_CUDA = -DRV_HAVE_CUDA
CUDALIBS = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 \
	   -lcudnn -lcublas -lcudart -lstdc++
endif
LIB     = $(BUILD)/librv.a
BINDIR  = $(BUILD)/bin
BINS    = $(PROGS:%=$(BINDIR)/%)
UNITSRC = $(sort $(wildcard tests/unit/t_*.c))
UNITS   = $(UNITSRC:tests/unit/%.c=$(BUILD)/unit/%)
FIXTURES = tests/fixtures/.done

.PHONY: all check unit units bats asan test bench lint install uninstall \
	clean fmt deps demo fixtures fuzz

all: $(BINS) $(PLUGIN)

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) -std=c++17 $(NVCCFLAGS) $(CUDA_ARCH) $(NVWARN) -Ilib \
	    -Xcompiler -fPIC -DRV_HAVE_CUDA -MMD -MP -c -o $@ $<

# Not instrumented under SAN=1 (nvcc's objects are not): an ASan program
# loads it as it loads any other library.  rv_* stay undefined, for the
# program to provide.
$(PLUGIN): $(CUOBJ)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,$(PLUGIN_NAME) -o $@ $(CUOBJ) $(CUDALIBS)

# The loader and t_nn_cuda know whether the backend is built
# (RV_HAVE_CUDA): switching CUDA in a build tree rebuilds them.
$(BUILD)/lib/nn/nn_cuda_load.o $(BUILD)/tests/unit/t_nn_cuda.o: \
    $(BUILD)/.cuda-$(CUDA)
$(BUILD)/.cuda-$(CUDA):
	@mkdir -p $(@D)
	@rm -f $(BUILD)/.cuda-*
	@touch $@

$(LIB): $(LIBOBJ)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $(LIBOBJ)

$(BINDIR)/%: $(BUILD)/cmd/%.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $(EXPORT_RV) -pthread -o $@ $< $(LIB) $(LDLIBS)

$(BUILD)/unit/%: $(BUILD)/tests/unit/%.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $(EXPORT_RV) -pthread -o $@ $< $(LIB) $(LDLIBS)

# t_nn_cuda calls the plugin's host entry points (nn_cuda_host.h): it
# links the plugin, found by rpath as rv-train-gpu finds it by path.
ifeq ($(CUDA),1)
$(BUILD)/unit/t_nn_cuda: $(PLUGIN)
$(BUILD)/unit/t_nn_cuda: private LDLIBS += -L$(PLUGINDIR) \
	-Wl,-rpath,'$$ORIGIN/../lib/rv' -lrv-cuda
endif

$(BUILD)/tests/unit/%.o: ALL_CPPFLAGS += -Itests/unit

# tests/run: the unit tests and the bats files as parallel jobs (RV_JOBS,
# the cores and one more), TAP per job, the 15 slowest tests, then one
# closing line "N passed, N failed".
# check: the quick loop for developing: this build, every unit test once,
# the bats tests not marked slow; a few minutes.
check: all $(UNITS) $(FIXTURES)
	@RV_BUILD=$(BUILD) bash tests/run quick

units: $(UNITS)

unit: $(UNITS) $(FIXTURES)
	@RV_BUILD=$(BUILD) bash tests/run unit

bats: all $(FIXTURES)
	@RV_BUILD=$(BUILD) bash tests/run bats

# The whole suite under AddressSanitizer + UBSan, in its own build tree.
asan:
	$(MAKE) BUILD=build-asan SAN=1 all units fixtures
	@RV_BUILD=build-asan bash tests/run

# Everything a fresh machine needs: dependencies, both builds, every
# test at least once under AddressSanitizer + UBSan: the whole suite on
# build-asan, and on the plain build every unit test and the bats tests
# not marked slow (with those that run on the plain build only); the
# unit tests that call OpenBLAS under the environment's setting, with
# OPENBLAS_CORETYPE=Haswell and with it unset, on both; one closing line
# "N passed, N failed".
test: deps
	$(MAKE) WERROR=$(WERROR) all units
	$(MAKE) BUILD=build-asan SAN=1 WERROR=$(WERROR) all units
	$(MAKE) fixtures
	@RV_BUILDS="build:quick build-asan" \
	    RV_BLAS_ENVS="as-is haswell unset" bash tests/run

bench: all
	@RV_BUILD=$(BUILD) bash bench/run

# libFuzzer harnesses (fuzz/README.md): FUZZ_SECONDS per target.
fuzz:
	bash fuzz/run.sh

lint:
	mandoc -T lint -W warning $(MAN1) $(MAN5) $(MAN7)
	shellcheck -x pipelines/*.sh pipelines/*.sbatch scripts/*.sh scripts/rv-plot bench/*.sh bench/*.bash bench/run \
	    fuzz/*.sh tests/bats/*.bash tests/setup/*.sh tests/gpu/*.sh tests/run .ci/run

fmt:
	clang-format -i lib/*/*.c lib/*/*.h cmd/*.c tests/unit/*.c

deps:
	bash scripts/deps.sh

# The main job: set up, build, run pipelines/refurbish-shrink.sh (see
# README; OUT, EPOCHS, TARGET, LIMIT from the environment).
demo: deps
	$(MAKE) all
	bash pipelines/refurbish-shrink.sh

# Test fixtures (images of every flavour, broken ones, datasets), made once.
fixtures: $(FIXTURES)
$(FIXTURES): tests/setup/make-fixtures.sh tests/setup/fixtures-images.sh \
    tests/setup/fixtures-datasets.sh
	bash tests/setup/make-fixtures.sh tests/fixtures

install: all
	mkdir -p $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANPREFIX)/man1 \
	    $(DESTDIR)$(MANPREFIX)/man5 $(DESTDIR)$(MANPREFIX)/man7
	cp -f $(BINS) $(DESTDIR)$(PREFIX)/bin/
	cp -f scripts/rv-plot $(DESTDIR)$(PREFIX)/bin/
	cp -f $(MAN1) $(DESTDIR)$(MANPREFIX)/man1/
	cp -f $(MAN5) $(DESTDIR)$(MANPREFIX)/man5/
	cp -f $(MAN7) $(DESTDIR)$(MANPREFIX)/man7/
	$(PIP_INSTALL) --target $(DESTDIR)$(PYTHONDIR) ./python
# The plugin where the installed rv-train-gpu looks (../lib/rv);
# install(1) replaces it rather than rewrite a file a process has mapped.
ifeq ($(CUDA),1)
	mkdir -p $(DESTDIR)$(PREFIX)/lib/rv
	install -m 644 $(PLUGIN) $(DESTDIR)$(PREFIX)/lib/rv/
endif

uninstall:
	rm -f $(PROGS:%=$(DESTDIR)$(PREFIX)/bin/%) $(DESTDIR)$(PREFIX)/bin/rv-plot \
	    $(MAN1:man/%=$(DESTDIR)$(MANPREFIX)/man1/%) \
	    $(MAN5:man/%=$(DESTDIR)$(MANPREFIX)/man5/%) \
	    $(MAN7:man/%=$(DESTDIR)$(MANPREFIX)/man7/%) \
	    $(DESTDIR)$(PREFIX)/lib/rv/$(PLUGIN_NAME)
	rm -rf $(DESTDIR)$(PYTHONDIR)/rvstream \
	    $(DESTDIR)$(PYTHONDIR)/rvstream-*.dist-info

clean:
	rm -rf build build-asan tests/fixtures

.SECONDARY:
-include $(LIBOBJ:.o=.d) $(CUOBJ:.o=.d) $(PROGS:%=$(BUILD)/cmd/%.d) \
	$(UNITSRC:%.c=$(BUILD)/%.d)
