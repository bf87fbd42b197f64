"""A raw Ethernet peer on the far end of the Accio NIC's wire.

QEMU's socket netdev connects to it over TCP on 127.0.0.1 and exchanges
frames, each preceded by its length as a 4-byte big-endian integer. The peer
plays the host 10.0.2.2: it answers ARP, echoes UDP datagrams, and before
every echo it can inject malformed frames (runt, oversize, garbage).
"""
import random
import socket
import struct
import threading

PEER_MAC = bytes.fromhex("5254000000aa")
PEER_IP = socket.inet_aton("10.0.2.2")


def ip_checksum(hdr):
    if len(hdr) % 2:
        hdr += b"\0"
    s = sum(struct.unpack(f"!{len(hdr) // 2}H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


class WirePeer:
    def __init__(self, inject=()):
        self.inject = list(inject)
        self.srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(1)
        self.port = self.srv.getsockname()[1]
        self.echoed = 0
        self.injected = {k: 0 for k in self.inject}
        self.rng = random.Random(1234)
        self.conn = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _send(self, frame):
        self.conn.sendall(struct.pack("!I", len(frame)) + frame)

    def _recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.conn.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def _bad_frame(self, kind, guest_mac):
        if kind == "runt":       # 20 bytes: below the 60-byte minimum
            return guest_mac + PEER_MAC + b"\x08\x00" + b"\0" * 6
        if kind == "oversize":   # 2000 bytes: above 1518
            return guest_mac + PEER_MAC + b"\x08\x00" + bytes(self.rng.randrange(256) for _ in range(1986))
        if kind == "garbage":    # random bytes for another station
            dst = bytes([0x02]) + bytes(self.rng.randrange(256) for _ in range(5))
            return dst + bytes(self.rng.randrange(256) for _ in range(200))
        raise ValueError(kind)

    def _serve(self):
        self.srv.settimeout(600)
        try:
            self.conn, _ = self.srv.accept()
            while True:
                (n,) = struct.unpack("!I", self._recv_exact(4))
                self._handle(self._recv_exact(n))
        except (EOFError, OSError):
            pass

    def _handle(self, f):
        if len(f) < 14:
            return
        src, etype = f[6:12], struct.unpack("!H", f[12:14])[0]
        if etype == 0x0806 and f[21] == 1 and f[38:42] == PEER_IP:   # ARP request for us
            reply = (src + PEER_MAC + b"\x08\x06" + f[14:20] + b"\x00\x02" + PEER_MAC
                     + PEER_IP + f[22:28] + f[28:32])
            self._send(reply.ljust(60, b"\0"))
            return
        if etype != 0x0800 or f[23] != 17 or f[30:34] != PEER_IP:
            return
        ihl = (f[14] & 0xF) * 4
        ip, udp = f[14:14 + ihl], f[14 + ihl:]
        total = struct.unpack("!H", ip[2:4])[0]
        sport, dport, ulen = struct.unpack("!HHH", udp[:6])
        payload = udp[8:ulen]
        for kind in self.inject:
            self._send(self._bad_frame(kind, src))
            self.injected[kind] += 1
        iph = bytearray(ip)
        iph[12:16], iph[16:20] = ip[16:20], ip[12:16]
        iph[10:12] = b"\0\0"
        iph[10:12] = struct.pack("!H", ip_checksum(bytes(iph)))
        out_udp = struct.pack("!HHHH", dport, sport, ulen, 0) + payload
        frame = src + PEER_MAC + b"\x08\x00" + bytes(iph) + out_udp
        assert len(iph) + len(out_udp) == total
        self._send(frame.ljust(60, b"\0"))
        self.echoed += 1

    def close(self):
        for s in (self.conn, self.srv):
            try:
                if s:
                    s.close()
            except OSError:
                pass
