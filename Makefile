# Accio: top-level build and test entry points.
#
#   make demo         install what is missing, build everything, boot the SoC
#                     and run the demo (UDP echo against a host peer)
#   make test         the tests (test-model, test-rtl, the SoC and system tests
#                     not marked slow): about 25 min warm
#   make test-long    the long runs: the quick evaluation, Linux on the RTL SoC,
#                     runs at scale (CI runs make test, then this)
#   make stress-system N=30 [LOAD=1]   repeat the accelerated-socket tests
#   make eval         the evaluation: eval/REPORT.md (make eval-quick: small counts)
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
	qemu linux userspace image apps switch regmap regmap-check kernel-series boot clean stress-system stress-boot \
	test-soc-system test-long eval eval-tree eval-quick eval-long fuzz soak soc test-soc soc-linux

all: build

bootstrap:
	@bash scripts/bootstrap.sh

venv: bootstrap
	@bash scripts/venv.sh

sources: bootstrap
	@bash scripts/fetch-sources.sh

regmap: venv
	$(PY) hardware/regmap/generate.py
	$(PY) scripts/kernel-series.py

# also fails when kernel-patches/series/ is not what its sources make
regmap-check: venv
	$(PY) hardware/regmap/generate.py --check --memo
	$(PY) scripts/kernel-series.py --check

# the kernel patch series from kernel-patches/src, hooks and series.toml
kernel-series: venv
	$(PY) scripts/kernel-series.py

qemu: sources regmap-check
	@bash scripts/build-qemu.sh

linux: bootstrap regmap-check
	@mkdir -p build
	@bash scripts/build-linux.sh

userspace: sources
	@bash scripts/build-userspace.sh

image: userspace venv
	@bash scripts/build-image.sh

build: qemu linux image switch
	@echo "[build] ready: build/qemu-system-riscv64 build/Image build/initramfs.cpio.gz"

# the hub of accio cluster (tools/cluster/, OpenMPI's mpicc)
switch: bootstrap
	@$(MAKE) -s -C tools/cluster

demo: build
	@bash scripts/demo.sh

boot: build
	$(ACCIO) boot

# make test: the model and RTL tests, then the SoC and system tests not
# marked slow in one pytest run on TEST_JOBS workers; make test-long: the
# slow ones (tests/conftest.py says which), with Linux restored on the RTL
# SoC (minutes on one core) beside the system tests
test: test-model test-rtl test-soc-system

test-model: venv regmap-check bootstrap
	$(PY) -m pytest -q -n $(TEST_JOBS) --dist loadfile tests/model
	$(MAKE) -s -C hardware/model fuzz-quick
	$(MAKE) -s -C libaccio test

# libFuzzer on the uncore's C model, FUZZ_SECONDS long (default 600)
fuzz: bootstrap
	$(MAKE) -C hardware/model fuzz $(if $(FUZZ_SECONDS),FUZZ_SECONDS=$(FUZZ_SECONDS))

# The resilience tests at SOAK times their counts (default 10): 40,960
# datagrams on 4096 sockets, 30 link flaps, 10,000 socket cycles and 200
# kills, 30,000 fuzzed kernel calls
SOAK ?= 10
soak: build venv
	ACCIO_SOAK=$(SOAK) $(PY) -m pytest -q tests/system/test_resilience.py

test-rtl: bootstrap
	$(MAKE) -C hardware/rtl test

rtl: bootstrap
	$(MAKE) -C hardware/rtl verilog

# The Rocket SoC (rocket-chip 1.2.6 cores and the uncore RTL) on Verilator:
# build/soc/soc-sim1 (one hart, the uncore and its NIC joined by the Verilog top) and
# build/soc/soc-sim4-dip (four harts, the uncore attached by the
# WithAccioUncore config fragment), their programs in build/soc/sw*/
soc: bootstrap
	@bash scripts/build-soc.sh 1
	@bash scripts/build-soc.sh 4 diplomatic

# test-soc boots the firmware and the kernel of make linux on the RTL SoC
# too, and restores Linux booted on it (the snapshot of soc-linux: cached,
# or booted first)
test-soc: soc-linux
	$(PYTEST_PAR) tests/soc

# Linux on the Rocket RTL SoC: a cold boot to a shell (hours of simulation),
# saved under $(ACCIO_CACHE)/soc/linux-KEY/; then accio soc-run -- CMD
soc-linux: soc linux image venv
	$(PY) hardware/soc/soc_linux.py boot

# the system tests on TEST_JOBS workers (default: the host's cores), each
# booting its own SoCs (tests/system/conftest.py orders them)
TEST_JOBS ?= $(shell nproc)
PYTEST_PAR = $(PY) -m pytest -q -n $(TEST_JOBS) --dist loadgroup --durations=25
test-system: build venv
	$(PYTEST_PAR) tests/system

# both in one run, on both cores, the slow ones left to test-long
test-soc-system: soc build
	$(PYTEST_PAR) -m "not slow" tests/soc tests/system

# the long runs: the quick evaluation, Linux on the RTL SoC (its snapshot
# booted first when not cached), runs at scale, second checks
test-long: soc-linux build
	$(PYTEST_PAR) -m slow tests/soc tests/system

# Repeat the accelerated-socket tests N times (LOAD=1: every host core busy
# meanwhile; K=pattern: pytest -k); failing iterations keep their consoles
# and diagnostics under build/stress/.
N ?= 30
stress-system: build venv
	$(PY) tests/system/stress.py -n $(N) $(if $(LOAD),--load) $(if $(K),-k "$(K)")

# Boot the SoC N times, J at once (the boot hang of OpenSBI's hart-start race).
J ?= 3
stress-boot: build venv
	$(PY) tests/system/stress.py --boots $(N) -j $(J)

# The evaluation (paper section 8 and the breakdown): eval/REPORT.md with
# plots and eval/results/*.json; eval-quick: small counts into build/eval-quick/.
# a run needs a clean tree (its results name one commit); ALLOW_DIRTY=1 runs anyway
# (checked before the build, so a dirty tree is refused at once)
EVAL_FLAGS := $(if $(ALLOW_DIRTY),--allow-dirty)

eval-tree: venv
	@$(PY) -m eval --check-tree $(EVAL_FLAGS)

eval: eval-tree build
	$(PY) -m eval $(EVAL_FLAGS)

eval-quick: eval-tree build
	$(PY) -m eval --quick $(EVAL_FLAGS)

# the paper's multiplexing run: 100,000 round trips per client at T = 1, 4,
# 64 (about an hour; its own folder and report)
eval-long: eval-tree build
	$(PY) -m eval $(EVAL_FLAGS) --only multiplex --multiplex-threads 1,4,64 --multiplex-count 100000 \
		--out eval/results-100k --report eval/results-100k/REPORT.md

clean:
	rm -rf build
