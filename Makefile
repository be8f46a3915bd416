# kgate: `make run` builds and runs the bundled suite; `make test` builds and
# runs every test (GPU tests skip where there is no GPU).
BUILD ?= build
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc
JOBS ?= $(shell nproc)

.PHONY: all deps build run test test-cpu test-gpu sass triton clean

all: build

deps:
	@scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/kgate run --json $(BUILD)/run.json

test: build
	cd $(BUILD) && ctest --output-on-failure -j 2

test-cpu: build
	cd $(BUILD) && ctest --output-on-failure -L cpu

test-gpu: build
	cd $(BUILD) && ctest --output-on-failure -L gpu

sass: build
	cmake --build $(BUILD) --target sass

# Triton kernels through kgate's ABI: needs a Python with Triton 3.6
# (TRITON_PY=... or python3 on PATH) and cuda.h; no GPU (docs/triton.md).
triton: build
	triton/build.sh $(BUILD)

clean:
	rm -rf $(BUILD)
