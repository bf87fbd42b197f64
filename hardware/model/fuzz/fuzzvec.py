#!/usr/bin/env python3
"""Between test vectors and fuzz inputs of hardware/model/fuzz/fuzz_uncore.c.

  fuzzvec.py seeds OUTDIR VEC...   one seed input per vector file (the
                                   vector's operations; its expectations,
                                   which the fuzzer does not check, dropped)
  fuzzvec.py vec INPUT [OUT.vec]   a fuzz input as a vector file: the same
                                   operations for vecrun and the RTL, with
                                   no expectations ('read OFF any', 'rx
                                   FRAME any'): a crash the fuzzer found
                                   becomes a vector both replay
"""
import os
import struct
import sys

MEM_BASE = 0x80000000


def num(s):
    return int(s, 0)


def who_byte(args):
    user = "user" in args
    asid = num(args[args.index("user") + 1]) if user else 0
    hart = num(args[args.index("hart") + 1]) if "hart" in args else 0
    return (int(user) | (hart & 3) << 1 | (asid & 31) << 3) & 0xff


def vec_to_input(text):
    rows, harts, now = 64, 4, 0
    ops = bytearray()
    for line in text.splitlines():
        line = line.split("#", 1)[0].split()
        if not line:
            continue
        d, a = line[0], line[1:]
        if d == "config":
            kv = dict(x.split("=") for x in a)
            rows, harts = int(kv.get("rows", 64)), int(kv.get("harts", 4))
        elif d == "write":
            ops += struct.pack("<BIQB", 0, num(a[0]), num(a[1]) & (2**64 - 1), who_byte(a[2:]))
        elif d == "store":
            size = {1: 0, 2: 1, 4: 2, 8: 3}[num(a[1])]
            ops += struct.pack("<BIBQB", 1, num(a[0]), size, num(a[2]) & (2**64 - 1),
                               who_byte(a[3:]))
        elif d == "read":
            ops += struct.pack("<BIB", 2, num(a[0]), who_byte(a[2:]))
        elif d == "rx":
            frame = bytes.fromhex(a[0])
            ops += struct.pack("<BH", 3, len(frame)) + frame
        elif d == "mem":
            data, addr = bytes.fromhex(a[1]), num(a[0]) - MEM_BASE
            for i in range(0, len(data), 255):
                chunk = data[i:i + 255]
                ops += struct.pack("<BIB", 4, addr + i, len(chunk)) + chunk
        elif d == "link":
            ops += struct.pack("<BB", 5, a[0] == "up")
        elif d == "time":
            t = num(a[0])
            while t > now:
                step = min(t - now, 2**32 - 1)
                ops += struct.pack("<BI", 6, step)
                now += step
        elif d == "dump":
            ops.append(8)
    header = (min(max(rows, 1), 64) - 1) | (min(max(harts, 1), 4) - 1) << 6
    return bytes([header]) + bytes(ops)


def input_to_vec(data):
    """The operations of a fuzz input as vector lines (see fuzz_uncore.c)."""
    if not data:
        return "# empty input\n"
    rows, harts = 1 + (data[0] & 63), 1 + (data[0] >> 6)
    window = 0x1000 + rows * 0x1000
    out = [f"config rows={rows} harts={harts}"]
    now, p = 0, 1

    def who(b):
        s = f" user {b >> 3}" if b & 1 else ""
        return s + (f" hart {b >> 1 & 3}" if b >> 1 & 3 else "")

    def take(n):
        nonlocal p
        if p + n > len(data):
            raise EOFError
        chunk = data[p:p + n]
        p += n
        return chunk
    try:
        while p < len(data):
            op = take(1)[0] % 10
            if op == 0:
                off, val, b = struct.unpack("<IQB", take(13))
                out.append(f"write {(off % window) & ~7:#x} {val:#x}{who(b)}")
            elif op == 1:
                off, sz, val, b = struct.unpack("<IBQB", take(14))
                sz = 1 << (sz & 3)
                out.append(f"store {(off % window) & ~(sz - 1):#x} {sz} "
                           f"{val & ((1 << 8 * sz) - 1):#x}{who(b)}")
            elif op == 2:
                off, b = struct.unpack("<IB", take(5))
                out.append(f"read {(off % window) & ~7:#x} any{who(b)}")
            elif op == 3:
                (n,) = struct.unpack("<H", take(2))
                frame = take(n % 2048)
                if frame:
                    out.append(f"rx {frame.hex()} any")
            elif op == 4:
                addr, n = struct.unpack("<IB", take(5))
                chunk = take(n)
                if addr + n <= 4 << 20:
                    out.append(f"mem {MEM_BASE + addr:#x} {chunk.hex()}")
            elif op == 5:
                out.append("link " + ("up" if take(1)[0] & 1 else "down"))
            elif op == 6:
                (ns,) = struct.unpack("<I", take(4))
                now += ns
                out.append(f"time {now}")
            elif op == 7:
                out.append(f"# nic ready={take(1)[0] & 1}")
            elif op == 8:
                out.append("dump")
            elif op == 9:
                out.append(f"config rows={rows} harts={harts}")
    except EOFError:
        out.append("# (input ends inside an operation)")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) >= 3 and argv[0] == "seeds":
        os.makedirs(argv[1], exist_ok=True)
        for path in argv[2:]:
            name = os.path.splitext(os.path.basename(path))[0]
            with open(path) as f:
                data = vec_to_input(f.read())
            with open(os.path.join(argv[1], name), "wb") as f:
                f.write(data)
        return 0
    if len(argv) in (2, 3) and argv[0] == "vec":
        with open(argv[1], "rb") as f:
            text = "# from fuzz input " + os.path.basename(argv[1]) + "\n" + \
                input_to_vec(f.read())
        if len(argv) == 3:
            with open(argv[2], "w") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
