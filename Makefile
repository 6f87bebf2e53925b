# Thin wrapper around CMake: dependencies, configure, build, demo, test.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
WERROR     ?= ON
CMAKE_ARGS ?=
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 3

.PHONY: all deps configure build demo test test-plain test-asan fuzz fuzz-smoke install bench clean

all: build

deps:
	@bash tools/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOM_WERROR=$(WERROR) $(CMAKE_ARGS)

configure: $(BUILD)/CMakeCache.txt

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

# A quiet build, then PipeWeaver against the strongest Megatron baseline on a
# VLM preset in one table; reports in demo-out/ (tools/demo.sh).
demo: deps
	@BUILD=$(BUILD) JOBS=$(JOBS) WERROR=$(WERROR) CMAKE_ARGS="$(CMAKE_ARGS)" bash tools/demo.sh

test: test-plain test-asan fuzz-smoke

test-plain: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DLOOM_SANITIZE=ON -DLOOM_WERROR=$(WERROR) $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

# libFuzzer harnesses (clang): FUZZ_SECONDS per harness, then a table of
# executions and seconds; fails on any crash (tools/fuzz.sh).
fuzz: deps
	FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) bash tools/fuzz.sh

# A few seconds per harness plus every regression input (part of `make test`).
fuzz-smoke: deps
	FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS) bash tools/fuzz.sh

install: build
	cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX),)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
