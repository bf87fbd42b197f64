"""UDP servers, unmodified, accelerated on one SoC against clients
accelerated on the other: Debian's servers in their default socket setup
(a wildcard address with IP_PKTINFO, a dual-stack IPv6 socket beside it,
a receive thread on epoll with recvmmsg), and the fork models of servers
(prefork, a process per datagram on the listening socket)."""
import os
import re
import struct

import pytest

import accio
from conftest import GUEST_PROGS, debian_unavailable

TIMEOUT = 600
MUSL = "LD_PRELOAD=/usr/lib/libaccio.so ACCIO_STATS=1"
GLIBC = "LD_PRELOAD=/usr/lib/riscv64-linux-gnu/libaccio.so ACCIO_STATS=1"
N_DNS = 40
N_LOG = 40
N_FORK = 12


def stat_rows(text, command, prefix=False):
    """`accio stat` lines of one command (prefix: of the commands that
    start with it), as dicts by column. The columns are counted from the
    end, since a command may hold spaces ("nsd: server 1")."""
    lines = text.splitlines()
    cols = next(l for l in lines if l.startswith("PID ")).split()
    rows = []
    for line in lines:
        parts = line.split()
        if len(parts) < len(cols) or not parts[0].isdigit():
            continue
        tail = parts[len(parts) - (len(cols) - 2):]
        name = " ".join(parts[1:len(parts) - len(tail)])
        if name == command or (prefix and name.startswith(command)):
            rows.append(dict(zip(cols, parts[:1] + [name] + tail)))
    return rows


def accio_stats(text):
    return [dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", line))
            for line in re.findall(r"^accio: (fd=.*)$", text, re.M)]


def wait_for(cond, seconds):
    """Shell: poll until cond holds, at most seconds."""
    return f"for i in $(seq {seconds * 5}); do {cond} && break; sleep 0.2; done;"


@pytest.mark.skipif(debian_unavailable() is not None, reason=str(debian_unavailable()))
def test_debian_servers_in_their_default_setup_accelerated():
    """dnsmasq (DNS: wildcard socket, IP_PKTINFO on receive and send, poll,
    an IPv6 socket too) answers drill (and dig, which uses an io_uring and
    so stays on the kernel path, visibly), and rsyslogd (syslog: imudp's thread
    on epoll, edge-triggered, with recvmmsg) logs what socat sends; both
    servers and both clients preloaded. Every answer is checked, every
    message is in the log, and the servers' rows carried their traffic:
    the dual-stack IPv6 sockets are on the kernel path, visibly."""
    hosts = " ".join(f"10.1.{i}.{i} h{i}.test" for i in range(1, N_DNS + 1))
    server = (
        f"echo {hosts} | xargs -n 2 > /tmp/hosts;"
        "printf 'module(load=\"imudp\")\\ninput(type=\"imudp\" port=\"514\")\\n"
        "*.* /tmp/syslog.out\\n' > /tmp/rsyslog.conf;"
        f"{GLIBC} dnsmasq -d -C /dev/null -u root --no-resolv --no-hosts "
        "--addn-hosts=/tmp/hosts > /tmp/dnsmasq.log 2>&1 &"
        f"{GLIBC} rsyslogd -n -f /tmp/rsyslog.conf -i /tmp/rsyslog.pid > /tmp/rsyslog.log 2>&1 &"
        "sleep 2; accio stat; echo @@ready@@;"
        + wait_for(f"[ $(grep -c accio-msg /tmp/syslog.out 2>/dev/null) -ge {N_LOG} ] && "
                   f"accio stat | awk '$2 == \"dnsmasq\" && $10 >= {N_DNS} {{f=1}} "
                   f"END {{exit !f}}'", 150)
        + "echo @@stat@@; accio stat; echo @@log@@; grep accio-msg /tmp/syslog.out;"
        "echo @@dnsmasq@@; cat /tmp/dnsmasq.log; kill %1 %2; wait")
    client = (
        # the server SoC may still be starting its servers
        wait_for("dig @10.0.3.1 h1.test +short +tries=1 +time=1 | grep -q 10.1.1.1", 60)
        # drill (ldns): plain sockets; every answer checked
        + f"for i in $(seq {N_DNS}); do echo h$i=$({GLIBC} drill @10.0.3.1 h$i.test A "
        "2>/tmp/drill.err | awk '/^h[0-9]+\\.test\\.[ \\t].*IN[ \\t]+A[ \\t]/ {print $NF}');"
        " cat /tmp/drill.err; done;"
        # dig (BIND 9.20): its event loop submits epoll changes through an
        # io_uring, which the library cannot see: on the kernel path, said so
        f"echo dig=$({GLIBC} dig @10.0.3.1 h1.test +short 2>/tmp/dig.err); cat /tmp/dig.err;"
        # syslog messages as any BSD syslog sender writes them (RFC 3164)
        f"for i in $(seq {N_LOG}); do echo '<14>accio-test: accio-msg-'$i | "
        f"{GLIBC} socat -u - UDP4:10.0.3.1:514; done;"
        "echo client_done")
    rs, rc = accio.run_pair(server, client, timeout=TIMEOUT, grace=60,
                            pkgs=("dnsmasq-base", "bind9-dnsutils", "ldnsutils", "rsyslog"))
    assert rc.rc == 0 and "client_done" in rc.output, rc.output + rc.console[-2000:]
    # every answer right, through the client's rows
    for i in range(1, N_DNS + 1):
        assert f"h{i}=10.1.{i}.{i}\n" in rc.output, rc.output
    assert "dig=10.1.1.1\n" in rc.output, rc.output
    st = accio_stats(rc.output)
    assert sum(s["rx_ring"] for s in st) >= N_DNS and \
        sum(s["tx_ring"] for s in st) >= N_DNS + N_LOG, st
    assert re.search(r"^accio: kernel-path fd=\d+ reason=io_uring rx_kernel=1 tx_kernel=1$",
                     rc.output, re.M), rc.output
    out = rs.output
    assert not rs.stopped, out
    stat = out.partition("@@stat@@")[2].partition("@@log@@")[0]
    log = out.partition("@@log@@")[2].partition("@@dnsmasq@@")[0]
    for i in range(1, N_LOG + 1):
        assert re.search(rf"accio-msg-{i}$", log, re.M), (i, log)
    # dnsmasq: its IPv4 socket on a row, queries in and answers out through
    # the rings (the answers carry IP_PKTINFO naming the row's source; the
    # client's first tries may reach the socket before its row and are
    # answered through the kernel); its IPv6 socket on the kernel path, said so
    dns = stat_rows(stat, "dnsmasq")
    ring = [r for r in dns if r["PATH"] == "ring"]
    assert len(ring) == 1, stat
    assert int(ring[0]["RX_RING"]) >= N_DNS and int(ring[0]["TX_RING"]) >= N_DNS, ring
    assert int(ring[0]["TX_KERNEL"]) <= int(ring[0]["RX_KERNEL"]), ring
    assert any(r["PATH"] == "kernel:ipv6" for r in dns), stat
    # rsyslogd: every message through its row
    rsys = [r for r in stat_rows(stat, "rsyslogd") if r["PATH"] == "ring"]
    assert rsys and sum(int(r["RX_RING"]) for r in rsys) >= N_LOG, stat


@pytest.mark.skipif(debian_unavailable() is not None, reason=str(debian_unavailable()))
def test_netperf_udp_tests_both_sides_accelerated():
    """netperf against netserver (Debian's netperf), both preloaded: a TCP
    control connection (the kernel's) sets up each test, netserver forks a
    child that opens the UDP data socket, and the test's length is kept by
    an alarm whose signal ends netperf's loop. UDP_RR and UDP_STREAM
    complete with their results, the client's data socket moves every
    datagram through its row, and so does netserver's child (sampled with
    accio stat while it runs)."""
    server = (f"{GLIBC} netserver -D -4 > /tmp/netserver.log 2>&1 & accio stat | head -1;"
              "while :; do accio stat | grep -w netserver; sleep 0.1; done")
    client = (f"for t in UDP_RR UDP_STREAM; do echo @@$t@@; {GLIBC} netperf -H 10.0.3.1"
              " -t $t -l 1 -- -r 64 -m 1024 2>&1; echo rc=$?; done")
    rs, rc = accio.run_pair(server, client, timeout=TIMEOUT, grace=1, pkgs=("netperf",))
    assert rc.rc == 0, rc.output + rc.console[-2000:]
    rr, stream = rc.output.split("@@UDP_RR@@")[1].split("@@UDP_STREAM@@")
    # UDP_RR: "send recv req resp elapsed rate" of the local socket sizes
    m = re.search(r"^\d+ +\d+ +64 +64 +[\d.]+ +([\d.]+) *$", rr, re.M)
    assert "rc=0" in rr and m and float(m.group(1)) > 100, rr
    (st,) = accio_stats(rr)
    # the alarm may end the test with one reply still in the ring, unread
    assert st["rx_pkts"] - 1 <= st["rx_ring"] <= st["rx_pkts"], st
    assert st["rx_ring"] >= float(m.group(1)) / 2, st
    assert st["tx_kernel"] == 0 and st["rx_kernel"] == 0, st
    # UDP_STREAM: messages sent (okay, no errors), then what netserver received
    sent = re.search(r"^\d+ +1024 +[\d.]+ +(\d+) +0 +[\d.]+ *$", stream, re.M)
    got = re.search(r"^\d+ +[\d.]+ +(\d+) +[\d.]+ *$", stream, re.M)
    assert "rc=0" in stream and sent and got, stream
    assert 0 < int(got.group(1)) <= int(sent.group(1)), stream
    (st,) = accio_stats(stream)
    assert st["tx_ring"] + st["tx_mmio"] >= int(sent.group(1)) and st["tx_kernel"] == 0, st
    # netserver's children: a data socket on a row, datagrams through its rings
    # (a sample taken while the child ends shows its counters as "-")
    rows = [r for r in stat_rows(rs.output, "netserver")
            if r["PATH"] == "ring" and r["RX_RING"].isdigit()]
    assert rows and max(int(r["RX_RING"]) for r in rows) > 0, rs.output[-3000:]


def test_fork_models_of_servers_keep_their_rows():
    """A prefork server (the parent binds, a forked child serves, the parent
    waits) serves through a row of the child's; socat's process per
    datagram (the parent peeks at the listening socket, a forked child
    reads and answers the datagram on it) answers every datagram while the
    row moves to whichever process receives."""
    # the server SoC runs until the host stops it, once the client is done
    server = (f"{MUSL} udp_echo -P -p 7000 -n 300 & "
              f"{GLIBC} socat UDP4-RECVFROM:7100,fork PIPE & "
              "wait %1; sleep 600")
    client = (
        f"{MUSL} udp_echo_client -s 10.0.3.1 -p 7000 -n 300 -m 16 -M 1472 -t 2000 -q;"
        "echo echo_rc=$?;"
        f"for i in $(seq {N_FORK}); do "
        f"echo hello-$i | {GLIBC} socat -t 1 - UDP4:10.0.3.1:7100; done 2>&1;"
        "echo client_done")
    rs, rc = accio.run_pair(server, client, timeout=TIMEOUT)
    assert rc.rc == 0 and "client_done" in rc.output, rc.output + rc.console[-2000:]
    assert "echo_rc=0" in rc.output and "ok=300" in rc.output, rc.output
    for i in range(1, N_FORK + 1):
        assert f"hello-{i}\n" in rc.output, rc.output
    out = rs.output
    assert "child_exit=0" in out, out
    st = accio_stats(out)
    # the prefork child: every echo through its own row (the first few may
    # have reached the socket before the child's row and come back through
    # the kernel first, in order)
    child = [s for s in st if s["tx_ring"] == 300]
    assert len(child) == 1, st
    assert child[0]["rx_ring"] + child[0]["rx_kernel"] == 300 and child[0]["tx_kernel"] == 0
    assert child[0]["rx_ring"] >= 290, child
    # socat: its children answered through rows they took on receiving
    socat = [s for s in st if s["tx_ring"] == 1 and s["tx_kernel"] == 0]
    assert len(socat) == N_FORK, st


def ipv4_frames(path):
    """(source IPv4, source port, IPv4 flags field) of each UDP frame of a pcap."""
    data = open(path, "rb").read()
    off, out = 24, []
    while off + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, off + 8)[0]
        f = data[off + 16:off + 16 + caplen]
        off += 16 + caplen
        if len(f) >= 42 and f[12:14] == b"\x08\x00" and f[23] == 17:
            ihl = (f[14] & 15) * 4
            out.append((".".join(map(str, f[26:30])),
                        struct.unpack_from("!H", f, 14 + ihl)[0],
                        struct.unpack_from("!H", f, 20)[0]))
    return out


def test_reuseport_group_and_path_mtu_choice_on_rows(tmp_path):
    """A group of 4 SO_REUSEPORT sockets on one port, a thread each: the
    engine spreads 32 clients' flows over the group's 4 rows by a hash of
    the source, every echo through a row. A server whose socket turns path
    MTU discovery off (IP_MTU_DISCOVER DONT) sends its echoes through the
    ring without DF, as Linux does; the group's echoes carry DF. The wire
    captures show the flag."""
    # 32 flows: a member left without any has probability 4 * (3/4)^32
    server = (f"{MUSL} udp_echo -R 4 -p 7000 -n 480 2>&1 & "
              f"{MUSL} udp_echo -D -p 7100 -n 20 2>&1 & wait")
    client = ("for i in $(seq 32); do "
              f"{MUSL} udp_echo_client -s 10.0.3.1 -p 7000 -n 15 -m 64 -M 64 -t 2000 -q "
              "> /tmp/c$i 2>&1 & done; wait; cat /tmp/c*;"
              f"{MUSL} udp_echo_client -s 10.0.3.1 -p 7100 -n 20 -m 100 -M 100 -t 2000 -q;"
              "echo client_done")
    rs, rc = accio.run_pair(server, client, timeout=TIMEOUT, grace=20, pcap_dir=str(tmp_path))
    assert rc.rc == 0 and "client_done" in rc.output, rc.output + rc.console[-2000:]
    # a client short of echoes is told with the server's side of it: what
    # each member served and its row's counters
    assert rc.output.count("ok=15\n") == 32 and "ok=20\n" in rc.output, \
        rc.output + "\n--- server ---\n" + rs.output + rs.console[-3000:]
    out = rs.output
    served = [int(x) for x in re.search(r"^served=([\d,]+)$", out, re.M).group(1).split(",")]
    assert len(served) == 4 and sum(served) >= 480 and all(n > 0 for n in served), out
    st = accio_stats(out)
    # five rows: the group's four, each with its share of the flows, and
    # the -D server's; every echo left through a ring
    assert len(st) == 5 and all(x["tx_kernel"] == 0 for x in st), st
    assert sorted(x["tx_ring"] for x in st) == sorted(served + [20]), (served, st)
    assert all(x["rx_ring"] > 0 for x in st), st
    frames = ipv4_frames(str(tmp_path / "server.pcap"))
    df = {p: {flags & 0x4000 for ip, port, flags in frames if ip == "10.0.3.1" and port == p}
          for p in (7000, 7100)}
    assert df[7000] == {0x4000} and df[7100] == {0}, df


@pytest.mark.skipif(debian_unavailable() is not None, reason=str(debian_unavailable()))
def test_reuseport_flows_stay_with_their_member_under_row_churn():
    """A SO_REUSEPORT group of 2 sockets (a thread each) beside 80 other
    sockets in one server process under the glibc libaccio: 82 sockets on
    64 rows, so rows change hands all the time (guest/udp_group.py). 16
    client flows to the group, each round before two requests on every
    other socket (the group idle meanwhile, its rows the least recently
    used): every request is answered within 2 s, and each flow reaches
    one member for its whole life, and both members serve flows, as on
    Linux sockets. The engine picks a flow's member by its place among the
    group's members that have rows, and an evicted member's flows go to
    the socket layer, which picks by its own hash. Before group members
    kept their rows while another could go, one member lost its row as
    the other sockets took theirs, and the engine sent every flow to the
    other one (16 of 16 flows on one thread in every run).
    The 80 others wait in one epoll set: before a row installed by its
    owner's look at the ring woke the set to arm it, the ring's next
    datagram raised no wake-up, and about 10 of 480 requests were answered
    only when another socket's woke the set (seconds later; never, on a
    server with no other traffic). Nor may the set's looks thrash the rows:
    libaccio's epoll_wait looks at every socket's ring, and the look at an
    evicted one's registers installed it again, evicting another; with the
    status page it reads where the ring ended instead. 818 evictions for
    the 880 requests; 63,367 when every look installed."""
    run = "python3 /opt/t/udp_group.py"
    server = (f"{GLIBC} {run} server & while :; do sleep 1; "
              "echo evictions=$(cat /sys/bus/platform/drivers/accio-uncore/*/evictions); done")
    client = f"sleep 3; {run} client 10.0.3.1 5 2 2>&1; echo client_done"
    rs, rc = accio.run_pair(server, client, add=[(GUEST_PROGS, "/opt/t")], pkgs=["python3-minimal"],
                            timeout=TIMEOUT, grace=2)
    assert rc.rc == 0 and "client_done" in rc.output, rc.output + rc.console[-2000:]
    assert "server_ready" in rs.output, rs.output + rs.console[-2000:]
    assert "flows_ok=80\n" in rc.output and "churn_ok=800\n" in rc.output, rc.output
    evictions = [int(n) for n in re.findall(r"^evictions=(\d+)$", rs.output, re.M)]
    # rows change hands (each reply of a socket without a row installs it),
    # but a look at a ring does not install: at most 2 per request
    assert evictions and 100 < evictions[-1] < 2 * (80 + 800), rs.output[-2000:]
    members = {}
    for k, port in re.findall(r"^member (\d) (\d+)$", rs.output, re.M):
        members.setdefault(port, set()).add(k)
    assert len(members) == 16 and all(len(m) == 1 for m in members.values()), members
    # 16 flows over 2 members by a hash: all on one has probability 2^-15
    assert set().union(*members.values()) == {"0", "1"}, members


@pytest.mark.slow
@pytest.mark.skipif(debian_unavailable() is not None, reason=str(debian_unavailable()))
def test_turn_relay_with_two_threads_loses_nothing():
    """coturn's turnserver, unmodified under the glibc libaccio, relays
    between four turnutils_uclient clients (each pair of clients through
    two relay sockets of the server). Its two listening sockets form a
    SO_REUSEPORT group, one per relay thread, and each thread knows only
    the sessions whose datagrams reach its socket. It asks for each
    datagram's TTL and TOS (IP_RECVTTL, IP_RECVTOS) and passes them on with
    IP_TTL and IP_TOS. The listeners take the clients' datagrams through
    their rows, and nothing is lost, as on Linux sockets. When a new IP_TTL
    made a new row, the group lost a member for that moment, the flows of
    the group moved to the other thread, which did not know them: 2 of
    2,400 relayed messages were lost with 8 clients. In lockstep: the run
    repeats exactly."""
    server = (f"{GLIBC} turnserver -L 10.0.3.1 -E 10.0.3.1 --no-auth --no-tls --no-dtls "
              "--no-tcp --no-cli -n --allow-loopback-peers --relay-threads 2 "
              "--log-file /tmp/turn.log --no-stdout-log > /tmp/turn.err 2>&1 &"
              "while :; do sleep 1; accio stat | grep -E '^PID|turnserver'; done")
    client = ("for i in 1 2 3 4 5; do sleep 1; done;"
              f"{GLIBC} turnutils_uclient -y -m 4 -n 100 -l 170 -z 5 10.0.3.1 2>&1 |"
              " grep -E 'tot_recv_msgs=|Total lost|^accio:'; echo client_done")
    rs, rc = accio.run_pair(server, client, timeout=TIMEOUT, grace=1, lockstep=20000,
                            pkgs=("coturn",))
    assert rc.rc == 0 and "client_done" in rc.output, rc.output + rc.console[-2000:]
    assert re.search(r"tot_send_msgs=400, tot_recv_msgs=400$", rc.output, re.M), rc.output
    assert "Total lost packets 0 (" in rc.output, rc.output
    # the clients' sockets moved their datagrams through rows
    st = accio_stats(rc.output)
    assert len([s for s in st if s["rx_ring"] >= 100]) == 4, rc.output
    assert all(s["rx_kernel"] == 0 and s["tx_kernel"] == 0 for s in st), rc.output
    # the two listeners: rows that took the clients' datagrams, kept all along
    rows = [r for r in stat_rows(rs.output, "turnserver") if r["ROW"] in ("0", "1")]
    last = {r["FD"]: r for r in rows}
    assert len(last) == 2 and all(r["PATH"] == "ring" for r in last.values()), rows[-4:]
    assert sum(int(r["RX_RING"]) for r in last.values()) >= 400, last


@pytest.mark.slow
@pytest.mark.skipif(debian_unavailable() is not None, reason=str(debian_unavailable()))
def test_quic_download_both_sides_accelerated(tmp_path):
    """ngtcp2's HTTP/3 example server and client (gtlsserver, gtlsclient:
    QUIC over GnuTLS), unmodified, both under the glibc libaccio, in
    lockstep: a 1 MiB file arrives intact. QUIC asks for each datagram's
    TOS (IP_RECVTOS: ECN), marks each datagram it sends with an IP_TOS
    control message and sends bursts as one UDP_SEGMENT message (GSO):
    the server's datagrams all leave through its row, the client's all
    arrive through its ring. Before, such sockets took the kernel path."""
    import hashlib
    import random
    docs = tmp_path / "htdocs"
    docs.mkdir()
    data = random.Random(7).randbytes(1 << 20)
    (docs / "data.bin").write_bytes(data)
    tls = os.path.join(GUEST_PROGS, "quic")
    server = (f"{GLIBC} gtlsserver -q -d /tmp/q/htdocs 10.0.3.1 4433 /tmp/q/tls/key.pem "
              "/tmp/q/tls/cert.pem > /tmp/s.log 2>&1 &"
              "while :; do sleep 1; accio stat | grep -E '^PID|gtlsserver'; done")
    client = ("for i in 1 2 3; do sleep 1; done; mkdir -p /tmp/dl;"
              f"{GLIBC} gtlsclient -q --exit-on-all-streams-close --download=/tmp/dl 10.0.3.1 4433"
              " https://10.0.3.1:4433/data.bin > /tmp/c.log 2>&1; echo rc=$?;"
              "grep '^accio:' /tmp/c.log; sha256sum /tmp/dl/data.bin")
    rs, rc = accio.run_pair(server, client, timeout=TIMEOUT, grace=1, lockstep=20000,
                            pkgs=("ngtcp2-client", "ngtcp2-server"),
                            add=[(str(docs), "/tmp/q/htdocs"), (tls, "/tmp/q/tls")])
    assert rc.rc == 0 and "rc=0" in rc.output, rc.output + rc.console[-2000:]
    assert hashlib.sha256(data).hexdigest() + "  /tmp/dl/data.bin" in rc.output, rc.output
    (st,) = accio_stats(rc.output)
    assert st["rx_ring"] >= 700 and st["rx_kernel"] == 0 and st["tx_kernel"] == 0, st
    rows = [r for r in stat_rows(rs.output, "gtlsserver") if r["TX_RING"].isdigit()]
    assert rows and rows[-1]["PATH"] == "ring", rs.output[-2000:]
    assert int(rows[-1]["TX_RING"]) >= 700 and rows[-1]["TX_KERNEL"] == "0", rows[-1]


# Four DNS servers that nobody here configured for Accio, each in the
# socket model its authors chose, on ports of their own
ZONE = ("$ORIGIN test.\\n$TTL 3600\\n@ IN SOA ns.test. admin.test. 1 3600 900 604800 300\\n"
        "@ IN NS ns.test.\\nns IN A 10.1.0.1\\nh1 IN A 10.1.1.1\\nh2 IN A 10.1.2.2\\n")
UNBOUND_CONF = (r'server:\n interface: 0.0.0.0\n port: 53\n do-ip6: no\n'
                r' access-control: 0.0.0.0/0 allow\n username: ""\n chroot: ""\n'
                r' directory: "/tmp"\n pidfile: "/tmp/unbound.pid"\n num-threads: 2\n'
                r' so-reuseport: yes\n use-syslog: no\n logfile: ""\n'
                r' local-zone: "test." static\n local-data: "h1.test. A 10.1.1.1"\n'
                r' local-data: "h2.test. A 10.1.2.2"\n')
NSD_CONF = (r'server:\n ip-address: 0.0.0.0\n port: 5301\n do-ip6: no\n username: ""\n'
            r' chroot: ""\n zonesdir: "/tmp"\n database: ""\n'
            r' pidfile: "/tmp/nsd.pid"\n xfrdfile: "/tmp/xfrd.state"\n'
            r' zonelistfile: "/tmp/zone.list"\n xfrdir: "/tmp"\n server-count: 2\n'
            r' reuseport: yes\nremote-control:\n control-enable: no\n'
            r'zone:\n name: test\n zonefile: /tmp/test.zone\n')
KNOT_CONF = (r'server:\n    listen: 0.0.0.0@5302\n    udp-workers: 2\n    tcp-workers: 1\n'
             r'    background-workers: 1\n    rundir: /tmp\ndatabase:\n    storage: /tmp/knotdb\n'
             r'zone:\n  - domain: test\n    file: /tmp/test.zone\n')
DNS_SERVERS = {
    # two threads, an SO_REUSEPORT socket each
    "unbound": (53, f"printf '{UNBOUND_CONF}' > /tmp/u.conf; {GLIBC} unbound -d -c /tmp/u.conf"),
    # two forked server processes, an SO_REUSEPORT socket each
    "nsd": (5301, f"printf '{NSD_CONF}' > /tmp/nsd.conf; {GLIBC} nsd -d -c /tmp/nsd.conf"),
    # two UDP worker threads on recvmmsg/sendmmsg, SO_REUSEPORT
    "knotd": (5302, f"printf '{KNOT_CONF}' > /tmp/knot.conf; {GLIBC} knotd -c /tmp/knot.conf"),
    # a recursor with two threads (authoritative for test. from a file);
    # its own queries to the root servers have no route on the SoC's
    # network, and go to the kernel (refused rows)
    "pdns_recursor": (5303, f"touch /tmp/recursor.conf; {GLIBC} pdns_recursor "
                      "--config-dir=/tmp --local-address=0.0.0.0 --local-port=5303 "
                      "--allow-from=0.0.0.0/0 --auth-zones=test=/tmp/test.zone --daemon=no "
                      "--socket-dir=/tmp --threads=2 --reuseport=yes --setuid= --setgid= "
                      "--disable-syslog"),
}
N_EACH = 20


@pytest.mark.slow
@pytest.mark.skipif(debian_unavailable() is not None, reason=str(debian_unavailable()))
def test_four_dns_servers_in_their_own_socket_models():
    """Unbound (threads), NSD (forked servers), Knot (recvmmsg workers) and
    the PowerDNS recursor, each with an SO_REUSEPORT group of two, all
    under the glibc libaccio on one SoC, answer drill on the other: every
    answer right, and each server's rows carried its queries and answers
    through the rings, spread over both members of the group."""
    server = (f"printf '{ZONE}' > /tmp/test.zone;"
              + "".join(f"{cmd} > /tmp/{name}.log 2>&1 &" for name, (_, cmd) in
                        DNS_SERVERS.items())
              + wait_for(f"[ $(accio stat | grep -c ' ring$') -ge {2 * len(DNS_SERVERS)} ]", 120)
              + "echo @@ready@@;"
              # RX_RING, counted from the end: a command may hold spaces
              + wait_for("[ $(accio stat | awk '$NF == \"ring\" {s += $(NF - 6)} END "
                         f"{{print s + 0}}') -ge {N_EACH * len(DNS_SERVERS)} ]", 200)
              + "echo @@stat@@; accio stat;"
              + "".join(f"echo @@{n}@@; tail -5 /tmp/{n}.log;" for n in DNS_SERVERS)
              + "kill $(jobs -p); wait")
    client = (wait_for("drill @10.0.3.1 -p 5303 h1.test A | grep -q 10.1.1.1", 150)
              + "".join(f"for i in $(seq {N_EACH}); do echo {name}=$({GLIBC} drill @10.0.3.1 "
                        f"-p {port} h$((i % 2 + 1)).test A 2>>/tmp/drill.err | awk "
                        "'/^h[12]\\.test\\.[ \\t].*IN[ \\t]+A[ \\t]/ {print $1 $NF}'); done;"
                        for name, (port, _) in DNS_SERVERS.items())
              + "grep '^accio: fd' /tmp/drill.err; echo client_done")
    rs, rc = accio.run_pair(server, client, timeout=TIMEOUT, grace=30,
                            pkgs=("unbound", "nsd", "knot", "pdns-recursor", "ldnsutils"))
    assert rc.rc == 0 and "client_done" in rc.output, rc.output[-3000:] + rc.console[-2000:]
    for name in DNS_SERVERS:
        got = re.findall(rf"^{name}=(\S+)", rc.output, re.M)
        want = [f"h{i % 2 + 1}.test.10.1.{i % 2 + 1}.{i % 2 + 1}" for i in range(1, N_EACH + 1)]
        assert got == want, (name, got, rc.output[-2000:])
    # every query through the client's rows
    st = accio_stats(rc.output)
    assert sum(s["tx_ring"] for s in st) >= N_EACH * len(DNS_SERVERS), st[:5]
    assert sum(s["rx_ring"] for s in st) >= N_EACH * len(DNS_SERVERS), st[:5]
    # each server's SO_REUSEPORT group carried its share through the rings
    stat = rs.output.partition("@@stat@@")[2].partition("@@")[0]
    assert "@@ready@@" in rs.output, rs.output[-3000:]
    for name in DNS_SERVERS:
        rows = [r for r in stat_rows(stat, name[:3], prefix=True) if r["PATH"] == "ring"]
        assert sum(int(r["RX_RING"]) for r in rows) >= N_EACH, (name, stat)
        assert sum(int(r["TX_RING"]) for r in rows) >= N_EACH, (name, stat)
        # the engine spread the queries (a new source port each) over both
        # members of the group
        assert len([r for r in rows if int(r["RX_RING"]) > 0]) >= 2, (name, stat)
