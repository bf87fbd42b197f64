"""accio: build, boot and drive the emulated Accio SoC (the host's library;
the command line is accio.cli, run as python3 tools/accio.py).

The modules: config (paths, process-wide settings, Machine: one SoC's
configuration), qemu (QEMU's command line, TCG plugins), qmp (the QMP
client), image (cpio writer, Debian layer, the run's initramfs), diag
(logs, symbols, diagnostics of a hung guest), host (the host's echo server,
free ports), machine (Guest, Session, run(), boot()), pair (run_pair()),
cli (the command line). Their public names are all here as well.

The upper-case settings of config (RR_TIMESLICE, ICOUNT_PARALLEL,
ICOUNT_SKEW_NS, SEED, TIMING, BUILD, ...) are read and written through
this package: accio.RR_TIMESLICE = 250 (or pytest's monkeypatch.setattr)
changes config.RR_TIMESLICE, which the next command line reads.
"""
import sys
import types

from . import config
from .config import AccioError, Machine, artefacts, cache_dir
from .diag import harts_summary, load_symbols, log_dir, symbolize, write_log
from .host import HostEcho, free_udp_port
from .image import (debian_layer, host_entries, initrd_for, initrd_with, newc_archive,
                    parse_add, read_pkg_list)
from .machine import BEGIN, END_RE, SESSION_IDS, Guest, Result, Session, boot, run
from .pair import PAIR_NET, run_pair
from .qemu import (build_plugin, command_line, device_defaults, qemu_cmdline, timing_args,
                   timing_plugin, timing_qemu_args, wire_args)
from .qmp import QMP

SETTINGS = frozenset(n for n in vars(config) if n.isupper())

__all__ = sorted(SETTINGS) + [
    "AccioError", "Machine", "artefacts", "cache_dir",
    "harts_summary", "load_symbols", "log_dir", "symbolize", "write_log",
    "HostEcho", "free_udp_port",
    "debian_layer", "host_entries", "initrd_for", "initrd_with", "newc_archive",
    "parse_add", "read_pkg_list",
    "BEGIN", "END_RE", "SESSION_IDS", "Guest", "Result", "Session", "boot", "run",
    "PAIR_NET", "run_pair",
    "build_plugin", "command_line", "device_defaults", "qemu_cmdline", "timing_args",
    "timing_plugin", "timing_qemu_args", "wire_args",
    "QMP",
]


class _Package(types.ModuleType):
    """The package's module: its settings live in config."""

    def __getattr__(self, name):
        if name in SETTINGS:
            return getattr(config, name)
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __setattr__(self, name, value):
        if name in SETTINGS:
            setattr(config, name, value)
        else:
            super().__setattr__(name, value)

    def __delattr__(self, name):
        if name in SETTINGS:
            raise AttributeError(f"{self.__name__}.{name} is a setting: it cannot be deleted")
        super().__delattr__(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | SETTINGS)


sys.modules[__name__].__class__ = _Package
