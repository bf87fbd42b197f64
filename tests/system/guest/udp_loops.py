"""Python's three ways of waiting on UDP sockets against an echo: a socket
timeout (O_NONBLOCK and poll() inside the socket module), a selectors
(epoll) loop over several sockets, and an asyncio datagram endpoint.
Every echo is matched to what was sent.
Usage: python3 udp_loops.py HOST PORT"""
import asyncio
import selectors
import socket
import sys

HOST, PORT = sys.argv[1], int(sys.argv[2])


def timeouts(n=20):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5.0)
    ok = 0
    for i in range(n):
        m = b"timeout-%d-" % i + b"t" * (i * 37)
        s.sendto(m, (HOST, PORT))
        ok += s.recvfrom(4096) == (m, (HOST, PORT))
    s.close()
    return ok


def selector(nsock=4, each=10):
    sel = selectors.DefaultSelector()
    want = {}
    for k in range(nsock):
        t = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        t.setblocking(False)
        t.connect((HOST, PORT))
        sel.register(t, selectors.EVENT_READ, k)
        for j in range(each):
            m = b"sel-%d-%d" % (k, j)
            t.send(m)
            want[m] = k
    ok = 0
    while want:
        ready = sel.select(timeout=5)
        if not ready:
            break
        for key, _ in ready:
            while True:
                try:
                    d = key.fileobj.recv(4096)
                except BlockingIOError:
                    break
                if want.pop(d, None) == key.data:
                    ok += 1
    for key in list(sel.get_map().values()):
        sel.unregister(key.fileobj)
        key.fileobj.close()
    return ok


class Echoes(asyncio.DatagramProtocol):
    def __init__(self, n):
        self.want = {b"aio-%d" % i for i in range(n)}
        self.ok = 0
        self.done = asyncio.get_running_loop().create_future()

    def datagram_received(self, data, addr):
        if data in self.want:
            self.want.discard(data)
            self.ok += 1
        if not self.want and not self.done.done():
            self.done.set_result(None)


async def aio(n=30):
    loop = asyncio.get_running_loop()
    tr, pr = await loop.create_datagram_endpoint(lambda: Echoes(n), remote_addr=(HOST, PORT))
    for m in sorted(pr.want):
        tr.sendto(m)
    try:
        await asyncio.wait_for(pr.done, 10)
    except asyncio.TimeoutError:
        pass
    tr.close()
    return pr.ok


print(f"py_timeout={timeouts()} py_selector={selector()} py_asyncio={asyncio.run(aio())}",
      flush=True)
