"""Connections that never finish a request (slowloris) against the real gateway: each
must deliver a complete request within http.header-timeout-ms of its accept, or of the
first byte of its next request on a kept-alive connection, else the gateway closes it;
until it is really closed it counts against http.max-connections (docs/protection.md,
"HTTP limits").

The slow clients send one header byte at a time, far more often than http.idle-timeout,
so evhttp's own per-read timeout never fires: only the header timeout can end them."""

import select
import socket
import threading
import time

import pytest

from conftest import free_port, poll_until
from gatewayhttp import gateway_metrics, http_bytes, read_raw_reply

CAP = 20
HEADER_TIMEOUT_MS = 1000
IDLE_TIMEOUT_S = 3
DRIBBLE_EVERY = 0.2   # seconds between two bytes: far below the idle timeout
# Timer and scheduling slack of an ASan build on a busy two-core machine.
LATE = 1.0

HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Slow: " + b"a" * 4096


class Dribblers:
    """Sockets that each send one byte of a never-ending header every DRIBBLE_EVERY
    seconds from a thread, and note when the gateway closed them (EOF or reset)."""

    def __init__(self, port, n, first=b""):
        self.socks, self.started, self.closed = [], [], {}
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            self.started.append(time.monotonic())
            if first:
                s.sendall(first)
            self.socks.append(s)
        self.offset = [0] * n
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def mark_closed(self, i):
        self.closed.setdefault(i, time.monotonic())

    def run(self):
        while not self.stop.is_set() and len(self.closed) < len(self.socks):
            for i, s in enumerate(self.socks):
                if i in self.closed:
                    continue
                try:
                    s.send(HEAD[self.offset[i]:self.offset[i] + 1])
                    self.offset[i] = (self.offset[i] + 1) % len(HEAD)
                except OSError:
                    self.mark_closed(i)
            live = [s for i, s in enumerate(self.socks) if i not in self.closed]
            readable, _, _ = select.select(live, [], [], DRIBBLE_EVERY) if live else ([], [], [])
            for s in readable:
                i = self.socks.index(s)
                try:
                    if s.recv(4096) == b"":
                        self.mark_closed(i)
                except OSError:
                    self.mark_closed(i)

    def lifetimes(self):
        return [self.closed[i] - self.started[i] for i in sorted(self.closed)]

    def finish(self):
        self.stop.set()
        self.thread.join(10)
        for s in self.socks:
            s.close()


@pytest.fixture
def slow_gateway(gateway_with):
    metrics_port = free_port()
    gw = gateway_with({"http.max-connections": CAP, "http.header-timeout-ms": HEADER_TIMEOUT_MS,
                       "http.idle-timeout": IDLE_TIMEOUT_S, "http.metrics-port": metrics_port})
    gw.metrics_port = metrics_port
    return gw


def test_slow_headers_are_closed_and_count_until_then(slow_gateway):
    gw = slow_gateway
    port = gw.conf.http_port
    slow = Dribblers(port, CAP + 5)   # five more than the cap: they wait in the backlog
    waiting = None
    try:
        # While they are open every one counts: the cap holds and a complete request
        # beyond it waits in the backlog, unanswered.
        assert gateway_metrics(gw.metrics_port)["seckill_http_open_connections"] == CAP
        waiting = socket.create_connection(("127.0.0.1", port), timeout=0.3)
        waiting.sendall(http_bytes("GET", "/healthz"))
        with pytest.raises(socket.timeout):
            waiting.recv(1)
        assert not slow.closed, "a slow client was closed before its header timeout"

        # Each is closed once its header timeout is over, measured from its accept: the
        # first CAP at once, the five from the backlog as places free up.
        poll_until(lambda: len(slow.closed) == len(slow.socks), 10, "the slow clients to be closed")
        first = slow.lifetimes()[:CAP]
        assert min(first) >= HEADER_TIMEOUT_MS / 1000 - 0.05, first
        assert max(first) <= HEADER_TIMEOUT_MS / 1000 + LATE, first

        # Their places were given back: the waiting client is served, and so is a new one.
        waiting.settimeout(5)
        r = read_raw_reply(waiting)
        assert r.code == 200, repr(r)
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(http_bytes("GET", "/healthz"))
        assert read_raw_reply(s).code == 200
        s.close()
        m = gateway_metrics(gw.metrics_port)
        assert m["seckill_http_header_timeouts_total"] == CAP + 5, m
    finally:
        slow.finish()
        if waiting:
            waiting.close()


def test_kept_alive_connection_gets_the_header_timeout_from_its_next_request(slow_gateway):
    gw = slow_gateway
    port = gw.conf.http_port
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(http_bytes("GET", "/healthz"))
        assert read_raw_reply(s).code == 200
        # Idle between requests longer than the header timeout, within the idle timeout:
        # still open, because no request has begun.
        idle_until = time.monotonic() + HEADER_TIMEOUT_MS / 1000 + 0.5
        poll_until(lambda: time.monotonic() >= idle_until, 3, "the idle pause to pass")
        s.sendall(http_bytes("GET", "/healthz"))
        assert read_raw_reply(s).code == 200
        # A request that then never completes is closed a header timeout after it began.
        begun = time.monotonic()
        s.sendall(HEAD[:10])
        s.settimeout(HEADER_TIMEOUT_MS / 1000 + LATE + 1)
        end = b"?"
        while end:
            try:
                end = s.recv(4096)
            except ConnectionResetError:
                end = b""
            if end == b"":
                break
            pytest.fail(f"an answer to an incomplete request: {end!r}")
        took = time.monotonic() - begun
        assert HEADER_TIMEOUT_MS / 1000 - 0.05 <= took <= HEADER_TIMEOUT_MS / 1000 + LATE, took
    finally:
        s.close()
