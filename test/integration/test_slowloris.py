"""Connections that never finish a request (slowloris) against the real gateway: each
must deliver a complete request within http.header-timeout-ms of its accept, or of the
first byte of its next request on a kept-alive connection, else the gateway closes it;
until it is really closed it counts against http.max-connections (docs/protection.md,
"HTTP limits").

The slow clients send one header byte at a time, far more often than http.idle-timeout,
so evhttp's own per-read timeout never fires: only the header timeout can end them.

Out of descriptors (ulimit -n below the cap), the gateway pauses accepting instead of
retrying accept() on one core, until the slow clients' deadline frees descriptors."""

import os
import socket
import time

import pytest

from stack import free_port, poll_until
from dribble import HEAD, Dribblers, cpu_seconds
from gatewayhttp import gateway_metrics, http_bytes, read_raw_reply

CAP = 20
HEADER_TIMEOUT_MS = 1000
IDLE_TIMEOUT_S = 3
DRIBBLE_EVERY = 0.2   # seconds between two bytes: far below the idle timeout
# Timer and scheduling slack of an ASan build on a busy two-core machine.
LATE = 1.0

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


def test_out_of_descriptors_pauses_accepting_instead_of_spinning(gateway_with):
    limit = 256
    metrics_port = free_port()
    gw = gateway_with({"http.header-timeout-ms": 3000, "http.metrics-port": metrics_port}, nofile=(limit, limit))
    port = gw.conf.http_port
    slow = Dribblers(port, limit + 50, every=1.0)  # those it cannot accept wait in the backlog
    try:
        poll_until(lambda: len(os.listdir(f"/proc/{gw.pid}/fd")) >= limit - 4, 5, "the gateway out of descriptors")
        before, t0 = cpu_seconds(gw.pid), time.monotonic()
        time.sleep(1.0)  # a measuring window, not a wait for a state
        share = (cpu_seconds(gw.pid) - before) / (time.monotonic() - t0)
        assert share < 0.4, f"the gateway used {share:.0%} of a core with no descriptor left"
        poll_until(lambda: len(slow.closed) == len(slow.socks), 2 * 3 + 3 * LATE, "every slow client closed")
        assert gateway_metrics(metrics_port)["seckill_http_accept_failures_total"] >= 1
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(http_bytes("GET", "/healthz"))
        assert read_raw_reply(s).code == 200
        s.close()
    finally:
        slow.finish()
