"""The Rocket SoC on Verilator (make soc): rocket-chip cores run bare-metal
programs that drive the uncore RTL through the SoC's MMIO bridge, with the
harness's DRAM, console and wire."""
import os
import struct
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOC = os.path.join(ROOT, "build", "soc")


# the two SoCs of make soc: one hart with the Verilog top, four harts with
# the uncore attached by WithAccioUncore (programs built for its address map)
ONE, FOUR = ("soc-sim1", "sw"), ("soc-sim4-dip", "sw-dip")


def sim(soc, prog, *args, timeout=600):
    exe = os.path.join(SOC, soc[0])
    if not os.path.exists(exe):
        pytest.fail(f"{exe} missing: run make soc")
    return subprocess.run([exe, *args, os.path.join(SOC, soc[1], prog)], capture_output=True,
                          text=True, timeout=timeout)


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


@pytest.mark.parametrize("soc", [ONE, FOUR], ids=["verilog-top-1", "diplomatic-4"])
def test_datagrams_wakeup_asid_check_and_window(soc, tmp_path):
    frames = tmp_path / "frames"
    r = sim(soc, "test_soc.elf", "--frames", str(frames))
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert "FAIL" not in out and "failures=0" in out
    oks = [ln for ln in out.splitlines() if ln.startswith("ok ")]
    assert len(oks) == 16, out
    assert "\x01" not in out, "the divisor written with LCR's latch bit set was printed"
    for n in "123456":
        assert any(ln.split()[1] == n for ln in oks), n
    kv = dict(ln.split("=", 1) for ln in out.splitlines() if "=" in ln and " " not in ln)
    assert kv["tx_frames"] == "4" and kv["rx_frames"] == "4"
    # the frame for no row reached the normal path: the harness counts it on
    # the uncore's port (diplomatic SoC), the program on the NIC's counters
    assert kv.get("nic_frames", kv.get("nic_passed")) == "1", out
    assert 0 < int(kv["cycles_doorbell_to_rx_record"]) < 5000
    assert 0 < int(kv["cycles_window_to_rx_record"]) < 5000
    # what the engine put on the wire: valid IPv4 and UDP, the program's bytes
    sent = [bytes.fromhex(ln.split()[1]) for ln in frames.read_text().splitlines()]
    assert len(sent) == 4
    payloads = [b"hello from a Rocket core", b"wake me up", b"not for a row",
                b"through the MMIO window!"]
    ports = [7000, 7000, 9, 7000]
    for f, p, dport in zip(sent, payloads, ports):
        if soc == ONE:
            # through the NIC's MAC: padded to Ethernet's 60 bytes with zeros
            tot = 14 + struct.unpack("!H", f[16:18])[0]
            assert len(f) == max(tot, 60) and not any(f[tot:]), f.hex()
            f = f[:tot]
        ip, udp = f[14:34], f[34:]
        assert f[12:14] == b"\x08\x00" and ip[9] == 17
        assert csum(ip) == 0xffff
        assert ip[12:16] == bytes([10, 0, 2, 15]) and ip[16:20] == bytes([10, 0, 2, 2])
        sport, dp, ulen, _ = struct.unpack("!HHHH", udp[:8])
        assert (sport, dp, ulen) == (5000, dport, 8 + len(p)) and udp[8:] == p
        pseudo = ip[12:20] + struct.pack("!BBH", 0, 17, ulen)
        assert csum(pseudo + udp) == 0xffff


def test_harness_refuses_bad_input(tmp_path):
    exe = os.path.join(SOC, "soc-sim1")
    bad = tmp_path / "bad.elf"
    bad.write_bytes(b"\x7fELF not really")
    r = subprocess.run([exe, str(bad)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "not a 64-bit RISC-V ELF file" in r.stderr
    r = subprocess.run([exe, "--warp", "9", str(bad)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "unknown option --warp" in r.stderr
    # a program that does not finish in time: status 3, said so
    r = sim(ONE, "test_soc.elf", "--max-cycles", "2000")
    assert r.returncode == 3 and "status=timeout" in r.stdout


def test_every_hart_is_told_apart_on_four_harts():
    # each hart's own row passes only with its own CTX: the bridge must take
    # the hart from the AXI ID (mapped from rocket-chip's diplomacy by
    # WithAccioUncore); the neighbour's row refuses it
    r = sim(FOUR, "test_harts.elf")
    assert r.returncode == 0, r.stdout + r.stderr
    oks = [ln for ln in r.stdout.splitlines() if ln.startswith("ok   hart ")]
    assert len(oks) == 4 and "woken by its interrupt" in oks[2], r.stdout
    assert "harts=4" in r.stdout and "tx_frames=4" in r.stdout


def test_calibration_program_measures_every_path():
    r = sim(ONE, "calib.elf")
    assert r.returncode == 0, r.stdout + r.stderr
    kv = {k: int(v) for k, v in (ln.split("=") for ln in r.stdout.splitlines()
                                 if "=" in ln and ln.split("=")[1].isdigit())}
    for k in ("load_uncore", "load_bridge", "store_uncore", "store_bridge", "rq_pop",
              "doorbell_rx", "window_rx", "doorbell_irq", "doorbell_rx_1k", "window_rx_1k"):
        assert k in kv, k
    # an uncore register costs more than a register the bridge answers; the
    # wire's 200-cycle echo is inside both transmit paths
    assert kv["load_uncore"] > kv["load_bridge"] > 0
    assert kv["doorbell_rx"] > 200 and kv["window_rx"] > 200 and kv["doorbell_irq"] > 200
    # a 1024-byte datagram takes longer than a 64-byte one either way
    assert kv["doorbell_rx_1k"] > kv["doorbell_rx"] and kv["window_rx_1k"] > kv["window_rx"]


def udp_frame(payload, sport=7000, dport=5000, bad_ip_csum=False):
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + len(payload), 1, 0x4000, 64, 17, 0,
                     bytes([10, 0, 2, 2]), bytes([10, 0, 2, 15]))
    c = 0xffff - csum(ip)
    ip = ip[:10] + struct.pack("!H", c ^ (1 if bad_ip_csum else 0)) + ip[12:]
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    pseudo = ip[12:20] + struct.pack("!BBH", 0, 17, len(udp))
    uc = 0xffff - csum(pseudo + udp) or 0xffff
    udp = udp[:6] + struct.pack("!H", uc) + udp[8:]
    eth = bytes([2, 0, 0, 0, 0, 2]) + bytes([2, 0xac, 0xc1, 0x0e, 0xc4, 0]) + b"\x08\x00"
    return (eth + ip + udp).ljust(60, b"\0")   # a sender's MAC pads to the minimum


def test_replayed_frames_reach_the_row_checked_by_the_engine(tmp_path):
    # crafted frames on the wire: two for the row around a malformed one
    # (bad IPv4 checksum) and one for a port no row has
    # (bad IPv4 checksum), one for a port no row has, and a runt (shorter
    # than Ethernet's 60 bytes), which the NIC's MAC drops before the engine
    frames = [udp_frame(b"first replayed datagram"), udp_frame(b"bad", bad_ip_csum=True),
              udp_frame(b"for nobody", dport=5001), udp_frame(b"second one"),
              udp_frame(b"runt")[:52]]
    f = tmp_path / "frames.hex"
    f.write_text("".join(fr.hex() + "\n" for fr in frames))
    r = sim(ONE, "rx_replay.elf", "--wire", f"replay:{f}")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "record=first replayed datagram\n" in out and "record=second one\n" in out, out
    assert "rx_pkts=2\n" in out and "malformed=1\n" in out and "ict_misses=1\n" in out, out
    # the malformed one is dropped and counted (as the C model does); the
    # one for no row goes on to the NIC, into the buffer the program posted
    assert "rx_frames=5\n" in out, out
    assert "nic_runts=1\n" in out and "nic_len=60\n" in out and "nic_payload=for nobody\n" in out, out


def test_sink_wire_takes_frames_and_answers_none():
    r = sim(ONE, "test_soc.elf", "--wire", "sink", "--max-cycles", "60000")
    assert r.returncode == 3 and "status=timeout" in r.stdout, r.stdout
    assert "tx_frames=1\n" in r.stdout and "rx_frames=0\n" in r.stdout, r.stdout


def test_nic_in_front_of_the_uncore_echoes_every_byte():
    # the NIC RTL driven as its Linux driver drives it: a datagram from an
    # odd address with checksum offload, its echo into a buffer at an odd
    # address with the receive offload's CSUM_OK, the interrupt at the PLIC,
    # then round trips through the normal path, every byte checked, and the
    # wire's peer answering ARP and ping as a host does
    r = sim(ONE, "test_nic.elf")
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert "FAIL" not in out and "failures=0" in out, out
    oks = [ln for ln in out.splitlines() if ln.startswith("ok ")]
    assert len(oks) == 16, out
    kv = dict(ln.split("=", 1) for ln in out.splitlines() if "=" in ln and " " not in ln)
    assert kv["tx_frames"] == "11" and kv["rx_frames"] == "11", out
    # the stamps: the frame's time on the wire there and back (82 bytes a
    # beat a cycle at 1 GHz, the harness's 200-cycle echo): under 2 us
    assert 200 < int(kv["wire_rtt_ns"]) < 2000, out
    assert 0 < int(kv["cycles_per_round_trip"]) < 20000, out


def test_devicetree_compiles_and_names_the_map_the_programs_use(tmp_path):
    # the devicetree firmware and Linux get: dtc takes it without a warning,
    # and every address in it is the one the bare-metal programs use
    import re
    dts, dtb = tmp_path / "soc2.dts", tmp_path / "soc2.dtb"
    subprocess.run(["python3", os.path.join(ROOT, "hardware", "soc", "gen_dts.py"), "2", str(dts),
                    "--bootargs", "console=ttyS0", "--initrd", "0x83000000", "0x83100000"], check=True)
    r = subprocess.run(["dtc", "-I", "dts", "-O", "dtb", "-o", str(dtb), str(dts)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    text = dts.read_text()
    soc_h = open(os.path.join(ROOT, "hardware", "soc", "sw", "soc.h")).read()
    sim1 = soc_h.split("#elif !defined(SOC_QEMU)")[1].split("#else")[0]
    defs = {m[0]: int(m[1], 16) for m in re.findall(r"#define (SOC_\w+)\s+0x([0-9a-f]+)UL", sim1)}
    for name, node in [("SOC_NIC", "ethernet"), ("SOC_UNCORE_K", "accio"), ("SOC_CONSOLE", "serial"),
                       ("SOC_PLIC", "interrupt-controller")]:
        assert f"{node}@{defs[name]:x} {{" in text, (name, node)
    assert f"<0x{defs['SOC_UNCORE_U']:x} " in text and f"<0x{defs['SOC_CTX']:x} " in text
    # PLIC sources: the event interrupt 1, hart h's wake-up 2 + h, the NIC
    # 2 + harts, the console 3 + harts
    assert "interrupts = <2>, <3>, <1>;" in text and "interrupts = <4>;" in text
    assert "riscv,ndev = <5>;" in text and "interrupts = <5>;" in text and text.count('device_type = "cpu"') == 2
    assert "linux,initrd-start = <0x83000000>;" in text


def test_a_saved_simulation_restores_to_the_same_run(tmp_path):
    # --save-at (a cycle) and --save-on (console text) stop the SoC with its
    # DRAM, the harness's queues and counts in one file; --restore goes on
    # from there: the two halves print what one run prints, cycle for cycle
    exe = os.path.join(SOC, "soc-sim1")
    prog = os.path.join(SOC, "sw", "test_nic.elf")
    whole = subprocess.run([exe, prog], capture_output=True, text=True, timeout=120)
    assert whole.returncode == 0, whole.stdout
    for how in (["--save-at", "12000"], ["--save-on", "wire_rtt_ns="]):
        snap = tmp_path / "snap"
        first = subprocess.run([exe, *how, str(snap), prog], capture_output=True, text=True,
                               timeout=120)
        assert first.returncode == 0 and "saved=" in first.stdout, first.stdout + first.stderr
        assert "failures=" not in first.stdout, "saved before the end"
        rest = subprocess.run([exe, "--restore", str(snap)], capture_output=True, text=True,
                              timeout=120)
        assert rest.returncode == 0, rest.stdout + rest.stderr
        head = first.stdout[:first.stdout.index("saved=")]
        assert head + rest.stdout == whole.stdout, (how, head, rest.stdout)
    bad = tmp_path / "bad"
    bad.write_bytes(b"not a snapshot")
    r = subprocess.run([exe, "--restore", str(bad)], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0


def test_console_receives_what_the_harness_types():
    # the console's receive side: LSR's data-ready bit while a byte waits,
    # the receive register takes it, in order
    r = sim(ONE, "console.elf", "--input", "hello Rocket\\n")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "got=hello Rocket\nbytes=12\ndata_ready_after=0\n" in r.stdout, r.stdout
    # its interrupt: IIR says none while IER is clear (0xc1), "transmitter
    # empty" (0xc2) once enabled, and the PLIC sees it (source 3 + harts)
    assert "iir_idle=193\niir_thre=194\nplic_pending=1\n" in r.stdout, r.stdout
    r = sim(ONE, "console.elf", "--max-cycles", "3000000")
    assert r.returncode == 1 and "console: no input" in r.stdout, r.stdout
