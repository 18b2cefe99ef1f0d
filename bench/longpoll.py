#!/usr/bin/env python3
"""Long polling at scale (issue 15 item 4): N clients hold GET /seckill/orders/{orderNo}?wait=30
on one gateway while the consumer is stopped, then the consumer starts and finalizes them.

Reports (does not assert) the gateway's RSS before and after the N requests are held, and
the wake-up latency of each: from the moment its order's SPUBLISH reaches this process (a
subscriber of its own on the same channel, so the same moment the gateway hears it, give
or take) to the moment its answer arrives. The client is this one Python process: its own
lag reading thousands of answers in one burst is part of the figures.

Needs the services of CONF up and no consumer running (the sale's orders must wait):
    flock /tmp/seckill-stack.lock bash -c 'export CONF=$PWD/build/conf/test.conf;
      bash scripts/stack.sh up --services-only; var/venv/bin/python bench/longpoll.py;
      rc=$?; bash scripts/stack.sh down --services-only; exit $rc'
"""

import argparse
import json
import os
import resource
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import http.client
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def conf_get(ctl, conf, key):
    return subprocess.run([str(ctl), "-c", str(conf), "config", "get", key], check=True,
                          capture_output=True, text=True).stdout.strip()


def rss_kb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, n), hard), hard))


def metric(port, name):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", "/metrics")
        for line in c.getresponse().read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    finally:
        c.close()
    return 0.0


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            sys.exit(f"timed out waiting for {what}")
        time.sleep(0.05)


def ready(port):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        c.request("GET", "/healthz")
        return c.getresponse().status == 200
    except OSError:
        return False


def execute_all(port, activity, users, threads=8):
    orders = [None] * len(users)

    def worker(k):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for i in range(k, len(users), threads):
            c.request("POST", f"/seckill/execute?userId={users[i]}&activityId={activity}", body=b"",
                      headers={"Content-Length": "0"})
            r = c.getresponse()
            body = json.loads(r.read())
            if r.status != 200:
                raise SystemExit(f"execute {users[i]}: {r.status} {body}")
            orders[i] = body["orderNo"]
        c.close()

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return orders


class Subscriber:
    """SSUBSCRIBE on the channel; the arrival time of each order's news."""

    def __init__(self, host, port, channel):
        self.sock = socket.create_connection((host, port))
        cmd = f"*2\r\n$10\r\nSSUBSCRIBE\r\n${len(channel)}\r\n{channel}\r\n".encode()
        self.sock.sendall(cmd)
        self.buf = b""
        self.seen = {}
        while b"ssubscribe" not in self.buf:
            self.buf += self.sock.recv(65536)
        self.buf = b""
        self.sock.setblocking(False)

    def on_readable(self):
        now = time.monotonic()
        try:
            data = self.sock.recv(1 << 20)
        except BlockingIOError:
            return
        self.buf += data
        # Messages are *3 $8 smessage $len channel $len payload; parse whole ones only.
        while True:
            parts = self.buf.split(b"\r\n")
            if len(parts) < 8:
                return
            try:
                plen = int(parts[5][1:])
            except ValueError:
                sys.exit(f"unexpected subscriber data {self.buf[:80]!r}")
            head = b"\r\n".join(parts[:6]) + b"\r\n"
            if len(self.buf) < len(head) + plen + 2:
                return
            payload = self.buf[len(head):len(head) + plen].decode()
            self.buf = self.buf[len(head) + plen + 2:]
            words = payload.split()
            for o in words[1:]:
                self.seen.setdefault(o, now)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conf", default=os.environ.get("CONF", str(ROOT / "build/conf/test.conf")))
    ap.add_argument("--bin", default=str(ROOT / "build"))
    ap.add_argument("--clients", type=int, default=10000)
    ap.add_argument("--wait", type=int, default=30)
    args = ap.parse_args()
    n = args.clients
    raise_nofile(n + 2000)
    bindir = Path(args.bin)
    ctl = bindir / "seckillctl"
    conf = Path(args.conf)
    port = free_port()
    sets = {
        "http.port": port, "http.max-waiting": n + 100, "http.max-connections": n + 1000,
        "seckill.enable-rate-limit": "false", "seckill.enable-anti-brush": "false",
        "seckill.rate-limit.per-ip-local-permits-per-second": 0, "log.level": "warn",
        "consumer.metrics-port": free_port(),
    }
    setargs = [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]
    coupon = subprocess.run([str(ctl), "-c", str(conf), *setargs, "coupon", "create", "--name", "lp", "--type", "CASH",
                             "--amount", "1.00", "--total", str(n), "--start", "-1m", "--end", "+1d"],
                            check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    activity = subprocess.run([str(ctl), "-c", str(conf), *setargs, "activity", "create", "--coupon", coupon,
                               "--stock", str(n), "--start", "now", "--end", "+1h"],
                              check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    logdir = ROOT / "var" / "bench-longpoll"
    logdir.mkdir(parents=True, exist_ok=True)
    glog = open(logdir / "gateway.log", "ab")
    gw = subprocess.Popen([str(bindir / "seckill-server"), "-c", str(conf), *setargs], stdout=glog,
                          stderr=subprocess.STDOUT, preexec_fn=lambda: raise_nofile(n + 2000))
    consumer = None
    try:
        wait_for(lambda: ready(port), 30, "the gateway")
        base = int(time.time() * 1000) % 10**9 * 100000
        users = [base + i for i in range(n)]
        t0 = time.monotonic()
        orders = execute_all(port, activity, users)
        executed_s = time.monotonic() - t0
        rss_before = rss_kb(gw.pid)

        sub = Subscriber(conf_get(ctl, conf, "redis.host"), int(conf_get(ctl, conf, "redis.port")),
                         f"seckill:final:{{{activity}}}")
        sel = selectors.DefaultSelector()
        sel.register(sub.sock, selectors.EVENT_READ, None)
        socks = {}
        t0 = time.monotonic()
        for o in orders:
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(f"GET /seckill/orders/{o}?wait={args.wait} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            s.setblocking(False)
            socks[s.fileno()] = [s, o, b"", None]
            sel.register(s, selectors.EVENT_READ, s.fileno())
        wait_for(lambda: metric(port, "seckill_longpoll_waiting") >= n, 60, f"{n} held requests")
        held_s = time.monotonic() - t0
        rss_after = rss_kb(gw.pid)

        clog = open(logdir / "consumer.log", "ab")
        started = time.monotonic()
        consumer = subprocess.Popen([str(bindir / "order-consumer"), "-c", str(conf), *setargs], stdout=clog,
                                    stderr=subprocess.STDOUT)
        left = n
        deadline = time.monotonic() + args.wait + 30
        while left and time.monotonic() < deadline:
            for key, _ in sel.select(1.0):
                if key.data is None:
                    sub.on_readable()
                    continue
                rec = socks[key.data]
                try:
                    chunk = rec[0].recv(65536)
                except BlockingIOError:
                    continue
                rec[2] += chunk
                if rec[3] is None and (b"}" in rec[2] or not chunk):
                    rec[3] = time.monotonic()
                    sel.unregister(rec[0])
                    left -= 1
        sub.on_readable()
        answers = [r for r in socks.values() if r[3] is not None]
        success = sum(1 for r in answers if b'"status":"SUCCESS"' in r[2])
        lat = sorted((r[3] - sub.seen[r[1]]) * 1000 for r in answers if r[1] in sub.seen)
        first_pub = min(sub.seen.values()) if sub.seen else started

        def pct(p):
            return round(lat[min(len(lat) - 1, int(len(lat) * p))], 2) if lat else None
        report = {
            "clients": n, "wait_s": args.wait,
            "executes_s": round(executed_s, 2), "hold_all_s": round(held_s, 2),
            "gateway_rss_kb_before": rss_before, "gateway_rss_kb_held": rss_after,
            "rss_per_held_request_bytes": round((rss_after - rss_before) * 1024 / n),
            "answered": len(answers), "success": success, "timed_out_unanswered": left,
            "wakeups": metric(port, "seckill_longpoll_wakeups_total"),
            "expired": metric(port, "seckill_longpoll_expired_total"),
            "consumer_start_to_first_publish_s": round(first_pub - started, 2),
            "first_to_last_publish_ms": round((max(sub.seen.values()) - first_pub) * 1000, 1) if sub.seen else None,
            "wake_latency_ms": {"p50": pct(0.50), "p90": pct(0.90), "p99": pct(0.99), "max": round(lat[-1], 2) if lat else None,
                                "mean": round(statistics.mean(lat), 2) if lat else None},
        }
        print(json.dumps(report, indent=2))
        for r in socks.values():
            r[0].close()
    finally:
        if consumer:
            consumer.send_signal(signal.SIGTERM)
            consumer.wait(60)
        gw.send_signal(signal.SIGTERM)
        gw.wait(60)


if __name__ == "__main__":
    main()
