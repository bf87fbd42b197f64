#!/usr/bin/env python3
"""A host-side memcached client over UDP (memcached's UDP frame: request id,
sequence number, datagram count, reserved - four 16-bit fields - before the
ASCII command), for tests and eval against a memcached in the guest.

    python3 tools/mcudp.py --port P [--seconds S] [--window W] [--size B]

runs a get load (after setting the keys) and prints requests/s and latency
percentiles as one JSON line. Only 127.0.0.1 is ever addressed.
"""
import argparse
import json
import random
import socket
import struct
import time

HDR = struct.Struct("!HHHH")


class McError(Exception):
    pass


class McUdp:
    def __init__(self, port, host="127.0.0.1"):
        self.addr = (host, port)
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        # Connected: the kernel passes only the server's datagrams. On a
        # host where other tests' QEMUs forward ports of 127.0.0.1, a late
        # datagram meant for a closed socket that had this one's port would
        # otherwise be read as memcached's.
        self.s.connect(self.addr)
        self.rid = random.randrange(1 << 16)
        self.bad = 0            # datagrams whose frame or reply did not parse
        self.bad_seen = []      # the first bytes of the first few of them

    def _next_id(self):
        self.rid = (self.rid + 1) & 0xFFFF
        return self.rid

    def send(self, rid, cmd):
        try:
            self.s.send(HDR.pack(rid, 0, 1, 0) + cmd)
        except ConnectionRefusedError:
            pass                # an earlier datagram's ICMP error: as lost

    def request(self, cmd, timeout=0.5, tries=20):
        """One command, resent until its whole reply is here; returns the reply."""
        rid = self._next_id()
        for _ in range(tries):
            self.send(rid, cmd)
            parts, total = {}, None
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                self.s.settimeout(max(end - time.monotonic(), 0.001))
                try:
                    data = self.s.recv(65536)
                except socket.timeout:
                    break
                except ConnectionRefusedError:
                    # nothing listens on the port yet (a connected socket
                    # gets the ICMP error): as a request without a reply
                    time.sleep(max(end - time.monotonic(), 0))
                    break
                if len(data) < HDR.size:
                    self.bad += 1
                    if len(self.bad_seen) < 8:
                        self.bad_seen.append(data[:16])
                    continue
                r, seq, n, _ = HDR.unpack_from(data)
                if r != rid:
                    continue            # a late reply to an earlier send
                parts[seq], total = data[HDR.size:], n
                if len(parts) == total:
                    return b"".join(parts[i] for i in range(total))
        raise McError(f"no reply to {cmd[:40]!r} from 127.0.0.1:{self.addr[1]}")

    def set(self, key, value):
        r = self.request(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value))
        if r != b"STORED\r\n":
            raise McError(f"set {key!r}: {r[:80]!r}")

    def get(self, key):
        r = self.request(b"get %s\r\n" % key)
        if r == b"END\r\n":
            return None
        head, _, rest = r.partition(b"\r\n")
        f = head.split()
        if len(f) != 4 or f[0] != b"VALUE" or f[1] != key:
            raise McError(f"get {key!r}: {r[:80]!r}")
        n = int(f[3])
        if rest[n:] != b"\r\nEND\r\n":
            raise McError(f"get {key!r}: bad end {rest[n:n + 20]!r}")
        return rest[:n]


def value_of(i, size):
    seed = (b"%08d" % i) * (size // 8 + 1)
    return bytes((c + i) % 26 + 97 for c in seed[:size])


def load(port, seconds=5.0, window=4, keys=64, size=32, warm=True):
    """Gets of random keys with `window` requests outstanding for `seconds`.
    Every reply is checked against the value set; returns a dict of figures."""
    c = McUdp(port)
    if warm:
        for i in range(keys):
            c.set(b"k%d" % i, value_of(i, size))
    out = {}                     # rid -> (key index, send time)
    lat, done, wrong, lost, samples = [], 0, 0, 0, []
    c.s.setblocking(False)
    t0 = time.monotonic()
    end = t0 + seconds
    while True:
        now = time.monotonic()
        if now < end:
            while len(out) < window:
                rid = c._next_id()
                i = random.randrange(keys)
                out[rid] = (i, time.monotonic())
                c.send(rid, b"get k%d\r\n" % i)
        elif not out:
            break
        # anything outstanding for 0.5 s is lost (UDP); forget it
        for rid, (i, ts) in list(out.items()):
            if now - ts > 0.5:
                del out[rid]
                lost += 1
        if now > end + 1.0:
            lost += len(out)
            break
        try:
            data = c.s.recv(65536)
        except (BlockingIOError, ConnectionRefusedError):
            time.sleep(0)
            continue
        rid = HDR.unpack_from(data)[0] if len(data) >= HDR.size else None
        if rid not in out:
            continue
        i, ts = out.pop(rid)
        v = value_of(i, size)
        if data[HDR.size:] != b"VALUE k%d 0 %d\r\n%s\r\nEND\r\n" % (i, len(v), v):
            wrong += 1
            if len(samples) < 3:
                samples.append((i, data[:60].hex(), len(data)))
            continue
        lat.append(time.monotonic() - ts)
        done += 1
    lat.sort()
    pct = lambda p: round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1e6, 1) if lat else None
    return dict(requests=done, seconds=seconds, rps=round(done / seconds, 1),
                p50_us=pct(0.50), p99_us=pct(0.99), wrong=wrong, lost=lost,
                window=window, size=size, wrong_samples=samples)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--window", type=int, default=4)
    ap.add_argument("--size", type=int, default=32)
    a = ap.parse_args()
    print(json.dumps(load(a.port, a.seconds, a.window, size=a.size)))


if __name__ == "__main__":
    main()
