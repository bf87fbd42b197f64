"""accio cluster: N SoCs on a switched network, their clocks in lockstep.

A topology file (TOML) names the SoCs, the commands they run, the switches
and the links; `accio cluster FILE` boots every SoC under -icount, joins
their NICs' lockstep wires to the hub (build/accio-switch, tools/cluster/)
and prints what each command printed. The hub holds the network model and
the synchronisation; placed on several hosts it runs under OpenMPI's mpirun,
one rank per host, and the result is the same.

    [defaults]                 # every key here is optional
    latency_ns = 2500          # one way, node to switch and switch to switch
    gbps = 10                  # a switch port's rate (0: no serialisation)
    buffer_kb = 256            # a switch port's egress buffer
    smp = 2                    # harts per SoC
    icount = 4                 # 2^N ns per instruction

    [[switch]]
    name = "tor"
    delay_ns = 500             # from ingress to egress

    [[node]]
    name = "server"
    command = "udp_echo -p 7000"
    service = true             # runs until the others have ended
    switch = "tor"             # its link (latency_ns, gbps, buffer_kb may
                               # be given here for it)
    [[node]]
    name = "client"
    count = 3                  # client1, client2, client3
    command = "udp_pingpong -s {ip:server} -p 7000 -n 100 -q"

    [[link]]                   # between switches; they must form a tree,
    between = ["tor", "spine"] # or a link in each loop has blocked = true
    latency_ns = 1000

More keys of a node: ip (else 10.0.3.K, K its place in the file; one /24
for all), smp, mem, host (a name among --hosts, or an index: where it runs),
pkgs (extra Debian packages, as accio run --pkg) and add ("HOST:GUEST"
paths, as accio run --add). timeout_s (top level, default 900) bounds the run.
In a command, {ip:NAME} is that node's address, {name} the node's own name,
{i} its number within its group (1..count). MACs are 52:54:00:ac:c2:NN.
"""
import ipaddress
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
import tomllib
from dataclasses import dataclass, field

import accio
from accio import AccioError

SWITCH_BIN = os.path.join(accio.BUILD, "accio-switch")
NS_AGENT = os.path.join(accio.ROOT, "tools", "cluster", "ns-agent.sh")

DEFAULTS = {"latency_ns": 2500, "gbps": 10, "buffer_kb": 256, "smp": 2,
            "icount": 4, "mem": "512M", "delay_ns": 0}
NODE_KEYS = {"name", "command", "service", "switch", "latency_ns", "gbps",
             "buffer_kb", "count", "ip", "host", "smp", "mem", "pkgs", "add"}
SWITCH_KEYS = {"name", "delay_ns"}
LINK_KEYS = {"between", "latency_ns", "gbps", "buffer_kb", "blocked"}
TOP_KEYS = {"defaults", "switch", "node", "link", "timeout_s"}


class TopologyError(AccioError):
    pass


@dataclass
class Node:
    name: str
    command: str
    service: bool
    switch: str
    ip: str
    mac: str
    latency_ns: int
    bps: int
    buffer: int
    smp: int
    mem: str
    host: object = None
    pkgs: tuple = ()            # extra Debian packages (accio run --pkg)
    add: tuple = ()             # (host path, guest path) (accio run --add)


@dataclass
class Link:
    ends: tuple
    latency_ns: int
    bps: int
    buffer: int
    blocked: bool = False


@dataclass
class Topology:
    nodes: list
    switches: dict              # name -> delay_ns
    links: list                 # switch-to-switch
    icount: int
    timeout_s: float
    source: str = ""
    fwd: dict = field(default_factory=dict)   # switch -> {node: link index}

    @property
    def quantum(self):
        """The lookahead: no frame reaches a NIC sooner than this after it
        left another."""
        return 2 * min(n.latency_ns for n in self.nodes)

    def node(self, name):
        return next(n for n in self.nodes if n.name == name)


def _check_keys(what, d, allowed):
    bad = sorted(set(d) - allowed)
    if bad:
        raise TopologyError(f"{what}: unknown key{'s' if len(bad) > 1 else ''} "
                            f"{', '.join(bad)} (known: {', '.join(sorted(allowed))})")


def _positive(what, v, zero_ok=False):
    if not isinstance(v, int) or isinstance(v, bool) or v < 0 or (v == 0 and not zero_ok):
        need = "a whole number >= 0" if zero_ok else "a whole number > 0"
        raise TopologyError(f"{what} must be {need}, not {v!r}" +
                            ("" if zero_ok else " (a link's latency is the lookahead "
                             "of the synchronisation: it cannot be zero)"
                             if "latency" in what else ""))
    return v


def parse(text, source="<topology>"):
    """A Topology from TOML text; TopologyError says what is wrong."""
    try:
        t = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TopologyError(f"{source}: not valid TOML: {e}") from None
    _check_keys(source, t, TOP_KEYS)
    d = dict(DEFAULTS)
    _check_keys("[defaults]", t.get("defaults", {}), set(DEFAULTS))
    d.update(t.get("defaults", {}))
    _positive("[defaults] latency_ns", d["latency_ns"])
    icount = _positive("[defaults] icount", d["icount"], zero_ok=True)

    switches = {}
    for k, s in enumerate(t.get("switch", [])):
        _check_keys(f"switch {k + 1}", s, SWITCH_KEYS)
        name = s.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,32}", name):
            raise TopologyError(f"switch {k + 1}: a name of letters, digits, '_.-' is needed")
        if name in switches:
            raise TopologyError(f"switch {name!r} is defined twice")
        switches[name] = _positive(f"switch {name}: delay_ns",
                                   s.get("delay_ns", d["delay_ns"]), zero_ok=True)
    if not switches:
        raise TopologyError(f"{source}: no [[switch]]: the nodes need one to meet")

    nodes, names = [], set(switches)
    for k, n in enumerate(t.get("node", [])):
        _check_keys(f"node {k + 1}", n, NODE_KEYS)
        base = n.get("name")
        if not isinstance(base, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,28}", base):
            raise TopologyError(f"node {k + 1}: a name of letters, digits, '_.-' is needed")
        count = n.get("count", None)
        if count is not None:
            _positive(f"node {base}: count", count)
        if not isinstance(n.get("command", None), str):
            raise TopologyError(f"node {base}: a command (a string) is needed")
        sw = n.get("switch", next(iter(switches)) if len(switches) == 1 else None)
        if sw is None:
            raise TopologyError(f"node {base}: which switch? (switch = one of "
                                f"{', '.join(switches)})")
        if sw not in switches:
            raise TopologyError(f"node {base}: switch {sw!r} is not defined "
                                f"(switches: {', '.join(switches)})")
        for i in range(1, (count or 1) + 1):
            name = f"{base}{i}" if count else base
            if name in names:
                raise TopologyError(f"{name!r} is defined twice")
            names.add(name)
            idx = len(nodes)
            if idx >= 250:
                raise TopologyError("at most 250 nodes")
            lat = _positive(f"node {name}: latency_ns", n.get("latency_ns", d["latency_ns"]))
            gbps = n.get("gbps", d["gbps"])
            buf = _positive(f"node {name}: buffer_kb", n.get("buffer_kb", d["buffer_kb"]),
                            zero_ok=True)
            pkgs, add = n.get("pkgs", []), n.get("add", [])
            if not (isinstance(pkgs, list) and all(isinstance(p, str) for p in pkgs)):
                raise TopologyError(f"node {name}: pkgs = [\"PACKAGE\", ...]")
            if not (isinstance(add, list) and all(isinstance(p, str) and ":" in p for p in add)):
                raise TopologyError(f"node {name}: add = [\"HOST_PATH:/GUEST/PATH\", ...]")
            nodes.append(Node(
                name=name, command=n["command"].replace("{i}", str(i)).replace(
                    "{name}", name),
                service=bool(n.get("service", False)), switch=sw,
                ip=n.get("ip", f"10.0.3.{idx + 1}") if not count else f"10.0.3.{idx + 1}",
                mac=f"52:54:00:ac:c2:{idx + 1:02x}", latency_ns=lat,
                bps=int(gbps * 1e9), buffer=buf * 1024,
                smp=_positive(f"node {name}: smp", n.get("smp", d["smp"])),
                mem=str(n.get("mem", d["mem"])), host=n.get("host"), pkgs=tuple(pkgs),
                add=tuple(accio.parse_add(x) for x in add)))
    if not nodes:
        raise TopologyError(f"{source}: no [[node]]")
    if all(n.service for n in nodes):
        raise TopologyError("every node is a service: nothing would end the run "
                            "(a node without service = true ends it)")
    ips = {}
    for n in nodes:
        try:
            addr = ipaddress.IPv4Address(n.ip)
        except ValueError:
            raise TopologyError(f"node {n.name}: ip {n.ip!r} is not an IPv4 address") from None
        if ipaddress.IPv4Network(f"{addr}/24", strict=False) != \
                ipaddress.IPv4Network(f"{nodes[0].ip}/24", strict=False):
            raise TopologyError(f"node {n.name}: ip {n.ip} is not in {nodes[0].ip}/24, the "
                                "one subnet of the cluster")
        if n.ip in ips:
            raise TopologyError(f"nodes {ips[n.ip]} and {n.name} have the same ip {n.ip}")
        ips[n.ip] = n.name

    def ip_of(m):
        if m.group(1) not in ips.values():
            raise TopologyError(f"{{ip:{m.group(1)}}}: no node is called {m.group(1)!r}")
        return next(ip for ip, name in ips.items() if name == m.group(1))
    for n in nodes:
        n.command = re.sub(r"\{ip:([A-Za-z0-9_.-]+)\}", ip_of, n.command)

    links = []
    for k, lk in enumerate(t.get("link", [])):
        _check_keys(f"link {k + 1}", lk, LINK_KEYS)
        ends = lk.get("between")
        if not (isinstance(ends, list) and len(ends) == 2 and all(isinstance(e, str) for e in ends)):
            raise TopologyError(f"link {k + 1}: between = [\"SWITCH\", \"SWITCH\"] is needed")
        for e in ends:
            if e not in switches:
                what = "a node (a node's link is its switch = ...)" if e in names else "unknown"
                raise TopologyError(f"link {k + 1}: {e!r} is {what}; links join switches")
        if ends[0] == ends[1]:
            raise TopologyError(f"link {k + 1}: joins {ends[0]} to itself")
        lat = _positive(f"link {'-'.join(ends)}: latency_ns", lk.get("latency_ns", d["latency_ns"]))
        links.append(Link(tuple(ends), lat, int(lk.get("gbps", d["gbps"]) * 1e9),
                          _positive(f"link {'-'.join(ends)}: buffer_kb",
                                    lk.get("buffer_kb", d["buffer_kb"]), zero_ok=True) * 1024,
                          bool(lk.get("blocked", False))))
    timeout = t.get("timeout_s", 900)
    topo = Topology(nodes, switches, links, icount, float(timeout), source)
    topo.fwd = _forwarding(topo)
    return topo


def _forwarding(topo):
    """Each switch's port toward each node, over the tree of unblocked
    links; a loop of unblocked links is an error (no spanning tree
    protocol runs: the rule is the file's blocked = true)."""
    adj = {s: [] for s in topo.switches}
    parent = {s: s for s in topo.switches}

    def root(s):
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s
    for k, lk in enumerate(topo.links):
        if lk.blocked:
            continue
        a, b = lk.ends
        if root(a) == root(b):
            raise TopologyError(
                f"the links between switches form a loop through {a}-{b}; frames "
                "would circle for ever (no spanning tree protocol runs): mark one "
                "link of the loop blocked = true")
        parent[root(a)] = root(b)
        adj[a].append((b, k))
        adj[b].append((a, k))
    groups = {}
    for s in topo.switches:
        groups.setdefault(root(s), []).append(s)
    if len(groups) > 1:
        raise TopologyError("the switches are not all connected: " + " | ".join(
            ", ".join(g) for g in groups.values()))
    fwd = {s: {} for s in topo.switches}
    for n in topo.nodes:
        # from the node's switch outwards: the link each switch takes back
        seen, frontier = {n.switch}, [n.switch]
        fwd[n.switch][n.name] = ("node", n.name)
        while frontier:
            s = frontier.pop()
            for t, k in adj[s]:
                if t not in seen:
                    seen.add(t)
                    fwd[t][n.name] = ("link", k)
                    frontier.append(t)
    return fwd


def load(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise TopologyError(f"{path}: {e.strerror}") from None
    return parse(text, path)


# ---- placement --------------------------------------------------------------

def place(topo, hosts):
    """Rank of each node: its `host` (a name in hosts, or an index) or, for
    the rest, contiguous blocks in file order."""
    if not hosts:
        return [0] * len(topo.nodes)
    free = [k for k, n in enumerate(topo.nodes) if n.host is None]
    ranks = [0] * len(topo.nodes)
    for k, n in enumerate(topo.nodes):
        if n.host is not None:
            if isinstance(n.host, int) and 0 <= n.host < len(hosts):
                ranks[k] = n.host
            elif n.host in hosts:
                ranks[k] = hosts.index(n.host)
            else:
                raise TopologyError(f"node {n.name}: host {n.host!r} is not among "
                                    f"the hosts ({', '.join(hosts)})")
    for j, k in enumerate(free):
        ranks[k] = j * len(hosts) // len(free)
    return ranks


# ---- network namespaces as hosts --------------------------------------------

class NsHosts:
    """N network namespaces joined by a bridge in a namespace of their own:
    hosts for mpirun on this machine (10.99.0.1, .2, ...). Needs root."""

    def __init__(self, n):
        if os.geteuid() != 0:
            raise AccioError("namespaces as hosts need root (ip netns)")
        self.tag = f"accio{os.getpid() % 100000}"
        self.names = [f"{self.tag}-h{k}" for k in range(n)]
        self.ips = [f"10.99.0.{k + 1}" for k in range(n)]
        self.bridge_ns = f"{self.tag}-net"
        self.map = None

    def _ip(self, *args):
        subprocess.run(["ip", *args], check=True, capture_output=True, text=True)

    def __enter__(self):
        try:
            self._ip("netns", "add", self.bridge_ns)
            self._ip("-n", self.bridge_ns, "link", "add", "br0", "type", "bridge")
            self._ip("-n", self.bridge_ns, "link", "set", "br0", "up")
            for k, (ns, ip) in enumerate(zip(self.names, self.ips)):
                self._ip("netns", "add", ns)
                self._ip("-n", ns, "link", "set", "lo", "up")
                self._ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name",
                         f"p{k}", "netns", self.bridge_ns)
                self._ip("-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
                self._ip("-n", ns, "link", "set", "eth0", "up")
                self._ip("-n", self.bridge_ns, "link", "set", f"p{k}", "master", "br0")
                self._ip("-n", self.bridge_ns, "link", "set", f"p{k}", "up")
        except subprocess.CalledProcessError as e:
            self.__exit__()
            raise AccioError(f"namespaces: {' '.join(e.cmd)}: {e.stderr.strip()}") from None
        fd, self.map = tempfile.mkstemp(prefix="accio-nsmap-")
        with os.fdopen(fd, "w") as f:
            f.writelines(f"{ip} {ns}\n" for ip, ns in zip(self.ips, self.names))
        return self

    def __exit__(self, *exc):
        for ns in self.names + [self.bridge_ns]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        if self.map and os.path.exists(self.map):
            os.unlink(self.map)


# ---- a run ------------------------------------------------------------------

@dataclass
class ClusterResult:
    results: dict               # node name -> accio.Result
    stats: dict                 # the hub's counts (accio-switch's stats.json)
    wall_s: float
    ranks: int
    barriers: dict = field(default_factory=dict)  # name -> read_barriers()


def read_barriers(path):
    """A SoC's trace of the shared barrier (accio-nic.lockstep-trace): a
    (b, run_ns, wait_ns) for each barrier it reached, in order: the
    barrier's virtual time, the wall time the SoC ran since it left the
    one before (0 at its first), the wall time it waited for the others."""
    with open(path, "rb") as f:
        data = f.read()
    return [tuple(x) for x in struct.iter_unpack("=3Q", data[:len(data) - len(data) % 24])]


def window_wall(barriers, lead=0):
    """The wall time in ns that the SoCs' traced runs between barriers
    (read_barriers(), {name: [...]}) add up to when waiting costs nothing
    and a SoC may begin the run that ends at a barrier once every other
    has reached the barrier lead + 1 before it: lead 0 is the barrier (the
    sum over barriers of the longest run), a larger lead a window protocol
    that lets a SoC run that many barrier steps ahead of the slowest.
    Barriers are matched by their virtual time; a SoC constrains the others
    only at the barriers it reached."""
    times = sorted({b for tr in barriers.values() for b, _, _ in tr})
    idx = {b: k for k, b in enumerate(times)}
    runs = {name: {idx[b]: run for b, run, _ in tr} for name, tr in barriers.items()}
    fin = {name: {} for name in barriers}      # name -> {k: wall at reaching k}
    for k in range(len(times)):
        gate = max((f[k - 1 - lead] for f in fin.values() if k - 1 - lead in f), default=0)
        for name, r in runs.items():
            if k in r:
                own = fin[name].get(k - 1, 0)
                fin[name][k] = max(own, gate) + r[k]
    return max((max(f.values()) for f in fin.values() if f), default=0)


def _node_files(topo, run_dir, ranks, pcap_dir, timing, q, gw, layers, lines, spin, shm,
                trace):
    """Each node's initrd (the image, its packages, its files, its command)
    and QEMU command line; its line of the plan."""
    for k, n in enumerate(topo.nodes):
        entries = [e for h, g in n.add for e in accio.host_entries(h, g)]
        initrd = accio.initrd_with({"accio/script": (n.command + "\n").encode()},
                                   [layers[n.pkgs]] if n.pkgs else [], entries)
        dst = os.path.join(run_dir, f"{n.name}.initrd")
        shutil.move(initrd, dst)
        sock = os.path.join(run_dir, f"{n.name}.sock")
        cmd = accio.qemu_cmdline(
            n.smp, n.mem, topo.icount, f"lockstep:connect:{q}:{sock}", dst,
            cmdline_extra=f"accio.ip={n.ip}/24 accio.gw={gw}", mac=n.mac,
            seed=accio.SEED + k, timing=timing is None)
        if timing is not None:
            cmd += accio.timing_qemu_args(timing)
        cmd += list(barrier_args(spin, shm, k))
        if shm and trace:
            cmd += ["-global", "accio-nic.lockstep-trace=" +
                    os.path.join(run_dir, f"{n.name}.barriers")]
        argv = os.path.join(run_dir, f"{n.name}.argv")
        with open(argv, "wb") as f:
            f.write(b"".join(a.encode() + b"\0" for a in cmd))
        pcap = os.path.join(os.path.abspath(pcap_dir), f"{n.name}.pcap") if pcap_dir else "-"
        lines.append(f"node {k} {n.name} {ranks[k]} {int(n.service)} {sock} "
                     f"{os.path.join(run_dir, n.name + '.console')} {argv} "
                     f"{n.mac.replace(':', '')} {pcap}")


# A side of a barrier looks this long for the other side's message before it
# sleeps, yielding its core between looks (accio_lockstep.h, ls_wait_in):
# waking a sleeping core costs tens of microseconds on a virtual machine.
SPIN_NS = 200000


def barrier_args(spin, shm, k):
    """QEMU's options for the barriers of SoC k: its waits look spin ns,
    and with shm (the hub's shared barrier, else None) it meets the others
    there at place k."""
    return (("-global", f"accio-nic.lockstep-spin-ns={spin}") +
            (("-global", f"accio-nic.lockstep-shm={k}:{shm}") if shm else ()))


def spin_ns(spin_us=None):
    """How long a barrier's waits look before they sleep: spin_us when
    given, else SPIN_NS. The looks yield the core, so they pay off even
    where SoCs outnumber cores (eval/README.md, accio cluster)."""
    if spin_us is None:
        return SPIN_NS
    if spin_us < 0:
        raise AccioError(f"spin_us must not be negative, not {spin_us}")
    return int(spin_us * 1000)


def write_plan(topo, run_dir, ranks, pcap_dir=None, timing=None, grace=5, spin=0,
               shared=True, trace=False):
    """The hub's plan, each node's QEMU command line and initrd; spin: the
    barriers' spin in ns (spin_ns()). shared: with one rank, the SoCs meet
    at every barrier in memory shared with the hub, which takes part only
    where the network has something to do (accio_lockstep.h). trace: with
    the shared barrier, each SoC writes NAME.barriers in run_dir, a record
    for each barrier (read_barriers())."""
    q = topo.quantum
    switch_idx = {s: k for k, s in enumerate(topo.switches)}
    node_idx = {n.name: k for k, n in enumerate(topo.nodes)}
    lines = [f"counts {len(topo.nodes)} {len(topo.switches)} "
             f"{len(topo.nodes) + len(topo.links)}",
             f"quantum {q}", f"timeouts 120 {int(topo.timeout_s)} {grace}",
             f"ranks {max(ranks) + 1}", f"stats {os.path.join(run_dir, 'stats.json')}",
             f"spin {spin}"]
    shm = os.path.join(run_dir, "barrier") if shared and max(ranks) == 0 else None
    if shm:
        lines.append(f"shm {shm}")
    gw = topo.nodes[0].ip
    layers = {}
    try:
        for n in topo.nodes:
            if n.pkgs and n.pkgs not in layers:
                layers[n.pkgs] = accio.debian_layer(list(n.pkgs))
        _node_files(topo, run_dir, ranks, pcap_dir, timing, q, gw, layers, lines, spin, shm,
                    trace)
    finally:
        for layer in layers.values():
            os.unlink(layer)
    for k, s in enumerate(topo.switches):
        lines.append(f"switch {k} {s} {topo.switches[s]}")
    for k, n in enumerate(topo.nodes):
        lines.append(f"link {k} n {k} s {switch_idx[n.switch]} {n.latency_ns} {n.bps} {n.buffer}")
    for j, lk in enumerate(topo.links):
        a, b = (switch_idx[e] for e in lk.ends)
        lines.append(f"link {len(topo.nodes) + j} s {a} s {b} {lk.latency_ns} {lk.bps} "
                     f"{lk.buffer}")
    for s, table in topo.fwd.items():
        for node, (kind, v) in table.items():
            link = node_idx[node] if kind == "node" else len(topo.nodes) + v
            lines.append(f"fwd {switch_idx[s]} {topo.node(node).mac.replace(':', '')} {link}")
    plan = os.path.join(run_dir, "plan")
    with open(plan, "w") as f:
        f.write("\n".join(lines) + "\n")
    return plan


class Wire:
    """The hub alone, for SoCs that someone else starts (accio pair
    --lockstep): one switch, a port for each of ports = {name: (mac,
    latency_ns, service)}; .sock[name] is the socket the SoC's NIC connects
    to, with lockstep-ns = .quantum. A frame crosses from one port to
    another in the sum of their latencies; nothing is serialised or queued
    (each NIC serialises its own frames). .qemu_args[name] are the QEMU
    options of that port's SoC: its waits, as the hub's, look for spin_ns()
    before they sleep, and it meets the other SoCs at every barrier in
    shared memory. close() waits for the hub, which ends once every SoC
    that is not a service has left."""

    def __init__(self, ports, timeout_s=3600):
        if not os.path.exists(SWITCH_BIN):
            raise AccioError(f"missing {SWITCH_BIN} (run: make build)")
        self.dir = tempfile.mkdtemp(prefix="accio-wire-")
        self.quantum = 2 * min(lat for _, lat, _ in ports.values())
        self.sock = {}
        shm = os.path.join(self.dir, "barrier")
        lines = [f"counts {len(ports)} 1 {len(ports)}", f"quantum {self.quantum}",
                 f"timeouts 300 {int(timeout_s)} 5", f"spin {spin_ns()}", f"shm {shm}",
                 "switch 0 wire 0"]
        self.qemu_args = {}
        for k, (name, (mac, lat, service)) in enumerate(ports.items()):
            self.sock[name] = os.path.join(self.dir, f"{name}.sock")
            self.qemu_args[name] = barrier_args(spin_ns(), shm, k)
            m = mac.replace(":", "")
            lines += [f"node {k} {name} 0 {int(service)} {self.sock[name]} - - {m} -",
                      f"link {k} n {k} s 0 {lat} 0 0", f"fwd 0 {m} {k}"]
        plan = os.path.join(self.dir, "plan")
        with open(plan, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.log = open(os.path.join(self.dir, "hub.log"), "w+")
        self.proc = subprocess.Popen([SWITCH_BIN, plan], stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not all(os.path.exists(p) for p in self.sock.values()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise AccioError("the lockstep hub did not start: " + self.output())
            time.sleep(0.01)

    def output(self):
        self.log.seek(0)
        return self.log.read()

    def close(self, timeout=10):
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def _blocked_links_out(topo):
    """Blocked links carry nothing: they are left out of the plan."""
    kept = [lk for lk in topo.links if not lk.blocked]
    if len(kept) == len(topo.links):
        return topo
    # forwarding was computed on indices of topo.links: recompute on the kept
    t = Topology(topo.nodes, topo.switches, kept, topo.icount, topo.timeout_s, topo.source)
    t.fwd = _forwarding(t)
    return t


def _mpirun(hosts, ranks, nshosts=None):
    cmd = ["mpirun", "--host", ",".join(f"{h}:1" for h in hosts), "-np", str(ranks),
           "--mca", "btl", "tcp,self"]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    if nshosts:
        net = "10.99.0.0/24"
        cmd += ["--mca", "plm_rsh_agent", NS_AGENT, "--mca", "oob_tcp_if_include", net,
                "--mca", "btl_tcp_if_include", net]
        cmd = ["ip", "netns", "exec", nshosts.names[0]] + cmd
    return cmd


def run(topo, hosts=None, ns_hosts=0, pcap_dir=None, timing=None, keep=None,
        verbose=False, mpi=False, run_dir=None, spin_us=None, shared_barrier=True,
        barrier_trace=False):
    """Boot the topology's SoCs and run their commands; a ClusterResult.

    hosts: host names for mpirun (one rank each; the run directory must be
    on a file system every host sees at the same path: run_dir, a folder
    there, which holds the run's own folder). ns_hosts: that many network
    namespaces of this machine as the hosts. mpi: mpirun even on one host.
    keep: a directory to keep the run's files in. spin_us: how long a
    barrier's waits look before they sleep (default: spin_ns()).
    shared_barrier: on one host, the SoCs meet at every barrier in shared
    memory and the hub joins only where the network has work (False: every
    barrier goes through the hub, as across hosts). barrier_trace: with the
    shared barrier, the result's .barriers has every SoC's barriers
    (read_barriers())."""
    if shutil.which("mpirun") is None and (hosts or ns_hosts or mpi):
        raise AccioError("mpirun not found (Debian's openmpi-bin: make bootstrap)")
    if not os.path.exists(SWITCH_BIN):
        raise AccioError(f"missing {SWITCH_BIN} (run: make build)")
    topo = _blocked_links_out(topo)
    if pcap_dir:
        os.makedirs(pcap_dir, exist_ok=True)
    if run_dir:
        os.makedirs(run_dir, exist_ok=True)
    run_dir = tempfile.mkdtemp(prefix="accio-cl-", dir=run_dir)
    ns = None
    try:
        if ns_hosts:
            ns = NsHosts(ns_hosts).__enter__()
            hosts = ns.ips
        ranks = place(topo, hosts)
        plan = write_plan(topo, run_dir, ranks, pcap_dir, timing,
                          spin=spin_ns(spin_us), shared=shared_barrier,
                          trace=barrier_trace)
        nranks = len(hosts) if hosts else 1
        if hosts or mpi:
            cmd = _mpirun(hosts or ["localhost"], nranks, ns) + [SWITCH_BIN, plan]
        else:
            cmd = [SWITCH_BIN, plan]
        env = dict(os.environ)
        if ns:
            env["ACCIO_NS_MAP"] = ns.map
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                               timeout=topo.timeout_s + 180)
        except subprocess.TimeoutExpired:
            raise AccioError(f"the cluster did not end within {topo.timeout_s + 180:.0f} s "
                             f"(files in {keep or run_dir + '-failed'})") from None
        wall = time.monotonic() - t0
        if verbose:
            print(p.stdout + p.stderr, end="")
        if p.returncode:
            keep = keep or run_dir + "-failed"
            err = p.stderr.strip()[-2000:]
            tails = ""
            for c in sorted(set(re.findall(r"see (\S+\.console)", err))):
                if os.path.exists(c):
                    with open(c, errors="replace") as f:
                        tails += f"\n-- {os.path.basename(c)}, its end:\n" + f.read()[-1500:]
            raise AccioError(f"accio-switch exited {p.returncode}: "
                             f"{err.replace(run_dir, keep)}{tails}")
        results = {}
        for n in topo.nodes:
            with open(os.path.join(run_dir, n.name + ".console"), errors="replace") as f:
                console = f.read()
            start = console.find(accio.BEGIN)
            m = accio.END_RE.search(console, max(start, 0))
            if start < 0:
                raise AccioError(f"node {n.name} did not start its command (files in "
                                 f"{keep or run_dir + '-failed'}); console tail:\n"
                                 + console[-3000:])
            if m:
                # a service still running at the end was stopped (SIGTERM: 143)
                res = accio.Result(int(m.group(1)), console[start + len(accio.BEGIN) + 1:
                                                            m.start()], console, wall,
                                   stopped=n.service and "@@ACCIO-STOP@@" in console[start:])
            elif n.service:
                res = accio.Result(143, console[start + len(accio.BEGIN) + 1:], console,
                                   wall, stopped=True)
            else:
                raise AccioError(f"node {n.name} ended without a result; console tail:\n"
                                 + console[-3000:])
            results[n.name] = res
        with open(os.path.join(run_dir, "stats.json")) as f:
            stats = json.load(f)
        barriers = {n.name: read_barriers(os.path.join(run_dir, n.name + ".barriers"))
                    for n in topo.nodes
                    if os.path.exists(os.path.join(run_dir, n.name + ".barriers"))}
        return ClusterResult(results, stats, wall, nranks, barriers)
    except AccioError:
        keep = keep or run_dir + "-failed"     # what went wrong stays to be read
        raise
    finally:
        if ns:
            ns.__exit__()
        if keep:
            if os.path.exists(keep):
                shutil.rmtree(keep)
            shutil.copytree(run_dir, keep, ignore=shutil.ignore_patterns("*.initrd", "*.sock"))
        shutil.rmtree(run_dir, ignore_errors=True)


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="accio cluster", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("topology")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--hosts", metavar="A,B,...",
                   help="run across these hosts with mpirun (one rank per host)")
    g.add_argument("--hostfile", metavar="FILE",
                   help="the hosts, one per line (mpirun's first column)")
    g.add_argument("--ns-hosts", type=int, default=0, metavar="N",
                   help="N network namespaces of this machine as the hosts (root)")
    ap.add_argument("--mpi", action="store_true", help="mpirun even on one host")
    ap.add_argument("--run-dir", metavar="DIR",
                    help="where the run's files go (across hosts: a shared file system)")
    ap.add_argument("--pcap-dir", metavar="DIR",
                    help="NODE.pcap: each node's wire, as its switch port saw it")
    ap.add_argument("--keep", metavar="DIR", help="keep the consoles, plan and stats here")
    ap.add_argument("--check", action="store_true", help="only check the topology")
    ap.add_argument("--spin-us", type=float, metavar="US",
                    help="how long a barrier's waits look for the other side, yielding the "
                    f"core between looks, before they sleep (default {SPIN_NS // 1000})")
    ap.add_argument("--no-shared-barrier", action="store_true",
                    help="on one host too, every barrier goes through the hub (as across "
                    "hosts) instead of the SoCs meeting in shared memory")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    hosts = None
    if a.hosts:
        hosts = [h for h in a.hosts.split(",") if h]
    elif a.hostfile:
        with open(a.hostfile) as f:
            hosts = [ln.split()[0] for ln in f if ln.strip() and not ln.startswith("#")]
    try:
        topo = load(a.topology)
        if a.check:
            print(f"{a.topology}: {len(topo.nodes)} nodes, {len(topo.switches)} switches, "
                  f"lookahead {topo.quantum} ns")
            return 0
        r = run(topo, hosts, a.ns_hosts, a.pcap_dir, keep=a.keep, verbose=a.verbose,
                mpi=a.mpi, run_dir=a.run_dir, spin_us=a.spin_us,
                shared_barrier=not a.no_shared_barrier)
    except AccioError as e:
        print(f"accio cluster: {e}", file=__import__("sys").stderr)
        return 125
    rc = 0
    for name, res in r.results.items():
        print(f"== {name} (rc {res.rc}{', stopped' if res.stopped else ''})")
        print(res.output, end="" if res.output.endswith("\n") or not res.output else "\n")
        if not res.stopped:
            rc = rc or res.rc
    drops = sum(lk["drops"] for lk in r.stats["links"])
    print(f"== network: {r.stats['barriers']} barriers ({r.stats['skips']} skips, "
          f"{r.stats['barriers_with_hub']} with the hub), "
          f"{r.stats['end_ns'] / 1e6:.3f} ms of virtual time, {drops} frames dropped, "
          f"{r.wall_s:.1f} s wall on {r.ranks} host{'s' if r.ranks > 1 else ''}")
    return rc
