#!/usr/bin/env python3
"""Contenders side by side on the same two SoCs (tools/accio.py run_pair):
the client SoC (10.0.3.2) ping-pongs the server SoC (10.0.3.1) over one
wire, each SoC with its Accio NIC and uncore.

  linux       udp_pingpong on Linux sockets; server: udp_echo (Linux sockets)
  accio       the same binary with LD_PRELOAD=libaccio (blocking waits);
              server: udp_echo under libaccio
  accio-spin  ... and ACCIO_SPIN_US=100000 (busy-polls the ring)
  rxe-rc      perftest ib_send_lat, RC SEND over soft-RoCE (rxe) on the same
              NICs, polling for completions; the CPU does the RDMA NIC's work
  rxe-rc-ev   ib_send_lat -e: waits for completion events
  rxe-ud      ib_send_lat -c UD, polling
  verbs-ud    ib_send_lat -c UD, polling, on the Accio verbs device (accio0:
              the verbs driver, provider libaccio/verbs) on both SoCs: each QP's
              queues are an ICT row's rings, the engine fills and checks
              the RoCEv2 ICRC, the CPU copies between rings and buffers
  verbs-ud-ev ib_send_lat -c UD -e on accio0 on both SoCs: waits for
              completion events (the rows' wake-up interrupts)
  verbs-ud-rxe  the same client on accio0 (polling), the server on
              soft-RoCE (rxe0)
  verbs-rc    ib_send_lat -c RC on accio0 on both SoCs: the provider runs
              the reliable transport (PSNs, ACKs, retransmission) on the
              row; an ACK goes out at the receiver's next poll
  verbs-rc-ev ib_send_lat -c RC -e on accio0 on both SoCs: the provider's
              thread makes the completions and reports them as events
  verbs-rc-write  ib_write_lat -c RC on accio0 on both SoCs: RDMA WRITEs
              that the target's provider places into registered memory
              (a thread that sleeps on the row's wake-up; the CPU copies)
  rxe-rc-write  ib_write_lat -c RC on soft-RoCE on both SoCs
  dpdk-afxdp  apps/dpdk/dpdk_pingpong (DPDK 25.11 ethdev, busy-polling) on
              net_af_xdp, zero copy: the NIC's driver runs XDP natively and
              the NIC DMAs into and out of DPDK's mbufs (the kernel still
              moves the descriptors, and each send is a sendto kick);
              server: udp_echo on Linux sockets. Runs after the others (it
              takes eth0).
  dpdk        the same dpdk_pingpong built against DPDK 22.11 (Debian's
              source, scripts/build-dpdk.sh) on net_accio, the Accio NIC's
              own poll-mode driver (apps/dpdk/net_accio): the NIC is handed
              to user space through UIO (accio-nic-uio) and DMAs to and from
              DPDK's hugepage mbufs, no kernel on the path; its NIC
              timestamps give the processing time. Runs last (the kernel
              gives the NIC up).

usage: python3 eval/bench_baselines.py [--sizes 64,256,1024] [--count N]
            [--hart 1] [--only NAMES] [--lockstep NS | --realtime]
            [--pcap-dir DIR] [--json FILE]

By default the two SoCs run in lockstep virtual time (tools/accio.py
run_pair(lockstep=NS), icount shift 4, the wire NS = 5000 ns one way): the
run repeats exactly. --realtime: two free-running QEMUs on a dgram wire.
For every contender and size: the program's round trip RTT_sw p50/p99 in
µs (udp_pingpong's and dpdk_pingpong's own; perftest's t_typical and 99 %
are half round trips and are doubled here), and from the client NIC's wire
capture (eval/wirecap.py; each section starts with a marker datagram to
the server's discard port) RTT_hw p50 (NIC to NIC), RTT_sw - RTT_hw p50
(the paper's processing time, for perftest too) and the turnaround p50/p99
(a reply's arrival to the next request's departure); the CPU busy share of
the client's hart (it is pinned there) from /proc/stat over the row.
Prints a Markdown table.
"""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import accio  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "eval"))
import wirecap  # noqa: E402

RDMA_PKGS = ["iproute2", "ibverbs-utils", "ibverbs-providers", "perftest"]
DPDK_PKGS = accio.read_pkg_list(os.path.join(ROOT, "buildroot-config", "dpdk-packages.txt"))
DPDK_ADD = [(os.path.join(ROOT, "build", "apps", "dpdk", "dpdk_pingpong"),
             "/usr/bin/dpdk_pingpong")]
DPDK_PREP = ("mkdir -p /dev/hugepages /sys/fs/bpf /var/run && "
             "mount -t hugetlbfs none /dev/hugepages && mount -t bpf bpf /sys/fs/bpf && "
             "echo 64 > /proc/sys/vm/nr_hugepages")
DPDK_EAL = ("--no-pci --in-memory --vdev net_af_xdp0,iface=eth0,"
            "xdp_prog=/usr/lib/riscv64-linux-gnu/bpf/xsk_def_xdp_prog_5.3.o")
DPDK = [("dpdk-afxdp", 7000)]
PMD_PKGS = accio.read_pkg_list(os.path.join(ROOT, "buildroot-config", "dpdk-pmd-packages.txt"))
PMD_ADD = [(os.path.join(ROOT, "build", "apps", "dpdk-pmd", "opt", "dpdk"), "/opt/dpdk")]
PMD_PREP = "/opt/dpdk/bin/accio-nic-uio.sh uio"
PMD_EAL = "--no-pci --in-memory -d /opt/dpdk/lib/accio/librte_net_accio.so --vdev net_accio0"
PMD = [("dpdk", 7000)]
PRELOAD = "LD_PRELOAD=/usr/lib/libaccio.so"
# (name, client environment, server port): the server SoC answers the Linux
# client with a plain udp_echo and the libaccio clients with one under libaccio
UDP = [("linux", "", 7000), ("accio", PRELOAD, 7001),
       ("accio-spin", PRELOAD + " ACCIO_SPIN_US=100000", 7001)]
RXE = [("rxe-rc", "-c RC"), ("rxe-rc-ev", "-c RC -e"), ("rxe-ud", "-c UD")]
# (name, perftest program, client device, server device, options): the
# verbs of ICT rows, and soft-RoCE's RDMA WRITE for comparison
VERBS = [("verbs-ud", "ib_send_lat", "accio0", "accio0", "-c UD"),
         ("verbs-ud-ev", "ib_send_lat", "accio0", "accio0", "-c UD -e"),
         ("verbs-ud-rxe", "ib_send_lat", "accio0", "rxe0", "-c UD"),
         ("verbs-rc", "ib_send_lat", "accio0", "accio0", "-c RC"),
         ("verbs-rc-ev", "ib_send_lat", "accio0", "accio0", "-c RC -e"),
         ("verbs-rc-write", "ib_write_lat", "accio0", "accio0", "-c RC"),
         ("rxe-rc-write", "ib_write_lat", "rxe0", "rxe0", "-c RC")]


def mark(name, size):
    """The start of a section in the client's wire capture (eval/wirecap.py)."""
    return f"echo @@{name}:{size}@@ | nc -u -w 1 10.0.3.1 9"


# both SoCs boot together in lockstep: the client waits for its servers
# Where each contender's transport runs. The paper's RDMA is a hardware
# NIC; none of ours is: soft-RoCE and the RC verbs provider run theirs on a
# hart. Verbs UD on ICT rows is the hardware analogue: the engine moves the
# datagrams, the provider only posts and polls.
TRANSPORT = {
    "linux": "kernel UDP (software)",
    "accio": "UDP engine (hardware)", "accio-spin": "UDP engine (hardware)",
    "rxe-rc": "soft-RoCE (software transport)", "rxe-rc-ev": "soft-RoCE (software transport)",
    "rxe-ud": "soft-RoCE (software transport)",
    "verbs-ud": "UD on ICT rows (hardware analogue: the engine)",
    "verbs-ud-ev": "UD on ICT rows (hardware analogue: the engine)",
    "verbs-ud-rxe": "client UD on ICT rows, server soft-RoCE (software transport)",
    "verbs-rc": "RC on ICT rows (software transport: ACKs in the provider)",
    "verbs-rc-ev": "RC on ICT rows (software transport: ACKs in the provider)",
    "verbs-rc-write": "RC on ICT rows (software transport: ACKs in the provider)",
    "rxe-rc-write": "soft-RoCE (software transport)",
    "dpdk-afxdp": "DPDK over AF_XDP (software)", "dpdk": "DPDK on net_accio (software)",
}
WAIT = ("for p in 7000 7001; do for i in $(seq 100); do udp_pingpong -s 10.0.3.1 -p $p -n 1 "
        "-t 100 -q > /dev/null 2>&1 && break; done; done")


def scripts(sizes, count, hart, only=None, lockstep=True):
    """(server script, client script). lockstep: the UDP clients take no
    hardware timestamps (-H), so that between two requests they do only
    their own work: their processing time comes from the wire capture, as
    every contender's does."""
    nohw = "-H " if lockstep else ""
    udp = [c for c in UDP if not only or c[0] in only]
    rxe = [c for c in RXE if not only or c[0] in only]
    verbs = [c for c in VERBS if not only or c[0] in only]
    mask = f"{1 << hart:#x}"
    cpu = f"grep '^cpu{hart} ' /proc/stat"
    srv = ["rdma link add rxe0 type rxe netdev eth0", "udp_echo -p 7000 &",
           f"{PRELOAD} udp_echo -p 7001 &"]
    cli = ["rdma link add rxe0 type rxe netdev eth0", WAIT]
    for size in sizes:
        for name, env, port in udp:
            cli.append(f"echo @@{name}:{size}@@; {mark(name, size)}; {cpu}; {env} taskset {mask} "
                       f"udp_pingpong {nohw}-s 10.0.3.1 -p {port} -m {size} -n {count} -q | grep -E "
                       f"'^(rtt_p50_us|rtt_p99_us|proc_p50_us|proc_p99_us)=|bad='; {cpu}")
        for name, opts in rxe:
            lat = f"ib_send_lat -d rxe0 -F -n {count} -s {size} {opts}"
            srv.append(f"for i in $(seq 5); do {lat} > /tmp/lat.out 2>&1 && break; "
                       f"cat /tmp/lat.out; done")
            cli.append(f"echo @@{name}:{size}@@; {mark(name, size)}; {cpu}; for i in $(seq 40); do "
                       f"taskset {mask} {lat} 10.0.3.1 > /tmp/lat.out 2>&1 && break; "
                       f"sleep 0.5; done; {cpu}; grep -A1 '#bytes' /tmp/lat.out || cat /tmp/lat.out")
        for name, prog, cdev, sdev, opts in verbs:
            lat = f"{prog} -F -n {count} -s {size} {opts}"
            srv.append(f"for i in $(seq 5); do {lat} -d {sdev} > /tmp/lat.out 2>&1 && break; "
                       f"cat /tmp/lat.out; done")
            cli.append(f"echo @@{name}:{size}@@; {mark(name, size)}; {cpu}; for i in $(seq 40); do "
                       f"taskset {mask} {lat} -d {cdev} 10.0.3.1 > /tmp/lat.out 2>&1 && break; "
                       f"sleep 0.5; done; {cpu}; grep -A1 '#bytes' /tmp/lat.out || cat /tmp/lat.out")
    dpdk = [c for c in DPDK if not only or c[0] in only]
    if dpdk:
        cli.append(DPDK_PREP)
    for size in sizes:
        for name, port in dpdk:
            cli.append(f"echo @@{name}:{size}@@; {cpu}; dpdk_pingpong -l {hart} {DPDK_EAL} -- "
                       f"-s 10.0.3.1 -l 10.0.3.2 -p {port} -m {size} -n {count} -q -k {name}:{size} 2>&1 | "
                       f"grep -E '^(rtt_p50_us|rtt_p99_us)=|bad=|dpdk_pingpong:'; {cpu}")
    pmd = [c for c in PMD if not only or c[0] in only]
    if pmd:
        cli.append(("" if dpdk else DPDK_PREP + "; ") + PMD_PREP)
    for size in sizes:
        for name, port in pmd:
            cli.append(f"echo @@{name}:{size}@@; {cpu}; /opt/dpdk/bin/dpdk_pingpong -l {hart} "
                       f"{PMD_EAL} -- -s 10.0.3.1 -l 10.0.3.2 -p {port} -m {size} -n {count} "
                       f"-q -k {name}:{size} 2>&1 | grep -E '^(rtt_p50_us|rtt_p99_us|proc_p50_us|proc_p99_us)=|"
                       f"bad=|dpdk_pingpong:|net_accio:'; {cpu}")
    return "\n".join(srv + ["wait"]), "\n".join(cli)


def busy(body, hart):
    cpu = [list(map(int, l.split()[1:])) for l in body.splitlines()
           if l.startswith(f"cpu{hart} ")]
    if len(cpu) < 2:
        return None
    d = [b - a for a, b in zip(cpu[0], cpu[1])]
    return round(100.0 * (sum(d) - d[3] - d[4]) / sum(d), 1) if sum(d) else None


def parse(output, hart):
    res = {}
    for name, size, body in re.findall(r"@@([\w-]+):(\d+)@@\n(.*?)(?=@@|\Z)", output, re.S):
        r = dict(cpu=busy(body, hart))
        kv = dict(re.findall(r"^(\w+)=([\d.]+)$", body, re.M))
        if "rtt_p50_us" in kv:
            r.update(rtt_p50=float(kv["rtt_p50_us"]), rtt_p99=float(kv["rtt_p99_us"]),
                     ok=" bad=0" in body)
            if "proc_p50_us" in kv:
                r.update(proc_p50=float(kv["proc_p50_us"]), proc_p99=float(kv["proc_p99_us"]))
        if re.search(r"^\s*\d+\s+\d+\s+inf\s", body, re.M):
            r["why"] = "perftest printed inf (its clock-rate estimate failed)"
        m = re.search(r"^\s*\d+\s+\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
                      r"\s+([\d.]+)", body, re.M)
        if m:
            # perftest: t_min t_max t_typical t_avg t_stdev 99% - half round trips
            r.update(rtt_p50=round(2 * float(m.group(3)), 1),
                     rtt_p99=round(2 * float(m.group(6)), 1), ok=True)
        res.setdefault(name, {})[int(size)] = r
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="64,256,1024")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--hart", type=int, default=1)
    ap.add_argument("--only", help="comma-separated contenders (default: all)")
    ap.add_argument("--lockstep", type=int, default=5000, metavar="NS",
                    help="the wire's one-way latency in lockstep virtual time (default 5000)")
    ap.add_argument("--realtime", action="store_true",
                    help="real time instead: the two QEMUs run free (dgram wire)")
    ap.add_argument("--pcap-dir", help="keep both SoCs' wire captures here")
    ap.add_argument("--json")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    only = a.only.split(",") if a.only else []
    server, client = scripts(sizes, a.count, a.hart, only or None, not a.realtime)
    dpdk = not only or "dpdk-afxdp" in only
    pmd = not only or "dpdk" in only
    pcap_dir = a.pcap_dir or tempfile.mkdtemp(prefix="accio-baselines-")
    os.makedirs(pcap_dir, exist_ok=True)
    try:
        rs, rc = accio.run_pair(server, client, timeout=3000,
                                pkgs=RDMA_PKGS + (DPDK_PKGS if dpdk else []) +
                                (PMD_PKGS if pmd else []),
                                add=(DPDK_ADD if dpdk else []) + (PMD_ADD if pmd else []),
                                lockstep=None if a.realtime else a.lockstep,
                                pcap_dir=pcap_dir)
        if rc.rc != 0:
            sys.exit("client SoC failed:\n" + rc.output[-3000:])
        res = parse(rc.output, a.hart)
        turn = wirecap.sections(wirecap.read_pcap(os.path.join(pcap_dir, "client.pcap")),
                                bytes.fromhex(accio.PAIR_NET["client"][1].replace(":", "")))
    finally:
        if not a.pcap_dir:
            shutil.rmtree(pcap_dir, ignore_errors=True)
    for key, sec in turn.items():
        name, _, size = key.rpartition(":")
        w, hw = wirecap.summary(sec["turn"]), wirecap.summary(sec["rtt"])
        r = res.get(name, {}).get(int(size)) if size.isdigit() else None
        if r is None:
            continue
        if w:
            r.update(wire_p50=w["p50"], wire_p99=w["p99"], wire_n=w["n"])
        if hw:
            r.update(rtt_hw_p50=hw["p50"], rtt_hw_p99=hw["p99"])
            if "rtt_p50" in r:
                # below zero: the program's own clock is wrong (perftest's in
                # event mode under icount), not the wire's
                r["sw_hw_p50"] = round(r["rtt_p50"] - hw["p50"], 1)
    clock = "real time" if a.realtime else f"lockstep virtual time, wire {a.lockstep} ns one way"
    print(f"Two SoCs, {clock}; {a.count} round trips a row.\n")
    print(f"| contender | transport | size | RTT_sw p50 / p99 (µs) | RTT_hw p50 (µs) | "
          f"RTT_sw - RTT_hw p50 (µs) | client turnaround on the wire p50 / p99 (µs) | "
          f"CPU busy, client hart {a.hart} |")
    print("|---|---|---:|---|---:|---:|---|---:|")
    for name in [c[0] for c in UDP + RXE + [v[:1] for v in VERBS] + DPDK + PMD
                 if not only or c[0] in only]:
        for size in sizes:
            r = res.get(name, {}).get(size)
            if not r or "rtt_p50" not in r:
                why = f" ({r['why']})" if r and r.get("why") else ""
                print(f"| {name} | {TRANSPORT[name]} | {size} | failed{why} | | | | |")
                continue
            wire = f"{r['wire_p50']} / {r['wire_p99']}" if "wire_p50" in r else "n/a"
            if r.get("sw_hw_p50", 0) < 0:
                r["sw_hw_p50"] = "n/a (program's RTT below the wire's)"
            print(f"| {name} | {TRANSPORT[name]} | {size} | {r['rtt_p50']} / {r['rtt_p99']}"
                  f"{'' if r.get('ok') else ' (bad replies)'} | {r.get('rtt_hw_p50', 'n/a')} | "
                  f"{r.get('sw_hw_p50', 'n/a')} | {wire} | {r['cpu']} % |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(clock=clock, count=a.count, results=res), f, indent=1)


if __name__ == "__main__":
    main()
