# pipeopt: `make demo` / `make test` are shortcuts for ./dev.sh demo / test
# (the README's two commands; dev.sh needs only bash, so it also works on a
# machine without make).
#
# BUILD_DIR and JOBS can be overridden: make test BUILD_DIR=build-rel JOBS=4

export BUILD_DIR ?= build
export JOBS ?= $(shell nproc)

.PHONY: all build demo test clean

all: build

build:
	./dev.sh build

demo:
	./dev.sh demo

test:
	./dev.sh test

clean:
	rm -rf $(BUILD_DIR)
