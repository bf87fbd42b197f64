# Accio: top-level build and test entry points.
#
#   make demo         install what is missing, build everything, boot the SoC
#                     and run the demo (UDP echo against a host peer)
#   make test         all tests (test-model, test-rtl, test-system)
#
# Heavy outputs are cached under $(ACCIO_CACHE) (default ~/.cache/accio),
# keyed by a hash of their inputs; build/ holds links to them.

SHELL := /bin/bash
export ACCIO_CACHE ?= $(HOME)/.cache/accio
VENV := $(ACCIO_CACHE)/venv
PY := $(VENV)/bin/python
ACCIO := python3 tools/accio.py
DEMO_PORT ?= 7777

.PHONY: all demo test test-model test-rtl rtl test-system build bootstrap venv sources \
	qemu linux userspace image apps regmap regmap-check boot clean

all: build

bootstrap:
	@bash scripts/bootstrap.sh

venv: bootstrap
	@bash scripts/venv.sh

sources: bootstrap
	@bash scripts/fetch-sources.sh

regmap: venv
	$(PY) hardware/regmap/generate.py
	@bash scripts/refresh-kernel-regs.sh

regmap-check: venv
	$(PY) hardware/regmap/generate.py --check

qemu: sources regmap-check
	@bash scripts/build-qemu.sh

linux: bootstrap regmap-check
	@bash scripts/build-linux.sh

userspace: sources
	@bash scripts/build-userspace.sh

image: userspace
	@bash scripts/build-image.sh

build: qemu linux image
	@echo "[build] ready: build/qemu-system-riscv64 build/Image build/initramfs.cpio.gz"

demo: build
	@bash scripts/demo.sh

boot: build
	$(ACCIO) boot

test: test-model test-rtl test-system

test-model: venv regmap-check
	$(PY) -m pytest -q tests/model

test-rtl: bootstrap
	$(MAKE) -C hardware/rtl test

rtl: bootstrap
	$(MAKE) -C hardware/rtl verilog

test-system: build venv
	$(PY) -m pytest -q tests/system

clean:
	rm -rf build
