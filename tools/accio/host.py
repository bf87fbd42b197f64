"""The host's side of a guest's network: the host UDP echo server, free
ports on 127.0.0.1."""
import os
import re
import socket
import subprocess

from . import config
from .config import AccioError


class HostEcho:
    """The host UDP echo server (apps/host/udp_echo_server.c) as a context manager."""

    def __init__(self, port=0, max_datagrams=0, delay_us=0):
        exe = os.path.join(config.BUILD, "apps", "host", "udp_echo_server")
        if not os.path.exists(exe):
            raise AccioError(f"missing {exe} (run: make build)")
        args = [exe, "-a", "127.0.0.1", "-p", str(port)]
        if max_datagrams:
            args += ["-n", str(max_datagrams)]
        if delay_us:
            args += ["-d", str(delay_us)]   # a slower server
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening"):
            self.proc.kill()
            raise AccioError("host echo server did not start")
        self.port = int(line.split()[1])
        self.echoed = None

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        out = self.proc.communicate(timeout=10)[0]
        m = re.search(r"echoed (\d+)", out or "")
        self.echoed = int(m.group(1)) if m else None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def free_udp_port():
    """A UDP port on 127.0.0.1 that is free now (for --fwd-udp)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
