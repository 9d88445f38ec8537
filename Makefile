# Thin wrapper over CMake (the build of record). `make help` lists the targets.
# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all configure build test bench verify asan fuzz install clean help python-test

all: build

configure:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Builds everything and runs the test suite (GPU tests skip without a GPU).
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The main job: the benchmark over every model preset (CUDA when a GPU is there, else CPU).
bench: build
	$(BUILD)/tools/moeroute bench

verify: build
	$(BUILD)/tools/moeroute verify

# AddressSanitizer + UBSan build of the C library and the CPU tests.
asan:
	cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=Debug -DMOEROUTE_CUDA=OFF -DMOEROUTE_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD)-asan -j $(JOBS)
	ctest --test-dir $(BUILD)-asan --output-on-failure -j $(JOBS)

# libFuzzer harness (clang): see tests/fuzz/README.md.
fuzz:
	CC=clang cmake -S . -B $(BUILD)-fuzz -DCMAKE_BUILD_TYPE=Debug -DMOEROUTE_CUDA=OFF -DMOEROUTE_FUZZ=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD)-fuzz -j $(JOBS) --target fuzz_route

install: build
	cmake --install $(BUILD)

python-test:
	python3 -m pip install ./python pytest numpy
	python3 -m pytest python/tests -q

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-fuzz

help:
	@echo "make [build|test|bench|verify|asan|fuzz|install|python-test|clean]  (BUILD=dir CMAKE_FLAGS=...)"
