#!/usr/bin/env python3
"""The client's processing time from its NIC's wire, for any program.

The NIC model can capture its wire (tools/accio.py: run --pcap, pair
--pcap-dir): every frame both ways, stamped with the virtual time it crossed
the wire, in a nanosecond pcap. For a ping-pong client the time from a
reply's arrival to the next request's departure is the client's whole
turnaround: receive path, the program's own work between two requests,
send path. That is the processing time the paper defines (RTT_sw - RTT_hw),
taken where the NIC's hardware timestamps are taken, and it needs nothing
from the program: perftest, DPDK and Linux sockets are measured alike. It
includes the program's own work between two requests (filling and checking
buffers, reading clocks). The capture also gives RTT_hw (a request's
departure to its reply's arrival), so that RTT_sw - RTT_hw follows from any
program's own round-trip time.

Sections: a datagram to UDP port 9 (discard) whose payload starts with
@@NAME@@ (busybox: echo @@NAME@@ | nc -u -w 1 HOST 9) starts a section;
the frames up to the next marker belong to it. Data frames are IPv4 UDP
datagrams other than markers; for RoCEv2 (UDP 4791) RC acknowledgements
(BTH opcode 0x11) are not data.

usage: python3 eval/wirecap.py CLIENT.pcap [--mac MAC]
"""
import argparse
import bisect
import os
import re
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hardware", "generated"))
from accio_contract import ROCE_PORT  # noqa: E402

MARK_PORT = 9
BTH_ACK = 0x11


def read_pcap(path):
    """[(t_ns, frame bytes (captured part), length on the wire)]"""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise ValueError(f"{path}: not a pcap file")
    magic = struct.unpack_from("<I", data)[0]
    if magic not in (0xa1b23c4d, 0xa1b2c3d4):
        raise ValueError(f"{path}: not a little-endian pcap file (magic {magic:#x})")
    scale = 1 if magic == 0xa1b23c4d else 1000
    out, off = [], 24
    while off + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack_from("<IIII", data, off)
        off += 16
        out.append(((sec * 1_000_000_000 + frac * scale), data[off:off + incl], orig))
        off += incl
    return out


def classify(frame):
    """('mark', name) | ('data', None) | (None, None)"""
    if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return None, None
    ihl = (frame[14] & 15) * 4
    l4 = 14 + ihl
    if len(frame) < l4 + 8:
        return None, None
    dport = struct.unpack_from(">H", frame, l4 + 2)[0]
    payload = frame[l4 + 8:]
    if dport == MARK_PORT:
        m = re.match(rb"@@([^@\s]+)@@", payload)
        return ("mark", m.group(1).decode()) if m else (None, None)
    if dport == ROCE_PORT and payload and payload[0] == BTH_ACK:
        return None, None
    return "data", None


def station(frames):
    """The capturing NIC's MAC: the unicast address seen in most frames (it
    is the source or the destination of every frame on its wire)."""
    count = {}
    for _, f, _ in frames:
        if len(f) >= 12:
            for mac in (f[0:6], f[6:12]):
                if not mac[0] & 1:
                    count[mac] = count.get(mac, 0) + 1
    return max(count, key=count.get) if count else None


def sections(frames, mac=None):
    """{name: {"turn": [ns...], "rtt": [ns...]}} from a client's capture:
    turn, a reply's arrival to the next request's departure; rtt, a
    request's departure to the next reply's arrival (RTT_hw, NIC to NIC)."""
    mac = mac or station(frames)
    out, name, last_rx, last_tx = {}, None, None, None
    for t, f, _ in sorted(frames, key=lambda x: x[0]):
        kind, mark = classify(f)
        if kind == "mark":
            name, last_rx, last_tx = mark, None, None
            out.setdefault(name, {"turn": [], "rtt": []})
            continue
        if kind != "data" or name is None:
            continue
        if f[0:6] == mac:           # received
            if last_tx is not None:
                out[name]["rtt"].append(t - last_tx)
            last_rx, last_tx = t, None
        elif f[6:12] == mac:        # sent
            if last_rx is not None:
                out[name]["turn"].append(t - last_rx)
            last_rx, last_tx = None, t
    return out


def udp_ports(frame):
    """(source port, destination port) of an IPv4 UDP frame, or None."""
    if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return None
    l4 = 14 + (frame[14] & 15) * 4
    if len(frame) < l4 + 4:
        return None
    return struct.unpack_from(">HH", frame, l4)


def datagrams(frames, mac):
    """(time, "rx" or "tx", client port) of each UDP datagram the station
    mac received or sent, in time order (its port: a request's source, a
    reply's destination)."""
    for t, f, _ in sorted(frames, key=lambda x: x[0]):
        kind, _ = classify(f)
        ports = udp_ports(f) if kind == "data" else None
        if ports is None:
            continue
        if f[0:6] == mac:
            yield t, "rx", ports[1]
        elif f[6:12] == mac:
            yield t, "tx", ports[0]


def flows(frames, mac=None, skip=0):
    """{client port: {"turn": [ns...], "turn_at": [ns...], "rtt": [ns...]}}:
    the same as sections(), per UDP flow of the capturing station (its
    port: a request's source, a reply's destination), for many clients at
    once; turn_at is the capture time of each turnaround's reply. skip:
    each flow's first round trips that are not measured (a warm-up): their
    turnarounds, and the one after the last of them (a client may wait
    there, e.g. at udp_multi's barrier), are left out."""
    sent, out, last_rx, last_tx = {}, {}, {}, {}
    for t, way, p in datagrams(frames, mac or station(frames)):
        fl = out.setdefault(p, {"turn": [], "turn_at": [], "rtt": []})
        if way == "rx":
            if last_tx.get(p) is not None:
                fl["rtt"].append(t - last_tx[p])
            last_rx[p], last_tx[p] = t, None
        else:
            sent[p] = sent.get(p, 0) + 1
            if last_rx.get(p) is not None and sent[p] > skip + 1:
                fl["turn"].append(t - last_rx[p])
                fl["turn_at"].append(last_rx[p])
            last_rx[p], last_tx[p] = None, t
    return out


def fairness(frames, mac=None, skip=0):
    """How the clients shared the server while all of them ran: the window
    from the first measured request of any flow (after skip round trips of
    warm-up: the clients' common start) to the first flow's last reply, so
    that no client had finished; each flow's replies in it (0 for a client
    that did not get to run), Jain's index over those counts
    ((sum x)^2 / (n sum x^2): 1 when equal, 1/n when one flow takes all),
    their min and max, and all flows' replies per second in the window
    (start_ns and end_ns: its capture times). None when there is no such
    window."""
    first_tx, replies, sent = {}, {}, {}
    for t, way, p in datagrams(frames, mac or station(frames)):
        if way == "rx":
            replies.setdefault(p, []).append(t)
        else:
            sent[p] = sent.get(p, 0) + 1
            if sent[p] == skip + 1:
                first_tx[p] = t
    flows = [p for p in first_tx if replies.get(p)]
    if not flows:
        return None
    start = min(first_tx[p] for p in flows)
    end = min(replies[p][-1] for p in flows)
    if end <= start:
        return None
    counts = [bisect.bisect_right(replies[p], end) - bisect.bisect_left(replies[p], start)
              for p in flows]
    total = sum(counts)
    return {"flows": len(flows), "window_ms": round((end - start) / 1e6, 3),
            "start_ns": start, "end_ns": end,
            "round_trips": total,
            "jain": round(total * total / (len(counts) * sum(c * c for c in counts)), 4)
            if total else None,
            "min": min(counts), "max": max(counts),
            "round_trips_per_s": round(total * 1e9 / (end - start), 1)}


def pct(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def summary(samples):
    """p50/p99 in µs (1 decimal) and the sample count."""
    if not samples:
        return None
    return dict(p50=round(pct(samples, 50) / 1000.0, 1), p99=round(pct(samples, 99) / 1000.0, 1),
                n=len(samples))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pcap")
    ap.add_argument("--mac", help="the client NIC's MAC (default: guessed)")
    a = ap.parse_args()
    mac = bytes.fromhex(a.mac.replace(":", "")) if a.mac else None
    try:
        frames = read_pcap(a.pcap)
    except (OSError, ValueError) as e:
        sys.exit(f"wirecap: {e}")
    print("| section | turnarounds | turnaround p50 / p99 (µs) | RTT_hw p50 / p99 (µs) |")
    print("|---|---:|---|---|")
    for name, sec in sections(frames, mac).items():
        t, r = summary(sec["turn"]), summary(sec["rtt"])
        print(f"| {name} | {len(sec['turn'])} | " + (f"{t['p50']} / {t['p99']}" if t else "none")
              + " | " + (f"{r['p50']} / {r['p99']}" if r else "none") + " |")


if __name__ == "__main__":
    main()
