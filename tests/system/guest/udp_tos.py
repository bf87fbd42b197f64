"""IPv4 header fields on a UDP socket: TOS and TTL set for sending (IP_TOS,
IP_TTL, per datagram as control messages too) and reported on receiving
(IP_RECVTOS, IP_RECVTTL, IP_PKTINFO), as ECN-aware programs (QUIC stacks)
and relays (TURN servers) use them.

  udp_tos.py server PORT     answer each datagram with what its header held
  udp_tos.py client IP PORT  N requests, then one each with an IP_TOS and
                             an IP_TTL control message, then the socket's
                             IP_TTL and IP_TOS changed between two
                             requests; print what came back

Each line the client prints is the same on Linux sockets and on any
correct implementation of them."""
import socket
import struct
import sys

TOS_C, TTL_C = 0xB9, 17     # the client's socket: DSCP 46, ECN ECT(1)
TOS_S, TTL_S = 0x2A, 33     # the server's socket: DSCP 10, ECN ECT(0)
IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
IP_RECVTTL = getattr(socket, "IP_RECVTTL", 12)
IP_PKTINFO = getattr(socket, "IP_PKTINFO", 8)


def fields(anc):
    """tos, ttl, destination address of the control messages."""
    tos = ttl = dst = None
    for level, kind, data in anc:
        if level != socket.IPPROTO_IP:
            continue
        if kind == socket.IP_TOS:
            tos = data[0]
        elif kind == socket.IP_TTL:
            ttl = struct.unpack("i", data[:4])[0]
        elif kind == IP_PKTINFO:
            dst = socket.inet_ntoa(data[8:12])
    return tos, ttl, dst


def sock(tos, ttl):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, ttl)
    for opt in (IP_RECVTOS, IP_RECVTTL, IP_PKTINFO):
        s.setsockopt(socket.IPPROTO_IP, opt, 1)
    return s


def server(port):
    s = sock(TOS_S, TTL_S)
    s.bind(("0.0.0.0", port))
    while True:
        data, anc, _, peer = s.recvmsg(2048, 256)
        tos, ttl, dst = fields(anc)
        s.sendto(b"%s tos=%#x ttl=%d dst=%s" % (data, tos, ttl, dst.encode()), peer)


def client(ip, port, n):
    s = sock(TOS_C, TTL_C)
    s.settimeout(5)
    s.connect((ip, port))
    cm_tos = [(socket.IPPROTO_IP, socket.IP_TOS, bytes([0x02]))]        # ECT(0)
    cm_same = [(socket.IPPROTO_IP, socket.IP_TOS, struct.pack("i", TOS_C))]
    cm_ttl = [(socket.IPPROTO_IP, socket.IP_TTL, struct.pack("i", 5))]
    sends = [(b"req%d" % i, []) for i in range(n)]
    sends += [(b"cm-tos", cm_tos), (b"cm-same", cm_same), (b"cm-ttl", cm_ttl)]
    for payload, cm in sends + [(b"ttl-9", None), (b"tos-ecn0", None)]:
        if cm is None:
            # new values for the socket itself (as a relay passing each
            # datagram's TTL on sets them), its datagrams in flight
            s.send(payload + b"-before")
            if payload == b"ttl-9":
                s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, 9)
            else:
                s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0x02)
            cm = []
            data, anc, _, _ = s.recvmsg(2048, 256)
            tos, ttl, dst = fields(anc)
            print(f"{data.decode()} | back tos={tos:#x} ttl={ttl} dst={dst}", flush=True)
        s.sendmsg([payload], cm)
        data, anc, _, _ = s.recvmsg(2048, 256)
        tos, ttl, dst = fields(anc)
        print(f"{data.decode()} | back tos={tos:#x} ttl={ttl} dst={dst}", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(int(sys.argv[2]))
    else:
        client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 10)
