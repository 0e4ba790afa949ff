# pipeopt: the two commands of the README.
#
#   make demo   install missing packages, build, run the main job on a bundled example
#   make test   install missing packages, build, run every test (ends with ctest's summary)
#
# BUILD_DIR and JOBS can be overridden: make test BUILD_DIR=build-rel JOBS=4

BUILD_DIR ?= build
JOBS ?= $(shell nproc)

.PHONY: all setup configure build demo test clean

all: build

setup:
	@bash scripts/setup.sh

configure: setup
	@test -f $(BUILD_DIR)/build.ninja || \
	  cmake -G Ninja -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD_DIR)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD_DIR)
