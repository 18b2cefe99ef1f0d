"""The one RESP2 client of the Python side: the integration suite, the chaos suite and the
benchmark read and write Redis through it (GET, HGETALL, ZCARD, SCAN and friends).

One connection, one command at a time; a lock lets threads share it. A connection that
broke (Redis restarted, a chaos scenario killed it) is opened again and the command sent
once more. Bulk strings come back as str, integers as int, nil as None, arrays as lists;
an error reply raises RedisError.
"""

import socket
import threading


class RedisError(Exception):
    """An error reply, or an answer that is not RESP2."""


class Redis:
    def __init__(self, host, port, timeout=10):
        self.addr = (host, int(port))
        self.timeout = timeout
        self.lock = threading.Lock()
        self.sock = None
        self.file = None

    def _connect(self):
        self.close()
        self.sock = socket.create_connection(self.addr, timeout=self.timeout)
        self.file = self.sock.makefile("rb")

    def close(self):
        if self.file:
            self.file.close()
        if self.sock:
            self.sock.close()
        self.sock = self.file = None

    def _read(self):
        line = self.file.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("redis closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            return self.file.read(n + 2)[:-2].decode()
        if kind == b"*":
            n = int(rest)
            if n < 0:
                return None
            return [self._read() for _ in range(n)]
        raise RedisError(f"unexpected reply {line!r}")

    def __call__(self, *args):
        parts = [f"*{len(args)}\r\n".encode()]
        for a in args:
            b = str(a).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
        payload = b"".join(parts)
        with self.lock:
            for attempt in (0, 1):
                try:
                    if self.sock is None:
                        self._connect()
                    self.sock.sendall(payload)
                    return self._read()
                except (OSError, ConnectionError):
                    self.close()
                    if attempt:
                        raise
