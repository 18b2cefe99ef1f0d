"""What the chaos suite runs next to a fault (chaoslib.run): the paced load of distinct
users (Load, one Try per request, from Python threads; OpenLoad, the same from the C
generator build/bench/openloop for rates Python cannot keep on two cores), the I6 sampler that checks for a MySQL row the moment
an order shows SUCCESS (Sampler, with SqlPipe, a long-lived mariadb session), and the
scraper that keeps each gateway process's counters (MetricsScraper)."""

import http.client
import json
import os
import random
import re
import select
import signal
import socket
import subprocess
import threading
import time
from collections import deque

from gatewayhttp import Reply, raw_execute

HTTP_TIMEOUT = 10.0      # client timeout: longer than any answer may take (4 s bound)


# ---- a persistent SQL session, for the I6 sampler ---------------------------------------


class SqlPipe:
    """One long-lived `mariadb` client reading statements from a pipe: a query costs a
    round trip instead of a process start, so the I6 check runs right after SUCCESS is
    seen. Any trouble (server down, timeout) answers None and starts a fresh client next
    time."""

    END = "#END#"

    def __init__(self, conf):
        self.args = ["mariadb", "-h", conf.get("mysql.host"), "-P", conf.get("mysql.port"),
                     "-u", conf.get("mysql.user"), conf.get("mysql.database"),
                     "-N", "-B", "-n", "--force", "--connect-timeout=2"]
        self.env = dict(os.environ, MYSQL_PWD=conf.get("mysql.password"))
        self.proc = None
        self.buf = b""

    def close(self):
        if self.proc is not None:
            try:
                self.proc.kill()
                self.proc.wait(5)
            except OSError:
                pass
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
        self.proc = None
        self.buf = b""

    def scalar(self, sql, timeout=3.0):
        try:
            if self.proc is None:
                self.proc = subprocess.Popen(self.args, env=self.env, stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            self.proc.stdin.write(f"{sql};\nSELECT '{self.END}';\n".encode())
            self.proc.stdin.flush()
            lines = []
            deadline = time.monotonic() + timeout
            fd = self.proc.stdout.fileno()
            while True:
                while b"\n" in self.buf:
                    line, self.buf = self.buf.split(b"\n", 1)
                    text = line.decode()
                    if text == self.END:
                        return lines[0] if lines else None
                    lines.append(text)
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    raise TimeoutError
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise EOFError
                self.buf += chunk
        except (OSError, TimeoutError, EOFError, ValueError):
            self.close()
            return None


# ---- load ----------------------------------------------------------------------------------


class Try:
    """One POST /seckill/execute: the reply (an integration Reply) or the error."""

    __slots__ = ("user", "repeat", "reply", "error", "sent", "done")

    def __init__(self, user, repeat=False):
        self.user, self.repeat = user, repeat
        self.reply = self.error = None
        self.sent = self.done = None

    @property
    def code(self):
        return self.reply.code if self.reply is not None else None

    @property
    def latency(self):
        return self.done - self.sent

    def kind(self):
        """200, 409, 503 ... for answers; refused, dropped, timeout or bad for errors."""
        if self.reply is not None:
            return str(self.reply.code)
        e = self.error
        if isinstance(e, ConnectionRefusedError):
            return "refused"
        if isinstance(e, (socket.timeout, TimeoutError)):
            return "timeout"
        if isinstance(e, (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine,
                          http.client.IncompleteRead, OSError)):
            return "dropped"
        return "bad"   # an answer that is not JSON, or without success/status

    def __repr__(self):
        what = repr(self.reply) if self.reply is not None else f"{self.kind()} {self.error!r}"
        return f"user {self.user}{' (repeat)' if self.repeat else ''}: {what}"


class Load:
    """A bounded, paced load: `threads` threads, each with its own keep-alive connection,
    together about `rate` requests a second (no catch-up bursts after a slow answer), at
    most `max_requests` requests. Distinct users, plus `repeat_share` second attempts by
    users already answered. `on_accept(order_no)` sees every 200."""

    def __init__(self, port, activity, user_base, rate, threads, max_requests,
                 repeat_share=0.05, on_accept=None):
        self.port, self.activity, self.user_base = port, activity, user_base
        self.rate, self.threads, self.max_requests = rate, threads, max_requests
        self.repeat_share = repeat_share
        self.on_accept = on_accept
        self.tries = []
        self.lock = threading.Lock()
        self.stop_ev = threading.Event()
        self.next_user = 0
        self.issued = 0
        self.answered_users = []
        self.repeated = set()
        self.last_accept = 0.0
        self.accepted = 0
        self.rng = random.Random(activity)
        self.pool = []

    def _next(self):
        with self.lock:
            if self.issued >= self.max_requests:
                return None
            self.issued += 1
            if self.answered_users and self.rng.random() < self.repeat_share:
                u = self.answered_users[self.rng.randrange(len(self.answered_users))]
                if u not in self.repeated:
                    self.repeated.add(u)
                    return Try(u, repeat=True)
            self.next_user += 1
            return Try(self.user_base + self.next_user)

    def _record(self, t):
        with self.lock:
            self.tries.append(t)
            if not t.repeat and t.reply is not None:
                self.answered_users.append(t.user)
            if t.code == 200:
                self.accepted += 1
                self.last_accept = t.done
        if t.code == 200 and self.on_accept is not None:
            self.on_accept(t.reply.get("orderNo"))

    def _worker(self):
        conn = None
        interval = self.threads / self.rate
        nxt = time.monotonic() + random.random() * interval
        while not self.stop_ev.is_set():
            now = time.monotonic()
            if nxt > now:
                self.stop_ev.wait(nxt - now)
                continue
            nxt = max(nxt + interval, now)
            t = self._next()
            if t is None:
                break
            t.sent = time.monotonic()
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=HTTP_TIMEOUT)
                t.reply = raw_execute(conn, t.user, self.activity)
            except Exception as e:  # noqa: BLE001 - every failure is a result here
                t.error = e
                if conn is not None:
                    conn.close()
                conn = None
            t.done = time.monotonic()
            self._record(t)
        if conn is not None:
            conn.close()

    def start(self):
        self.pool = [threading.Thread(target=self._worker, daemon=True) for _ in range(self.threads)]
        for th in self.pool:
            th.start()
        return self

    def stop(self, timeout=30):
        self.stop_ev.set()
        for th in self.pool:
            th.join(timeout)
        assert not any(th.is_alive() for th in self.pool), "load threads did not stop"

    @property
    def finished(self):
        return all(not th.is_alive() for th in self.pool)

    def snapshot(self):
        with self.lock:
            return list(self.tries)


class _Signal:
    """stop_ev of an OpenLoad: set() ends the generator's schedule (SIGTERM)."""

    def __init__(self, load):
        self.load = load

    def set(self):
        self.load.terminate()

    def is_set(self):
        return self.load.stopping


class OpenLoad:
    """The Load of one gateway port from build/bench/openloop (bench/openloop.c -l): the
    requests go out on a fixed schedule of `rate` a second over at most `conns`
    keep-alive connections, each answer or error read back as one Try with the times of
    time.monotonic(). A due request that waited more than a second for a free connection
    is skipped, as a user who gave up (no catch-up burst after a stall); one unanswered
    for HTTP_TIMEOUT is a client timeout; a refused connect uses up a request. Same
    interface as Load."""

    SKIP_MS = 1000

    def __init__(self, bin_dir, log_path, port, activity, user_base, rate, conns, max_requests,
                 repeat_share=0.05, on_accept=None, host="127.0.0.1", netns=None):
        self.log_path = log_path
        # netns: the generator runs on the client machine of the hosts topology (its
        # namespace), as a real client would, not on the machine of the checks.
        self.argv = (["ip", "netns", "exec", netns] if netns else []) + [
            str(bin_dir / "bench" / "openloop"), "-l", "-h", host, "-p", str(port), "-a", str(activity),
            "-r", str(rate), "-n", str(max_requests), "-c", str(conns),
            "-u", str(user_base + 1), "-R", str(repeat_share), "-k", str(self.SKIP_MS),
            "-T", str(HTTP_TIMEOUT), "-t", str(HTTP_TIMEOUT + 2), "-i", "1000"]
        self.host, self.port, self.activity, self.rate = host, port, activity, rate
        self.on_accept = on_accept
        self.tries = []
        self.lock = threading.Lock()
        self.stop_ev = _Signal(self)
        self.stopping = False
        self.accepted = 0
        self.last_accept = 0.0
        self.summary = None
        self.proc = self.reader = None
        self.stderr = b""

    def _parse(self, line):
        f = line.rstrip("\n").split("\t", 7)
        t = Try(int(f[1]), repeat=f[2] == "1")
        t.sent, t.done = float(f[3]), float(f[4])
        if f[0] == "E":
            t.error = {"refused": ConnectionRefusedError, "timeout": TimeoutError}.get(
                f[5], ConnectionResetError)(f[5])
            return t
        try:
            t.reply = Reply(int(f[5]), {"Content-Type": f[6]}, f[7] if len(f) > 7 else "",
                            f"execute user {t.user}")
        except AssertionError as e:
            t.error = e
        return t

    def _handle(self, line):
        if line.startswith("{"):
            self.summary = json.loads(line)
            return
        t = self._parse(line)
        with self.lock:
            self.tries.append(t)
            if t.code == 200:
                self.accepted += 1
                self.last_accept = t.done
        if t.code == 200 and self.on_accept is not None:
            self.on_accept(t.reply.get("orderNo"))

    def _read(self):
        # The generator writes to a file, not a pipe: a reader that falls behind must
        # never block the generator's loop and so bend its schedule.
        pending = ""
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            while True:
                chunk = f.read(1 << 16)
                if chunk:
                    pending += chunk
                    *lines, pending = pending.split("\n")
                    for line in lines:
                        self._handle(line)
                elif self.proc.poll() is not None:
                    rest = f.read()
                    if not rest:
                        break
                    pending += rest
                else:
                    time.sleep(0.02)
        if pending:
            self._handle(pending)

    def start(self):
        self.log_file = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.argv, stdout=self.log_file, stderr=subprocess.PIPE, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        return self

    def terminate(self):
        # Once: openloop restores SIGTERM's default action as it exits, so a second signal
        # landing then would kill it before its summary.
        if self.stopping:
            return
        self.stopping = True
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout=30):
        self.terminate()
        self.proc.wait(timeout)
        self.reader.join(timeout)
        self.stderr = self.proc.stderr.read()
        self.proc.stderr.close()
        self.log_file.close()
        assert self.proc.returncode == 0, f"openloop exit {self.proc.returncode}: {self.stderr.strip()}"
        assert self.summary is not None, "openloop printed no summary"

    @property
    def finished(self):
        return self.proc is not None and self.proc.poll() is not None and not self.reader.is_alive()

    def snapshot(self):
        with self.lock:
            return list(self.tries)


# ---- I6 sampler and /metrics scraper ---------------------------------------------------------


class Sampler(threading.Thread):
    """I6: polls GET /seckill/orders/{orderNo} for recently accepted orders; whenever one
    shows SUCCESS, asks MySQL at once whether its row exists. A sample is 'seen turning'
    when the same order was PROCESSING on the previous poll, so the row check follows the
    moment SUCCESS became visible by at most one polling round."""

    WATCH = 24

    def __init__(self, port, conf, host="127.0.0.1"):
        super().__init__(daemon=True)
        self.host, self.port = host, port
        self.sql = SqlPipe(conf)
        self.incoming = deque(maxlen=2000)
        self.stop_ev = threading.Event()
        self.samples = self.turning = self.unchecked = self.failed_seen = 0
        self.violations = []
        self.check_ms = []

    def offer(self, order_no):
        if order_no and re.fullmatch(r"[0-9]+-[0-9]+", order_no):
            self.incoming.append(order_no)

    def _status(self, conn, order_no):
        conn.request("GET", f"/seckill/orders/{order_no}")
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            return None
        return json.loads(body).get("status")

    def run(self):
        watch = {}   # order_no -> last status seen
        conn = None
        while not self.stop_ev.is_set():
            while len(watch) < self.WATCH and self.incoming:
                watch.setdefault(self.incoming.pop(), None)
            if not watch:
                self.stop_ev.wait(0.02)
                continue
            for order_no in list(watch):
                if self.stop_ev.is_set():
                    break
                try:
                    if conn is None:
                        conn = http.client.HTTPConnection(self.host, self.port, timeout=3)
                    status = self._status(conn, order_no)
                except Exception:  # noqa: BLE001 - the gateway may be down on purpose
                    if conn is not None:
                        conn.close()
                    conn = None
                    self.stop_ev.wait(0.1)
                    break
                if status == "SUCCESS":
                    t0 = time.monotonic()
                    n = self.sql.scalar(
                        f"SELECT COUNT(*) FROM seckill_order WHERE order_no = '{order_no}'")
                    self.check_ms.append((time.monotonic() - t0) * 1000)
                    if n is None:
                        self.unchecked += 1
                    else:
                        self.samples += 1
                        if watch[order_no] == "PROCESSING":
                            self.turning += 1
                        if n != "1":
                            self.violations.append(order_no)
                    del watch[order_no]
                elif status == "FAILED":
                    self.failed_seen += 1
                    del watch[order_no]
                else:
                    watch[order_no] = status
            self.stop_ev.wait(0.005)
        if conn is not None:
            conn.close()
        self.sql.close()

    def stop(self):
        self.stop_ev.set()
        self.join(10)


METRIC_NAMES = ("seckill_orders_accepted_total", "seckill_orders_rolled_back_total",
                "seckill_reservations_expired_total", "seckill_kafka_delivery_failures_total",
                "seckill_redis_timeouts_total", "seckill_http_header_timeouts_total")


class MetricsScraper(threading.Thread):
    """The gateway's counters, scraped every half second and kept per gateway process:
    a process killed with -9 keeps the values of its last scrape. A process that ran
    before (the hosts topology's gateways serve one scenario after another) counts from
    the values it had when the scraper was made."""

    def __init__(self, gateway):
        super().__init__(daemon=True)
        self.gateway = gateway
        self.stop_ev = threading.Event()
        self.per_pid = {}
        self.scrape()
        self.base = dict(self.per_pid)

    def scrape(self):
        try:
            pid = self.gateway.pid if self.gateway.running else None
            if pid is None:
                return
            c = http.client.HTTPConnection(getattr(self.gateway, "host", "127.0.0.1"),
                                           self.gateway.conf.http_port, timeout=2)
            c.request("GET", "/metrics")
            text = c.getresponse().read().decode()
            c.close()
        except Exception:  # noqa: BLE001
            return
        values = {}
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] in METRIC_NAMES:
                values[parts[0]] = int(float(parts[1]))
        if values:
            self.per_pid[pid] = values

    def run(self):
        while not self.stop_ev.wait(0.5):
            self.scrape()

    def stop(self):
        self.stop_ev.set()
        self.join(10)
        self.scrape()

    def total(self, name):
        return sum(v.get(name, 0) - self.base.get(pid, {}).get(name, 0) for pid, v in self.per_pid.items())


# ---- several gateways --------------------------------------------------------------------


class _AllEvents:
    """stop_ev of several loads or scrapers as one: set() sets them all."""

    def __init__(self, parts):
        self.parts = parts

    def set(self):
        for p in self.parts:
            p.stop_ev.set()


class Loads:
    """One load per gateway port, the rate, the connections and the request budget split
    evenly, the users distinct; read as one Load. `generator` is "python" (Load) or
    "openloop" (OpenLoad, which needs bin_dir and out_dir for its logs). With `hosts` (one
    address a port, openloop only) each load goes to its gateway's address, from the
    namespace `netns`."""

    def __init__(self, ports, activity, user_base, rate, threads, max_requests, on_accept=None,
                 generator="python", bin_dir=None, out_dir=None, hosts=None, netns=None):
        n = len(ports)
        if generator == "openloop":
            hosts = hosts or ["127.0.0.1"] * n
            # Gateways on addresses of their own share one port: the log is named by the address.
            names = [f"load-{port}.log" if host == "127.0.0.1" else f"load-{host}.log"
                     for host, port in zip(hosts, ports)]
            self.parts = [OpenLoad(bin_dir, out_dir / names[i], port, activity, user_base + i * 10**7,
                                   rate / n, max(1, threads // n), max_requests // n, on_accept=on_accept,
                                   host=hosts[i], netns=netns) for i, port in enumerate(ports)]
        else:
            assert hosts is None and netns is None, "the Python load runs here, on loopback"
            self.parts = [Load(port, activity, user_base + i * 10**7, rate / n, max(1, threads // n),
                               max_requests // n, on_accept=on_accept) for i, port in enumerate(ports)]
        self.stop_ev = _AllEvents(self.parts)

    def start(self):
        for p in self.parts:
            p.start()
        return self

    def stop(self, timeout=30):
        self.stop_ev.set()
        for p in self.parts:
            p.stop(timeout)

    @property
    def finished(self):
        return all(p.finished for p in self.parts)

    @property
    def accepted(self):
        return sum(p.accepted for p in self.parts)

    @property
    def last_accept(self):
        return max(p.last_accept for p in self.parts)

    @property
    def tries(self):
        return self.snapshot()

    def snapshot(self):
        return [t for p in self.parts for t in p.snapshot()]

    def summaries(self):
        """The openloop summaries (skipped, achieved rate ...), None for Python loads."""
        return [getattr(p, "summary", None) for p in self.parts]


class Scrapers:
    """A MetricsScraper per gateway, totals summed."""

    def __init__(self, gateways):
        self.parts = [MetricsScraper(g) for g in gateways]
        self.stop_ev = _AllEvents(self.parts)

    def start(self):
        for p in self.parts:
            p.start()

    def stop(self):
        for p in self.parts:
            p.stop()

    def total(self, name):
        return sum(p.total(name) for p in self.parts)
