"""bench/delayproxy.c, the delay proxy of `make bench-latency`, in its forwarding mode
(--target) in front of an echo server of this test: a round trip through it takes two
one-way delays and not much more; a burst of pipelined messages comes back within one
round trip, not one round trip each (no head-of-line wait); megabytes through several
connections at once, with a queue bound small enough to pause the senders, arrive intact
and in order; a close is passed on once what came before it was delivered; a connection
whose upstream refuses is closed. No service, no root: `make check` runs it (the
transparent mode, SO_ORIGINAL_DST behind a redirect, is test/hosts/test_netfault.py's)."""

import hashlib
import os
import socket
import statistics
import subprocess
import threading
import time

import pytest

from stack import BIN

PROXY = BIN / "bench" / "delayproxy"


class EchoServer:
    """Sends back whatever each connection sends, and closes when it closes."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn):
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                conn.sendall(data)

    def close(self):
        self.sock.close()


class Proxy:
    def __init__(self, one_way_us, target_port, *extra):
        assert PROXY.exists(), f"{PROXY} is not built (make {PROXY.relative_to(BIN.parent)})"
        self.proc = subprocess.Popen([str(PROXY), "--one-way-us", str(one_way_us),
                                      "--target", f"127.0.0.1:{target_port}", "--exit-on-stdin-eof", *extra],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline().split()
        assert line[:1] == ["listening"], f"the proxy did not start: {line} {self.proc.stderr.read()}"
        self.port = int(line[1])

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def stop(self):
        """SIGTERM: exit 0 and the summary line; returns it."""
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=10)
        assert self.proc.returncode == 0, f"exit {self.proc.returncode}: {err}"
        assert "ERROR: AddressSanitizer" not in err and "runtime error" not in err, err
        return err


@pytest.fixture
def echo():
    server = EchoServer()
    yield server
    server.close()


def recv_exactly(s, n):
    out = bytearray()
    while len(out) < n:
        data = s.recv(n - len(out))
        assert data, f"closed after {len(out)} of {n} bytes"
        out += data
    return bytes(out)


def round_trips_ms(proxy, count=30):
    s = proxy.connect()
    try:
        ms = []
        for i in range(count):
            msg = b"ping %04d\n" % i
            t = time.perf_counter()
            s.sendall(msg)
            assert recv_exactly(s, len(msg)) == msg
            ms.append((time.perf_counter() - t) * 1000)
        return ms
    finally:
        s.close()


@pytest.mark.parametrize("one_way_us", [1000, 5000])
def test_a_round_trip_takes_two_one_way_delays(echo, one_way_us):
    proxy = Proxy(one_way_us, echo.port)
    try:
        ms = round_trips_ms(proxy)
    finally:
        summary = proxy.stop()
    rtt = 2 * one_way_us / 1000
    # Never sooner than the two delays; at idle, within a few ms of them (the echo server is
    # Python, the proxy may be the sanitizer build).
    assert min(ms) >= rtt, f"a round trip of {min(ms):.3f} ms with {rtt} ms of delay: {ms}"
    assert statistics.median(ms) < rtt + 4, f"median {statistics.median(ms):.3f} ms for {rtt} ms: {ms}"
    assert "1 connections" in summary, summary


def test_without_delay_a_round_trip_is_quick(echo):
    proxy = Proxy(0, echo.port)
    try:
        ms = round_trips_ms(proxy)
    finally:
        proxy.stop()
    assert statistics.median(ms) < 2, f"median {statistics.median(ms):.3f} ms with no delay: {ms}"


def test_a_burst_comes_back_within_one_round_trip_not_one_each(echo):
    """200 messages sent back to back, each read by the proxy as it comes: every one is due
    its own read time + the delay, so the last is back about one round trip after it went."""
    one_way_us = 5000
    proxy = Proxy(one_way_us, echo.port)
    s = proxy.connect()
    try:
        msgs = [b"m%05d;" % i for i in range(200)]
        t = time.perf_counter()
        for m in msgs:
            s.sendall(m)
        got = recv_exactly(s, sum(len(m) for m in msgs))
        took = (time.perf_counter() - t) * 1000
    finally:
        s.close()
        proxy.stop()
    assert got == b"".join(msgs)
    assert 2 * one_way_us / 1000 <= took < 2 * one_way_us / 1000 + 40, f"{took:.1f} ms for the burst"


def test_megabytes_arrive_intact_and_in_order_over_several_connections(echo):
    """4 connections at once, 3 MB each way each, through a queue bound of 64 KiB (so the
    proxy pauses its readers again and again) and 1 ms each way."""
    proxy = Proxy(1000, echo.port, "--queue-max", "65536")
    size = 3 << 20
    errors, digests = [], {}

    def one(k):
        payload = os.urandom(size)
        s = proxy.connect()
        try:
            sender = threading.Thread(target=lambda: (s.sendall(payload), s.shutdown(socket.SHUT_WR)))
            sender.start()
            h, n = hashlib.sha256(), 0
            while True:
                data = s.recv(1 << 20)
                if not data:
                    break
                h.update(data)
                n += len(data)
            sender.join(30)
            # The echo server closes once it read our end; the proxy passes that on after
            # the last byte, so the stream ends complete.
            digests[k] = (n, h.hexdigest() == hashlib.sha256(payload).hexdigest())
        except OSError as e:
            errors.append(f"connection {k}: {e}")
        finally:
            s.close()

    threads = [threading.Thread(target=one, args=(k,)) for k in range(4)]
    t = time.monotonic()
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    took = time.monotonic() - t
    summary = proxy.stop()
    assert not errors, errors
    assert digests == {k: (size, True) for k in range(4)}, digests
    assert "4 connections" in summary and f"{4 * size} bytes" in summary, summary
    print(f"4 x {size >> 20} MB echoed in {took:.2f} s; {summary.strip()}")


def test_a_refused_upstream_closes_the_client():
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))     # a port held by no listener for the whole test
        proxy = Proxy(0, bound.getsockname()[1])
        s = proxy.connect()
        try:
            s.settimeout(5)
            try:
                assert s.recv(16) == b""
            except ConnectionResetError:
                pass
        finally:
            s.close()
            summary = proxy.stop()
    assert "(1 refused or failed)" in summary, summary
