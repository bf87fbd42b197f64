"""A route and the MTU change under sockets that keep sending, as a router
failing over or a tunnel coming up does.

  udp_paths.py server        print a line for each datagram to ports 7300
                             and 7301 (its first word and its length)
  udp_paths.py client SERVER  through a dead next hop, then a live one:
                             a connected and an unconnected socket send 10
                             datagrams each to 10.9.9.9:7300 via 10.0.3.99
                             (a neighbour entry to a MAC nobody has), the
                             route is replaced to go via SERVER, and both
                             send 10 more; then a socket connected to
                             SERVER:7301 sends 5 datagrams of 1200 bytes,
                             the interface's MTU drops to 900 and it sends
                             5 more

On Linux sockets the server sees every datagram sent after each change
(those of the first 20 are lost at the dead hop), and the frames after the
MTU change are IP fragments of at most 900 bytes."""
import os
import select
import socket
import sys

DEAD_HOP, DEAD_MAC, FAR = "10.0.3.99", "02:00:00:00:00:99", "10.9.9.9"


def sh(cmd):
    if os.system(cmd):
        sys.exit(f"failed: {cmd}")


def server():
    socks = []
    for port in (7300, 7301):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", port))
        socks.append(s)
    print("server_ready", flush=True)
    while True:
        for s in select.select(socks, [], [])[0]:
            data = s.recv(65536)
            print("got", data.split(b" ", 1)[0].decode(), len(data), flush=True)


def client(srv):
    sh(f"arp -i eth0 -s {DEAD_HOP} {DEAD_MAC}")
    sh(f"ip route replace {FAR}/32 via {DEAD_HOP} dev eth0")
    conn = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    conn.connect((FAR, 7300))
    free = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    free.bind(("0.0.0.0", 0))
    for phase in ("dead", "live"):
        if phase == "live":
            sh(f"ip route replace {FAR}/32 via {srv} dev eth0")
        for i in range(10):
            conn.send(f"{phase}-conn-{i} x".encode())
            free.sendto(f"{phase}-free-{i} x".encode(), (FAR, 7300))
    big = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    big.connect((srv, 7301))
    for phase in ("mtu1500", "mtu900"):
        if phase == "mtu900":
            sh("ip link set eth0 mtu 900")
        for i in range(5):
            big.send(f"{phase}-{i} ".encode().ljust(1200, b"x"))
    print(f"fds conn={conn.fileno()} free={free.fileno()} big={big.fileno()}", flush=True)


if __name__ == "__main__":
    server() if sys.argv[1] == "server" else client(sys.argv[2])
