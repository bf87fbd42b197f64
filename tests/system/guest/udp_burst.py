"""A burst the socket does not read yet: send N datagrams of SIZE bytes to
the echo peer without reading, wait, then count what the socket kept.
usage: udp_burst.py HOST PORT N SIZE [RCVBUF]"""
import socket
import sys
import time

host, port, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
if len(sys.argv) > 5:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(sys.argv[5]))
s.bind(("0.0.0.0", 0))
s.connect((host, port))
for i in range(n):
    s.send(i.to_bytes(4, "big") * (size // 4))
time.sleep(0.5)
held, bad = 0, 0
while True:
    try:
        d = s.recv(2048, socket.MSG_DONTWAIT)
    except BlockingIOError:
        break
    held += 1
    bad += len(d) != size or d[:4] * (size // 4) != d
print(f"burst size={size} rcvbuf={s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)} "
      f"sent={n} held={held} bad={bad}")
s.close()
