"""What the DPDK tests share (test_dpdk.py on Debian's DPDK through AF_XDP,
test_dpdk_pmd.py on the NIC's own poll-mode driver): the Linux echo client
of the other SoC, and the dispatcher run with 4 worker processes."""
import re

import accio


def kv(text):
    return dict(re.findall(r"^(\w+)=(\S+)$", text, re.M))


def echo_client(n):
    """Linux sockets on the client SoC: wait until the server echoes (its
    DPDK setup takes seconds), then n datagrams of 16..1472 B, every byte
    checked."""
    return ("(for i in $(seq 60); do udp_echo_client -s 10.0.3.1 -p 7000 -n 1 -t 1000 -r 0 -q "
            ">/dev/null && exit 0; done; exit 1) && "
            f"udp_echo_client -s 10.0.3.1 -p 7000 -n {n} -m 16 -M 1472 -t 2000 -r 0 -q; "
            "echo echo_rc=$?")


def run_dispatcher(prep, dispatch, primary_eal, secondary_eal, pkgs, add, timeout):
    """The dispatcher (EAL primary, owns the port) and 4 worker processes
    (secondaries) on the server SoC, 400 datagrams from the client SoC's
    echo client: every byte checked, every worker echoed its quarter."""
    workers = " ".join(
        f"{dispatch} --proc-type=secondary {secondary_eal} --lcores={w + 1}@{w % 3 + 1} "
        f"-- -w {w} > /tmp/w{w}.out 2>&1 &" for w in range(4))
    server = (f"{prep} && ({dispatch} -l 0 {primary_eal} -- -T 4 -l 10.0.3.1 -I 3 "
              "> /tmp/d.out 2>&1; echo dispatch_rc=$? >> /tmp/d.out) & "
              "for i in $(seq 100); do grep -q 'dispatcher ready' /tmp/d.out && break; "
              f"sleep 0.2; done; {workers} wait; cat /tmp/d.out /tmp/w*.out")
    rs, rc = accio.run_pair(server, echo_client(400), pkgs=pkgs, add=add, timeout=timeout,
                            grace=15)
    assert rc.rc == 0 and "echo_rc=0" in rc.output, rc.output + "\n--server--\n" + rs.output
    assert "ok=400" in rc.output and "bad=0" in rc.output, rc.output
    out = rs.output
    assert rs.rc == 0 and "dispatch_rc=0" in out and "workers_ready=4" in out, out
    handed = [int(x) for x in re.findall(r"^handed_w\d=(\d+)", out, re.M)]
    echoed = [int(x) for x in re.findall(r"^worker=\d echoed=(\d+) dropped=0$", out, re.M)]
    assert len(handed) == 4 and len(echoed) == 4, out
    assert sum(echoed) >= 401 and min(echoed) >= 100, out
