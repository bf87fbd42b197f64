"""A connected UDP socket whose peer has no socket on the port: the peer's
ICMP port unreachable reaches the next receive as ECONNREFUSED, blocking,
with a timeout, and through poll (POLLERR). Each receive is bounded (an
alarm, a timeout), so a receive the error does not reach says so.
Usage: python3 udp_refused.py HOST PORT"""
import errno
import select
import signal
import socket
import sys

HOST, PORT = sys.argv[1], int(sys.argv[2])


class Alarm(Exception):
    pass


def alarm(*_):
    raise Alarm()


def outcome(call):
    try:
        return f"data={call()!r}"
    except Alarm:
        return "blocked"
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


signal.signal(signal.SIGALRM, alarm)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((HOST, PORT))
s.send(b"blocking")
signal.alarm(5)
print("refused-blocking", outcome(lambda: s.recv(100)), flush=True)
signal.alarm(0)
s.settimeout(5)
s.send(b"timeout")
print("refused-timeout", outcome(lambda: s.recv(100)), flush=True)
s.settimeout(None)
s.send(b"poll")
p = select.poll()
p.register(s, select.POLLIN)
ev = p.poll(5000)
print("refused-poll", "revents=%#x" % (ev[0][1] if ev else 0),
      outcome(lambda: s.recv(100, socket.MSG_DONTWAIT)), flush=True)
print("so_error", s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR), flush=True)
