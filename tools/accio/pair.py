"""Two SoCs joined by one wire (accio pair): a server SoC and a client SoC,
on QEMU dgram netdevs or on the lockstep wire of accio cluster's hub."""
import os
import time

from . import diag
from .config import AccioError, Machine
from .host import free_udp_port
from .machine import END_RE, Session

PAIR_NET = {"server": ("10.0.3.1/24", "52:54:00:ac:c1:01"),
            "client": ("10.0.3.2/24", "52:54:00:ac:c1:02")}
# what run_pair sets for each SoC itself
OWN_FIELDS = ("wire", "mac", "cmdline_extra", "pcap")


def server_diagnosis(srv):
    """The server SoC's side of a client that did not finish: its
    diagnostics (diag.diagnose) while it still runs, kept in its own log."""
    if srv.guest.proc.poll() is not None:
        return f"-- the server SoC had ended (QEMU exit {srv.guest.proc.returncode})"
    text = srv.guest.diagnose("its client SoC did not finish")
    console = srv.guest.console()
    path = diag.write_log(f"{srv.stamp}-server.log", srv.command, srv.cmd, console, text)
    return f"-- the server SoC (log: {path})\n{text}\nserver console tail:\n{console[-3000:]}"


def run_pair(server, client, *, machine=None, timeout=600, verbose=False, add=(), pkgs=(),
             grace=5.0, lockstep=None, pcap_dir=None, **fields):
    """Two SoCs joined by one wire (QEMU dgram netdevs on 127.0.0.1): the
    server SoC (10.0.3.1) runs `server`, the client SoC (10.0.3.2) runs
    `client`. Once the client's command has ended (and `grace` seconds
    more), the server's command and everything it started is stopped
    (SIGTERM). Returns (server Result, client Result); a server stopped
    that way has rc 143 and .stopped set.

    machine, or its fields as keywords (smp=, mem=, icount=, ...): both
    SoCs; their wires, MACs, addresses and captures are the pair's own.
    add, pkgs: as run(), on both.
    lockstep=NS: the wire is the NIC model's lockstep wire instead (one-way
    latency NS of virtual time; needs icount, 4 if not given): both SoCs
    boot together and their virtual clocks advance in lockstep, so the pair
    repeats exactly from run to run. The server's command then starts at
    about the client's, so a client must wait for its server (retry()).
    pcap_dir: each SoC's wire, captured in virtual time, in
    pcap_dir/server.pcap and pcap_dir/client.pcap.
    A client that passes timeout raises AccioError with its diagnostics and
    the server SoC's (server_diagnosis)."""
    own = [f for f in OWN_FIELDS if f in fields]
    if own:
        raise TypeError(f"run_pair() sets {', '.join(own)} itself")
    base = Machine.of(machine, **fields)
    hub = None
    if lockstep is not None:
        # the 2-node case of accio cluster: both NICs on the hub's switch,
        # half the latency on each side (tools/cluster.py, which imports
        # this package: imported here, when it is needed)
        import cluster
        if base.icount is None:
            base = Machine.of(base, icount=4)
        ns = int(lockstep)
        if ns < 2:
            raise AccioError("a lockstep wire needs a latency of at least 2 ns")
        hub = cluster.Wire({"server": (PAIR_NET["server"][1], ns // 2, True),
                            "client": (PAIR_NET["client"][1], ns - ns // 2, False)})
        wires = {r: f"lockstep:connect:{hub.quantum}:{hub.sock[r]}" for r in hub.sock}
    else:
        pa, pb = free_udp_port(), free_udp_port()
        while pb == pa:
            pb = free_udp_port()
        wires = {"server": f"dgram:{pa}:{pb}", "client": f"dgram:{pb}:{pa}"}
    peer = {"server": "10.0.3.2", "client": "10.0.3.1"}
    sess = {}
    try:
        for role, cmd in (("server", server), ("client", client)):
            ip, mac = PAIR_NET[role]
            m = Machine.of(base, wire=wires[role], mac=mac,
                           cmdline_extra=f"accio.ip={ip} accio.gw={peer[role]}",
                           qemu_extra=base.qemu_extra + (hub.qemu_args[role] if hub else ()),
                           pcap=os.path.join(pcap_dir, f"{role}.pcap") if pcap_dir else None)
            sess[role] = Session(cmd, machine=m, verbose=verbose, add=add, pkgs=pkgs)
            if role == "server" and lockstep is None and not sess[role].started(timeout):
                raise AccioError("the server SoC did not start its command:\n" +
                                 sess[role].guest.console()[-3000:])
        try:
            rc = sess["client"].finish(timeout, "last-run-client.log")
        except AccioError as e:
            raise AccioError(f"{e}\n{server_diagnosis(sess['server'])}") from None
        deadline = time.monotonic() + grace
        srv = sess["server"]
        while srv.guest.proc.poll() is None and END_RE.search(srv.guest.console()) is None \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        stopped = END_RE.search(srv.guest.console()) is None
        if stopped:
            srv.stop()
        rs = srv.finish(timeout, "last-run-server.log")
        rs.stopped = stopped
        return rs, rc
    finally:
        for s in sess.values():
            s.guest.kill()
        if hub:
            hub.close()
