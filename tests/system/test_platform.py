"""The emulated Accio SoC end to end: real QEMU, real Linux, real frames."""
import re
import socket
import subprocess
import threading

import pytest

import accio
from wirepeer import WirePeer

TIMEOUT = 400


def kv(text):
    return dict(re.findall(r"^(\w+)=(\S+)$", text, re.M))


def stats(text):
    return {m[0]: int(m[1]) for m in re.findall(r"^(\w+) (\d+)$", text, re.M)}


def test_boot_to_userspace_with_four_harts():
    r = accio.run("uname -r; grep -c ^processor /proc/cpuinfo; cat /proc/cmdline",
                  timeout=TIMEOUT)
    assert r.rc == 0, r.console[-2000:]
    lines = r.output.split("\n")
    assert lines[0].endswith("-accio")
    assert lines[1] == "4"


def test_firmware_starts_secondary_harts_without_the_hsm_race():
    """OpenSBI 1.1 published a hart-start request before it stored the start
    address; a hart woken in between ran the kernel's primary boot path a
    second time and the boot hung silently (about 1 boot in 150 with the
    host loaded). The firmware must be one that stores the
    address first (1.5 from bookworm-backports), and the kernel's boot
    messages, kept in the console, must show every hart coming up once."""
    r = accio.run("true", timeout=TIMEOUT)
    assert r.rc == 0, r.console[-2000:]
    fw = re.search(r"^OpenSBI v(\d+)\.(\d+)", r.console, re.M)
    assert fw, r.console[:2000]
    assert (int(fw.group(1)), int(fw.group(2))) >= (1, 5), \
        f"OpenSBI v{fw.group(1)}.{fw.group(2)} has the hart-start race (scripts/bootstrap.sh)"
    boot = r.console[:r.console.index(accio.BEGIN)]
    assert boot.count("Linux version 6.1") == 1
    assert "smp: Brought up 1 node, 4 CPUs" in boot, boot[-3000:]


def test_guest_exit_status_reaches_the_host():
    r = accio.run("echo partial; exit 7", timeout=TIMEOUT)
    assert r.rc == 7
    assert r.output.strip() == "partial"


def test_nic_probe():
    r = accio.run("cat /sys/firmware/devicetree/base/soc/ethernet@10200000/compatible; echo;"
                  "cat /sys/class/net/eth0/address; cat /sys/class/net/eth0/carrier;"
                  "dmesg | grep 'Accio NIC'; ping -c 2 -W 5 10.0.2.2 >/dev/null; echo ping=$?;"
                  "ethstat eth0", timeout=TIMEOUT)
    assert r.rc == 0, r.console[-2000:]
    out = r.output
    assert "accio,nic" in out
    assert accio.GUEST_MAC in out
    assert "\n1\n" in out, "carrier is up"
    assert re.search(r"Accio NIC v1\.1 at \[mem 0x10200000-0x10200fff\], queues 64", out)
    assert kv(out)["ping"] == "0"
    s = stats(out)
    assert s["hw_tx_frames"] >= 3 and s["hw_rx_frames"] >= 3   # ARP + 2 pings
    assert s["rx_drop_runt"] == 0 and s["tx_errors"] == 0


def test_udp_echo_against_host_peer():
    with accio.HostEcho() as echo:
        r = accio.run(f"udp_echo_client -q -n 10000 -m 64 -M 1472 -p {echo.port}",
                      timeout=TIMEOUT)
    assert r.rc == 0, r.output + r.console[-2000:]
    res = kv(r.output)
    assert res["datagrams"] == "10000"
    assert res["ok"] == "10000" and res["bad"] == "0" and res["lost"] == "0"
    assert res["sizes"] == "64..1472"
    assert echo.echoed >= 10000


def test_deterministic_time_with_four_harts():
    cmd = "nic_selftest -n 12; dmesg | grep 'Accio NIC'; grep -c eth0 /proc/interrupts"
    a = accio.run(cmd, icount=4, wire="none", timeout=TIMEOUT)
    b = accio.run(cmd, icount=4, wire="none", timeout=TIMEOUT)
    assert a.rc == 0, a.output + a.console[-2000:]
    assert "frames=12 failed=0" in a.output
    frames = re.findall(r"tx_hw_ns (\d+) rx_hw_ns (\d+) hw_ns (\d+) sw_ns (\d+)", a.output)
    assert len(frames) == 12
    assert all(int(rx) > int(tx) > 0 for tx, rx, _, _ in frames)
    # Same instructions, same virtual time: identical timestamps, guest and NIC.
    assert a.output == b.output


def test_wire_peer_answers_on_the_virtual_clock():
    """--wire echo:NS: the NIC model's own peer answers ARP, ping and UDP
    NS ns after a frame arrived, on the virtual clock; with nobody on the
    wire in real time, a ping-pong (plain and accelerated) repeats exactly."""
    pp = "udp_pingpong -n 100 -p 9"
    cmd = (f"ping -c 3 10.0.2.2 | grep transmitted; {pp} -m 200; "
           f"LD_PRELOAD=/usr/lib/libaccio.so ACCIO_STATS=1 {pp} -m 64 2>&1")
    a = accio.run(cmd, icount=4, wire="echo:50000", timeout=TIMEOUT)
    assert a.rc == 0, a.output + a.console[-2000:]
    assert "3 packets transmitted, 3 packets received" in a.output
    runs = re.findall(r"size=(\d+) datagrams=(\d+) bad=(\d+).*?rtt_hw_avg_us=(\S+)",
                      a.output, re.S)
    assert [(s, n, b) for s, n, b, _ in runs] == [("200", "100", "0"), ("64", "100", "0")]
    # the hardware round trip is the peer's 50 us plus two wire crossings
    assert all(50.0 <= float(hw) < 55.0 for *_, hw in runs), runs
    # the accelerated run went through the row's rings
    st = re.search(r"rx_ring=(\d+) tx_ring=(\d+)", a.output)
    assert st and int(st.group(1)) >= 100 and int(st.group(2)) >= 100, a.output
    b = accio.run(cmd, icount=4, wire="echo:50000", timeout=TIMEOUT)
    assert a.output == b.output
    # a slower peer shows up in the hardware round trip, not in processing
    c = accio.run(f"{pp} -m 200", icount=4, wire="echo:400000", timeout=TIMEOUT)
    hw = float(re.search(r"rtt_hw_avg_us=(\S+)", c.output).group(1))
    assert 400.0 <= hw < 405.0, c.output


def test_sixteen_linux_socket_clients_lose_no_datagram():
    """Sixteen ping-pong clients on Linux sockets, four per hart: while one
    NAPI poll works through their replies, the others keep the peer busy.
    The driver refills each receive slot as it takes it, so the NIC always
    has buffers: every client finishes, and the NIC drops nothing."""
    cmd = ("for i in $(seq 16); do timeout 30 udp_pingpong -q -n 60 -w 0 -p 7 "
           "> /tmp/pp.$i 2>&1 & done; wait; cat /tmp/pp.*; ethstat eth0")
    r = accio.run(cmd, icount=4, wire="echo:20000", timeout=TIMEOUT)
    assert r.rc == 0, r.output + r.console[-2000:]
    assert r.output.count("datagrams=60 bad=0") == 16, r.output
    st = stats(r.output)
    assert st["rx_drop_nobuf"] == 0 and st["hw_rx_frames"] >= 16 * 60, r.output


class BurstEcho:
    """A host UDP echo on 127.0.0.1 that holds the requests until N are
    pending (or none came for 200 ms) and then answers them all at once:
    the user netdev reads one reply on each of its N host sockets in one
    pass and hands the NIC N frames back to back."""

    def __init__(self, n):
        self.n, self.answered = n, 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        pending = []
        while not self.stop.is_set():
            try:
                pending.append(self.sock.recvfrom(2048))
                if len(pending) < self.n:
                    continue
            except OSError:
                pass
            for data, addr in pending:
                self.sock.sendto(data, addr)
                self.answered += 1
            pending = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


def test_a_burst_from_the_user_netdev_is_queued_not_dropped():
    """64 sockets, each waiting for its reply, get all 64 at once from the
    user netdev (one frame per host socket in one pass). The NIC's bus runs
    at 1 MHz here (65 us a frame), so its 16-frame receive FIFO is full for
    most of the burst and the netdev must keep the rest until the FIFO has
    room, one frame per free slot. Every reply arrives, and the NIC drops
    nothing (it used to take a whole queue at the first free slot and drop
    all but one: the client of a dropped reply waited for ever)."""
    with BurstEcho(64) as echo:
        cmd = (f"udp_multi -T 64 -o /tmp/b -n 3 -w 0 -m 64 -p {echo.port} -t 3000; "
               "cat /tmp/b.*; ethstat eth0")
        r = accio.run(cmd, timeout=TIMEOUT,
                      qemu_extra=["-global", "accio-nic.bus-freq-hz=1000000"])
    assert r.rc == 0, r.output + r.console[-2000:]
    assert "clients=64 ready=64 ok=64" in r.output, r.output
    assert r.output.count("datagrams=3 bad=0") == 64, r.output
    assert all(n == "0" for n in re.findall(r"^lost=(\d+)$", r.output, re.M)), r.output
    assert echo.answered >= 3 * 64
    st = stats(r.output)
    assert st["rx_drop_nobuf"] == 0 and st["hw_rx_frames"] >= 3 * 64, r.output


def test_wire_peer_bad_settings_are_refused():
    with pytest.raises(accio.AccioError, match="DELAY must be nanoseconds"):
        accio.run("true", wire="echo:fast", timeout=TIMEOUT)
    cmd = accio.qemu_cmdline(wire="none") + ["-global", "accio-nic.wire-peer=mirror"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert 'wire-peer must be "echo" or empty, not "mirror"' in r.stderr


def test_bad_frames_from_the_wire_are_dropped_and_counted():
    peer = WirePeer(inject=("runt", "oversize", "garbage"))
    try:
        r = accio.run("ethstat > /tmp/before; udp_echo_client -q -n 50 -p 9 -t 2000;"
                      "echo rc=$?; ethstat", wire=f"socket:{peer.port}", timeout=TIMEOUT)
    finally:
        peer.close()
    assert r.rc == 0, r.output + r.console[-2000:]
    res, s = kv(r.output), stats(r.output)
    assert res["rc"] == "0" and res["ok"] == "50" and res["bad"] == "0"
    assert peer.echoed >= 50
    assert s["rx_drop_runt"] == peer.injected["runt"] >= 50
    assert s["rx_drop_oversize"] == peer.injected["oversize"] >= 50
    assert s["rx_drop_filter"] >= peer.injected["garbage"] >= 50


def test_uncore_is_on_the_bus_and_refuses_user_mode():
    # devmem runs in user mode (as root): the ICT's protection check must
    # refuse it on the global page and on a row page, with the poison value,
    # while the NIC (no protection) reads normally.
    dt = "/sys/firmware/devicetree/base"
    r = accio.run(f"cat {dt}/soc/accio@11000000/compatible; echo;"
                  f"od -An -tx1 -w80 {dt}/soc/accio@11000000/interrupts-extended;"
                  "devmem 0x10200000 64; devmem 0x11000000 64; devmem 0x11001040 64;"
                  "devmem 0x11001800 64; echo @@phandles@@;"
                  f"for h in 0 1 2 3; do od -An -tx1 {dt}/cpus/cpu@$h/interrupt-controller/phandle;"
                  f"done; od -An -tx1 {dt}/soc/plic@c000000/phandle;"
                  "grep -E '^(processor|hart)' /proc/cpuinfo | tr -d ' \t' | tr '\n' ' '",
                  timeout=TIMEOUT)
    assert r.rc == 0, r.console[-2000:]
    lines = r.output.split("\n")
    assert lines[0].startswith("accio,uncore")
    # wake-ups: local interrupt 16 of each hart (QEMU 0006); events: PLIC source 17
    cells = bytes.fromhex("".join(lines[1].split()))
    cells = [int.from_bytes(cells[i:i + 4], "big") for i in range(0, len(cells), 4)]
    ph = [int("".join(x.split()), 16)
          for x in r.output.split("@@phandles@@\n")[1].split("\n")[:5]]
    assert cells == [ph[0], 16, ph[1], 16, ph[2], 16, ph[3], 16, ph[4], 17], (cells, ph)
    # hart 0 boots (QEMU 0007): Linux's CPU n is hart n
    cpus = next(x for x in r.output.split("\n") if x.startswith("processor:"))
    assert cpus.split() == [f"{k}:{n}" for n in range(4) for k in ("processor", "hart")], cpus
    assert lines[2] == "0x000100014143494F"    # ACIO, register map 1.1
    # global page, a row register and the row's MMIO TX window: none is ours
    assert lines[3] == lines[4] == lines[5] == "0xBADACCE55BADACCE"


def test_harts_run_in_parallel_in_virtual_time(monkeypatch):
    """Under --icount the harts run in parallel in virtual time (QEMU patch
    0004): a loop on hart 1 takes about as long while the three other harts
    spin as it does alone, and two runs repeat exactly. QEMU's own icount
    (every instruction of every hart advances the one clock) takes about
    four times as long."""
    loop = "i=0; while [ $i -lt 4000 ]; do i=$((i+1)); done"
    t = "cut -d' ' -f1 /proc/uptime"
    cmd = (f"a=$({t}); taskset 0x2 sh -c '{loop}'; echo alone=$a,$({t}); "
           "for h in 0x1 0x4 0x8; do taskset $h sh -c 'while :; do :; done' & done; "
           f"sleep 1; a=$({t}); taskset 0x2 sh -c '{loop}'; echo loaded=$a,$({t}); "
           "kill %1 %2 %3")

    def ratio(r):
        assert r.rc == 0, r.output + r.console[-2000:]
        d = {k: [float(x) for x in v.split(",")] for k, v in kv(r.output).items()
             if k in ("alone", "loaded")}
        return (d["loaded"][1] - d["loaded"][0]) / (d["alone"][1] - d["alone"][0])

    a = accio.run(cmd, icount=4, wire="none", timeout=TIMEOUT)
    b = accio.run(cmd, icount=4, wire="none", timeout=TIMEOUT)
    assert ratio(a) < 1.3, a.output
    assert a.output == b.output
    monkeypatch.setattr(accio, "ICOUNT_PARALLEL", False)
    serial = accio.run(cmd, icount=4, wire="none", timeout=TIMEOUT)
    assert ratio(serial) > 3, serial.output
