"""A SO_REUSEPORT group under more sockets than the uncore has rows: does
every flow stay with one member of the group, as on Linux sockets?

  udp_group.py server        a group of 2 sockets on port 7400, a thread
                             each, and CHURN other sockets on ports 7500..,
                             one thread over all of them; every datagram is
                             echoed, and each the group receives prints
                             "member K SPORT"
  udp_group.py client SERVER ROUNDS PASSES
                             16 flows to the group and CHURN to the other
                             ports: each round, one request on every
                             flow, then PASSES on every churn socket (the
                             group idle meanwhile), each answered before
                             the next; prints "flows_ok=N" and "churn_ok=N"
                             (answers that came back)

A server that keeps a flow's state in the thread of its member (a TURN
relay, a QUIC or DTLS server with several workers) needs each flow to reach
one member for its whole life."""
import selectors
import socket
import sys
import threading

GROUP, CHURN_BASE, CHURN, FLOWS = 7400, 7500, 80, 16


def member(k, lock):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(("0.0.0.0", GROUP))
    while True:
        data, addr = s.recvfrom(2048)
        with lock:
            print(f"member {k} {addr[1]}", flush=True)
        s.sendto(data, addr)


def churn_server():
    sel = selectors.DefaultSelector()
    for i in range(CHURN):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", CHURN_BASE + i))
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    while True:
        for key, _ in sel.select():
            try:
                data, addr = key.fileobj.recvfrom(2048)
            except BlockingIOError:
                continue
            key.fileobj.sendto(data, addr)


def server():
    lock = threading.Lock()
    for k in range(2):
        threading.Thread(target=member, args=(k, lock), daemon=True).start()
    print("server_ready", flush=True)
    churn_server()


def ask(s, msg):
    """One request and its answer; a late answer to an earlier one is
    skipped."""
    s.send(msg)
    try:
        while s.recv(2048) != msg:
            pass
        return True
    except socket.timeout:
        return False


def client(srv, rounds, passes):
    flows, churn = [], []
    for port, n, out in ((GROUP, FLOWS, flows), (None, CHURN, churn)):
        for i in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(2.0)
            s.connect((srv, port or CHURN_BASE + i))
            out.append(s)
    ok_flows = ok_churn = 0
    for r in range(rounds):
        for i, s in enumerate(flows):
            ok_flows += ask(s, b"flow %d %d" % (r, i))
        for p in range(passes):
            for i, s in enumerate(churn):
                ok_churn += ask(s, b"churn %d %d %d" % (r, p, i))
    print(f"flows_ok={ok_flows}\nchurn_ok={ok_churn}", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server()
    else:
        client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
