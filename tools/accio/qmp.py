"""A minimal QMP client: the host's questions to a running QEMU."""
import json
import socket


class QMP:
    """A minimal QMP client on QEMU's unix socket: the diagnostics, and
    tests that change a device's state (set_link)."""

    def __init__(self, path, timeout=5.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        self._read()                        # greeting
        self.cmd("qmp_capabilities")

    def _read(self):
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise OSError("QMP closed")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def cmd(self, execute, **args):
        msg = {"execute": execute}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            r = self._read()
            if "return" in r:
                return r["return"]
            if "error" in r:
                raise OSError(f"QMP {execute}: {r['error'].get('desc')}")

    def hmp(self, line):
        return self.cmd("human-monitor-command", **{"command-line": line})

    def find(self, qtype, path="/machine", depth=3):
        """QOM path of the first object of type qtype under path."""
        for child in self.cmd("qom-list", path=path):
            t = child.get("type", "")
            if not t.startswith("child<"):
                continue
            sub = f"{path}/{child['name']}"
            if t == f"child<{qtype}>":
                return sub
            if depth > 1:
                found = self.find(qtype, sub, depth - 1)
                if found:
                    return found
        return None

    def close(self):
        self.sock.close()
