"""Slow clients (slowloris) for the header-timeout tests of the gateway and the admin:
sockets that each send one byte of a never-ending header every `every` seconds from a
thread, and note when the server closed them (EOF or reset). epoll, not select: a test
may hold more than select's 1,024 descriptors."""

import os
import resource
import select
import socket
import threading
import time

HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Slow: " + b"a" * 4096


def raise_nofile(n):
    """Lets this process hold n descriptors (up to its hard limit) for its slow clients."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n if hard == resource.RLIM_INFINITY else min(n, hard)
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def cpu_seconds(pid):
    """User plus system CPU time a process has used so far."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Dribblers:
    def __init__(self, port, n, first=b"", head=HEAD, every=0.2, connect_timeout=5):
        self.head, self.every = head, every
        self.socks, self.started, self.closed = [], [], {}
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=connect_timeout)
            self.started.append(time.monotonic())
            if first:
                s.sendall(first)
            s.setblocking(False)
            self.socks.append(s)
        self.index = {s.fileno(): i for i, s in enumerate(self.socks)}
        self.offset = [0] * n
        self.epoll = select.epoll()
        for s in self.socks:
            self.epoll.register(s.fileno(), select.EPOLLIN | select.EPOLLRDHUP)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def mark_closed(self, i):
        if i not in self.closed:
            self.closed[i] = time.monotonic()
            self.epoll.unregister(self.socks[i].fileno())

    def run(self):
        while not self.stop.is_set() and len(self.closed) < len(self.socks):
            for i, s in enumerate(self.socks):
                if i in self.closed:
                    continue
                try:
                    s.send(self.head[self.offset[i]:self.offset[i] + 1])
                    self.offset[i] = (self.offset[i] + 1) % len(self.head)
                except BlockingIOError:
                    pass
                except OSError:
                    self.mark_closed(i)
            deadline = time.monotonic() + self.every
            while (left := deadline - time.monotonic()) > 0 and len(self.closed) < len(self.socks):
                for fd, _ in self.epoll.poll(left):
                    i = self.index[fd]
                    if i in self.closed:
                        continue
                    try:
                        if self.socks[i].recv(4096) == b"":
                            self.mark_closed(i)
                    except BlockingIOError:
                        pass
                    except OSError:
                        self.mark_closed(i)

    def open_count(self):
        return len(self.socks) - len(self.closed)

    def lifetimes(self):
        return [self.closed[i] - self.started[i] for i in sorted(self.closed)]

    def finish(self):
        self.stop.set()
        self.thread.join(10)
        self.epoll.close()
        for s in self.socks:
            s.close()
