# Quick start: `make demo` (record a demo workload, show what it found) and `make test`; both
# install what is missing first (`make deps`). `make build` only builds.
BUILD ?= build
JOBS  ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build demo test unit asan tsan fuzz bench install clean asan-build tsan-build fuzz-build

all: build

deps:
	@scripts/install-deps.sh

build:
	@cmake -S . -B $(BUILD) -DD9_WERROR=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

demo: deps
	@$(MAKE) --no-print-directory build
	@scripts/demo-uv.sh $(BUILD)

# The whole suite: unit + integration tests, then ASan+UBSan, TSan on the concurrent tests,
# a short fuzzing run and the benchmark in short mode.
test: deps
	@scripts/run-tests.sh

unit: build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# asan-build, tsan-build, fuzz-build: the builds alone (scripts/run-tests.sh runs them beside the
# plain tests, at low priority); asan, tsan, fuzz build (a no-op when done) and run.
asan-build: deps
	@# no benchmarks: their tests are nosan, so no test here runs a program of bench/
	@cmake -S . -B build-asan -DD9_WERROR=ON -DD9_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug -DD9_BENCHMARKS=OFF >/dev/null
	@cmake --build build-asan -j$(JOBS)

asan: asan-build
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j$(JOBS) -LE nosan

tsan-build: deps
	@cmake -S . -B build-tsan -DD9_WERROR=ON -DD9_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@# only what the concurrent tests run (scripts/test-targets.sh), not the whole tree again
	@scripts/test-targets.sh --build $(JOBS) build-tsan -L concurrent

tsan: tsan-build
	@# history_size=7: a longer per-thread history, so a report names both stacks; with the default
	@# (gcc 12's libtsan), ~1 run in 80 of test_mt_uv_adapter reported a hook's ring write against a
	@# collector read whose stack was gone ("failed to restore the stack"), 0 in 580 with it
	@cd build-tsan && TSAN_OPTIONS="halt_on_error=1 history_size=7" ctest --output-on-failure -j$(JOBS) -L concurrent

fuzz-build: deps
	@cmake -S . -B build-fuzz -DD9_FUZZ=ON -DD9_SANITIZE=address,undefined -DCMAKE_C_COMPILER=clang -DBUILD_TESTING=OFF >/dev/null
	@# the fuzz targets only: the rest of the tree under clang's ASan is never run here
	@# those the configuration made (fuzz-targets.txt: fuzz_serve_request only with libmicrohttpd)
	@scripts/build-targets.sh build-fuzz $(JOBS) $$(cat build-fuzz/fuzz-targets.txt)

fuzz: fuzz-build
	@scripts/fuzz.sh build-fuzz $${FUZZ_SECONDS:-30}

bench: build
	@$(BUILD)/bench/d9_bench

install: build
	@cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX))

clean:
	rm -rf build build-asan build-tsan build-fuzz
