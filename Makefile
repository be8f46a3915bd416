# kgate: `make run` builds and runs the bundled suite; `make test` builds and
# runs every test (GPU tests skip where there is no GPU); `make install
# PREFIX=DIR` installs kgate under DIR (README.md, "Install").
BUILD ?= build
PREFIX ?= /usr/local
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc
JOBS ?= $(shell nproc)
# The GPUs the CUDA code is built for (CMake's CUDA_ARCHITECTURES form; the
# default, in CMakeLists.txt, is A100 to B200 as one fat binary).
# `make build KG_CUDA_ARCHS=90a-real` builds an H100/H200's alone, in about
# half the time; the list stays in $(BUILD) until given again.
ifdef KG_CUDA_ARCHS
CMAKE_FLAGS += -DKG_CUDA_ARCHS="$(KG_CUDA_ARCHS)"
endif

# the build's own make runs quiet about the directories it enters
export MAKEFLAGS += --no-print-directory

SAN_BUILD ?= build-san
# the sanitizer build runs CPU tests alone: one arch is enough for its CUDA
SAN_ARCHS ?= 90a-real
FUZZ_SECONDS ?= 20
SAN_ENV = ASAN_OPTIONS=detect_leaks=1:protect_shadow_gap=0:abort_on_error=1 \
          UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp

.PHONY: all deps deps-test build install run test test-cpu test-gpu test-sanitize sass triton tilelang-gen clean

all: build

deps:
	@scripts/deps.sh run

deps-test:
	@scripts/deps.sh test

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

run: build
	$(BUILD)/kgate run --json $(BUILD)/run.json

test: deps-test build
	cd $(BUILD) && ctest --output-on-failure -j 2
	@$(MAKE) --no-print-directory test-sanitize

# The host code under AddressSanitizer and UBSan (clang): the CPU tests, then
# every fuzz target for FUZZ_SECONDS on a copy of its corpus.
test-sanitize: deps-test
	@cmake -S . -B $(SAN_BUILD) $(CMAKE_FLAGS) -DCMAKE_C_COMPILER=clang -DKG_SANITIZE=ON -DKG_FUZZ=ON \
	    -DKG_CUDA_ARCHS="$(SAN_ARCHS)" >/dev/null
	@cmake --build $(SAN_BUILD) -j $(JOBS)
	cd $(SAN_BUILD) && $(SAN_ENV) ctest --output-on-failure -j 2 -L cpu
	@for f in options shape event report ncu_csv trace; do \
	    d=$$(mktemp -d); cp tests/fuzz/$$f/* $$d/; \
	    echo "fuzz_$$f: $(FUZZ_SECONDS) s"; \
	    $(SAN_ENV) $(SAN_BUILD)/tests/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	        -artifact_prefix=$(SAN_BUILD)/fuzz_$$f- \
	        -print_final_stats=1 $$d >$(SAN_BUILD)/fuzz_$$f.log 2>&1 \
	        || { tail -40 $(SAN_BUILD)/fuzz_$$f.log; rm -rf $$d; exit 1; }; \
	    grep -E "stat::number_of_executed_units" $(SAN_BUILD)/fuzz_$$f.log; rm -rf $$d; \
	done

test-cpu: deps-test build
	cd $(BUILD) && ctest --output-on-failure -L cpu

test-gpu: deps-test build
	cd $(BUILD) && ctest --output-on-failure -L gpu

sass: build
	cmake --build $(BUILD) --target sass

# Triton kernels through kgate's ABI: needs a Python with Triton 3.6
# (TRITON_PY=... or python3 on PATH) and cuda.h; no GPU (docs/triton.md).
triton: build
	triton/build.sh $(BUILD)

# Regenerates tilelang/gen/ (committed; the build only compiles it): needs a
# Python with tilelang==0.1.15 (TILELANG_PY=...), no GPU (docs/tilelang.md).
TILELANG_PY ?= python3
tilelang-gen:
	$(TILELANG_PY) tilelang/gen.py

clean:
	rm -rf $(BUILD)
