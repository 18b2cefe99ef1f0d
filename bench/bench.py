#!/usr/bin/env python3
"""The scenarios of `make bench`, run against services that bench/run.sh started.

    bench.py --conf FILE --out RESULT.json --logs DIR [--baseline BIN]

Starts and stops the processes it measures itself (bench/baseline, seckill-server,
order-consumer), one after the other, and writes every figure to RESULT.json, which
bench/report.py turns into the Markdown report and the plot. Python standard library
only; Redis through the test suites' RESP client and the configuration through seckillctl
(test/lib: resp.py, ctlconf.py), MariaDB through the `mariadb` command-line client, load
through wrk with bench/wrkexecute.lua (the helpers for processes, /proc, /metrics, wrk and
the machine's description are benchlib.py's). bench/README.md describes the scenarios.

Environment (all optional):
  BENCH_SECONDS      length of each measured wrk run (default 12)
  BENCH_THREADS      wrk threads (default 2)
  BENCH_PREFILL      order events the consumer scenario starts with, at least (200000)
  BENCH_E2E_ORDERS   orders of the end-to-end scenario (2000)
  BENCH_E2E_RATE     their rate per second (400)
  BENCH_IDLE_CONNS   idle keep-alive connections (10000)
  BENCH_STEADY_SECONDS  the steady-state sale with the consumer running (60)
  BENCH_OPENLOOP_SECONDS  each open-loop run (15)
  BENCH_SPIKE_USERS  users of the 20:00 spike (200000), BENCH_SPIKE_STOCK its stock (10000),
                     BENCH_SPIKE_RATE their arrival rate per second (100000),
                     BENCH_SPIKE_CONNS the generator's connections (4096)
  BENCH_BIG_ORDERS   SUCCESS orders the big-sale scenario's activity holds (2000000; 0: no big sale)
  BENCH_KEEP_DATA    1: leave the run's sales in Redis and MariaDB
"""

import argparse
import http.client
import json
import os
import platform
import re
import resource
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from benchlib import (BUILD, CLK_TCK, CTL, NCPU, ROOT, MySQL, Proc, ctl, ctl_id, delta,
                      environment, http_ok, proc_status_kb, proc_ticks, read_pidfile,
                      redis_persistence, reset_peak_rss, run_wrk, scrape, system_ticks)

sys.path.insert(0, str(ROOT / "test" / "lib"))  # before the scenarios: bigsale imports bulkfill from there
from cpuprofile import Perf, thread_shares, thread_ticks  # noqa: E402
from sale import SaleScenarios  # noqa: E402
from bigsale import BigSaleScenarios, info_field  # noqa: E402
from ctlconf import Conf  # noqa: E402 - test/lib is on the path only from here
from resp import RedisError, redis_client  # noqa: E402


def env_int(name, default):
    value = os.environ.get(name)
    return int(value) if value else default


SECONDS = env_int("BENCH_SECONDS", 12)
THREADS = env_int("BENCH_THREADS", 2)
PREFILL = env_int("BENCH_PREFILL", 200000)
E2E_ORDERS = env_int("BENCH_E2E_ORDERS", 2000)
E2E_RATE = env_int("BENCH_E2E_RATE", 400)
IDLE_CONNS = env_int("BENCH_IDLE_CONNS", 10000)
WARMUP_SECONDS = 5
# The contended sale's warm-up goes on, WARMUP_SECONDS at a time, until the broker's JIT
# compiler threads took less than this share of its CPU in one of them (or BROKER_WARM_MAX_S
# passed): a broker that has run for a while does not compile, and a cold one's compiler
# takes a core's worth of CPU from a two-core machine.
BROKER_WARM_COMPILER_SHARE = 0.05
BROKER_WARM_MAX_S = env_int("BENCH_BROKER_WARM_MAX_S", 120)

# The issues' targets (issues 10 and 24; the idle RSS from issue 6; docs: bench/README.md).
TARGETS = {
    "contended_ratio_256": 0.5,    # x baseline requests/s, same connections
    "contended_ratio_64": 0.35,
    "contended_p99_ms_64": 15.0,   # at 64 connections
    # CPU of gateway + Redis + broker per accepted order (load generator excluded), us
    "stack_cpu_us_per_order_256": 35.0,
    "stack_cpu_us_per_order_64": 55.0,
    # the same per process at 256 connections (issue 24)
    "process_cpu_us_per_order_256": {"server": 15.0, "redis": 12.0, "kafka": 5.0},
    "storm_ratio": 0.9,            # sold-out and not-started storms, x baseline
    "consumer_orders_per_s": 35000,
    "idle_rss_mb": 64,             # gateway holding IDLE_CONNS idle keep-alive connections
    # seckill.order.reply-after-ack = false at 64 connections (issue 24): x contended-64
    # requests/s (the default mode in the same run), and its p99
    "early_ratio_64": 2.0,
    "early_p99_ms_64": 5.0,
    # the big sale at 64 connections while Redis rewrites its AOF (issue 24)
    "rewrite_p99_ms_64": 50.0,
}

# The processes whose CPU counts as the stack's per accepted order (issue 10).
STACK = ("server", "redis", "kafka")
# perf's window in a profiled run (bench/cpuprofile.py), shorter than the run it samples
PROFILE_SECONDS = 5

# User ids of each run start USER_BASE_STEP apart (bench/wrkexecute.lua adds thread * 1e9).
USER_BASE_STEP = 10**10


def log(msg):
    print(f"bench: {msg}", flush=True)


def now_utc():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---- the benchmark ---------------------------------------------------------------------------


class Bench(SaleScenarios, BigSaleScenarios):
    def __init__(self, args):
        self.args = args
        # Keys as the project's own loader sees them: the file, then SECKILL_* variables.
        self.conf = Conf(args.conf, CTL)
        self.logs = Path(args.logs)
        Proc.RUN_DIR = str(self.logs / "run")
        self.addr = (self.conf.http_host, self.conf.http_port)
        self.redis = redis_client(self.conf, timeout=60)
        self.mysql = MySQL(self.conf)
        var = ROOT / "var"
        self.service_pids = {
            "redis": read_pidfile(var / "redis" / "redis.pid"),
            "kafka": read_pidfile(var / "kafka" / "kafka.pid"),
            "mariadb": read_pidfile(var / "mariadb" / "mariadbd.pid"),
        }
        self.gateway = None
        self.consumer = None
        self.results = {"scenarios": [], "correctness": [], "errors": []}
        self.activities = {}
        self.user_base = USER_BASE_STEP
        # Orders accepted on the contended activity, by run (metrics OK deltas).
        self.contended_accepted = 0
        self.archived_coupons = set()

    # -- bookkeeping ------------------------------------------------------------------------

    def next_user_base(self):
        self.user_base += USER_BASE_STEP
        return self.user_base

    def scrape(self):
        """The gateway's counters (bench/cluster.py sums those of several)."""
        return scrape(self.addr)

    def cpu_snapshot(self, server_pid):
        snap = {"t": time.monotonic(), "system": system_ticks()}
        pids = dict(self.service_pids)
        pids["server"] = server_pid
        if self.consumer and self.consumer.alive():
            pids["consumer"] = self.consumer.pid
        snap["procs"] = {k: proc_ticks(p) for k, p in pids.items() if p}
        return snap

    @staticmethod
    def cpu_usage(s0, s1, extra_cpu_s=0.0):
        """CPU seconds per process between two snapshots, and the share of the machine's
        CPU that went to processes outside the benchmark (noise from other work)."""
        secs = {}
        for k, v in s1["procs"].items():
            if v is not None and s0["procs"].get(k) is not None:
                secs[k] = (v - s0["procs"][k]) / CLK_TCK
        busy = (s1["system"][0] - s0["system"][0]) / CLK_TCK
        softirq = (s1["system"][1] - s0["system"][1]) / CLK_TCK
        wall = s1["t"] - s0["t"]
        ours = sum(secs.values()) + extra_cpu_s
        cap = wall * NCPU
        return secs, {
            "wall_s": round(wall, 3),
            "machine_busy_share": round(busy / cap, 3),
            "softirq_share": round(softirq / cap, 3),
            "other_processes_share": round(max(0.0, busy - softirq - ours) / cap, 3),
        }

    def activity(self, name, stock, start="now", end="+50m"):
        coupon = ctl_id(self.conf, "coupon", "create", "--name", f"bench {name}", "--type", "CASH",
                        "--amount", "5.00", "--min-order", "10.00", "--total", max(stock * 2, 2),
                        "--start", "-1m", "--end", "+1d")
        aid = ctl_id(self.conf, "activity", "create", "--coupon", coupon, "--stock", stock,
                     "--start", start, "--end", end, "--name", f"bench {name}")
        self.activities[name] = {"id": aid, "coupon": coupon, "stock": stock}
        log(f"activity {name}: id {aid}, coupon {coupon}, stock {stock}, start {start}")
        return aid

    def error(self, where, exc):
        msg = f"{where}: {exc}"
        log("ERROR " + msg)
        self.results["errors"].append(msg)

    # -- processes ----------------------------------------------------------------------------

    def start_gateway(self, sets=()):
        """A gateway with the run's configuration, and `--set KEY=VALUE` for each of sets."""
        argv = [BUILD / "seckill-server", "-c", self.conf.path]
        for kv in sets:
            argv += ["--set", kv]
        g = Proc("seckill-server", argv, self.logs).start()
        g.wait_ready(lambda: http_ok(self.addr, "/healthz"), 60, "answering /healthz")
        self.gateway = g
        log(f"gateway up (pid {g.pid}) on {self.addr[0]}:{self.addr[1]}")

    def start_consumer(self):
        # INFO for the consumer only: its "ready" line and its batch summaries (one line
        # every 5 s and one at exit), nothing per order.
        c = Proc("order-consumer", [BUILD / "order-consumer", "-c", self.conf.path,
                                    "--set", "log.level=info"], self.logs).start()
        c.wait_ready(lambda: "ready (group" in c.log_text(), 60, "ready")
        self.consumer = c
        return c

    # -- scenarios ----------------------------------------------------------------------------

    def http_scenario(self, sid, title, kind, server_pid, conns, activity, expected,
                      baseline_id=None, metrics=True, record=True, seconds=None, xff=False):
        base = self.next_user_base()
        reset_peak_rss(server_pid)
        m0 = self.scrape() if metrics else None
        p0 = redis_persistence(self.redis)
        s0 = self.cpu_snapshot(server_pid)
        w = run_wrk(self.addr, THREADS, conns, seconds or (SECONDS if record else WARMUP_SECONDS),
                    activity, base, xff=xff)
        s1 = self.cpu_snapshot(server_pid)
        time.sleep(0.3)  # requests still in flight when wrk stopped get their answers
        m1 = self.scrape() if metrics else None
        p1 = redis_persistence(self.redis)
        secs, machine = self.cpu_usage(s0, s1, w["cpu_s"])
        rps = w["requests"] / (w["duration_us"] / 1e6)
        if metrics:
            outcomes = delta(m1["responses"], m0["responses"])
            counters = delta(m1["values"], m0["values"])
        else:
            # The baseline has no metrics: wrk counts everything outside 2xx/3xx.
            outcomes = {"OK 200": w["requests"] - w["errors"]["status"]}
            if w["errors"]["status"]:
                outcomes["non-2xx"] = w["errors"]["status"]
            counters = {}
        served = sum(outcomes.values()) or w["requests"]
        unexpected = {k: v for k, v in outcomes.items() if k.split()[0] not in expected}
        socket_errors = {k: v for k, v in w["errors"].items() if k != "status"}
        lat = w["latency_us"]
        res = {
            "id": sid, "title": title, "kind": kind, "connections": conns,
            "threads": THREADS, "seconds": round(w["duration_us"] / 1e6, 2),
            "activity": activity, "user_base": base,
            "requests": w["requests"], "served": served, "rps": round(rps, 1),
            "latency_ms": {k: round(v / 1000, 3) for k, v in lat.items()},
            "outcomes": outcomes, "expected": expected,
            "unexpected": sum(unexpected.values()), "unexpected_detail": unexpected,
            "socket_errors": sum(socket_errors.values()), "socket_errors_detail": socket_errors,
            "cpu_us_per_request": {k: round(v * 1e6 / served, 1) for k, v in secs.items()},
            "cpu_s": {k: round(v, 2) for k, v in secs.items()},
            "wrk_cpu_us_per_request": round(w["cpu_s"] * 1e6 / max(w["requests"], 1), 1),
            "machine": machine,
            "peak_rss_kb": proc_status_kb(server_pid, "VmHWM"),
            "rss_kb": proc_status_kb(server_pid, "VmRSS"),
            "local_answers": int(counters.get("seckill_local_answers_total", 0)),
            "counters": {k: int(v) for k, v in counters.items() if k.endswith("_total")},
            "wrk": w["argv"],
            "redis_forks": self.forks(p0, p1),
        }
        accepted = outcomes.get("OK 200", 0)
        # Per accepted order only where orders are what the run is made of (not where
        # nearly every request is refused, as with the shipped token bucket).
        if metrics and accepted * 2 >= served:
            res["accepted"] = accepted
            res["stack_cpu_us_per_accepted_order"] = round(
                sum(secs.get(k, 0) for k in STACK) * 1e6 / accepted, 1)
        if baseline_id:
            b = next((s for s in self.results["scenarios"] if s["id"] == baseline_id), None)
            if b:
                res["baseline"] = baseline_id
                res["ratio_to_baseline"] = round(rps / b["rps"], 3)
        if record:
            self.results["scenarios"].append(res)
        log(f"{sid}: {rps:,.0f} req/s, p50 {lat['p50']/1000:.2f} ms, p99 {lat['p99']/1000:.2f} ms, "
            f"max {lat['max']/1000:.1f} ms, outcomes {outcomes}, socket errors {sum(socket_errors.values())}"
            + (f", x{res['ratio_to_baseline']} of {baseline_id}" if "ratio_to_baseline" in res else ""))
        return res

    def run_baseline(self):
        binary = Path(self.args.baseline)
        b = Proc("baseline", [binary, "-h", self.addr[0], "-p", self.addr[1],
                              "-b", self.conf.get("http.backlog"),
                              "-t", self.conf.get("http.idle-timeout")], self.logs).start()
        try:
            b.wait_ready(lambda: "listening" in b.log_text(), 10, "listening")
            self.http_scenario("baseline-warmup", "", "baseline", b.pid, 64, 1, ["OK"],
                               metrics=False, record=False)
            for conns in (64, 256):
                self.http_scenario(f"baseline-{conns}", f"baseline evhttp server, {conns} connections",
                                   "baseline", b.pid, conns, 1, ["OK"], metrics=False)
            # What evhttp alone costs per request: the floor under the gateway's profile.
            perf = Perf(str(self.logs / "profile-baseline"), {"server": b.pid}, PROFILE_SECONDS)
            r = self.http_scenario("baseline-256-profiled", "", "baseline", b.pid, 256, 1, ["OK"],
                                   metrics=False, record=False, seconds=SECONDS)
            self.results.setdefault("profiles", {})["baseline-256"] = {
                "twin_of": "baseline-256", "seconds": PROFILE_SECONDS,
                "cpu_us_per_order": {"server": r["cpu_us_per_request"].get("server")},
                "perf": perf.breakdown(), "threads": {},
            }
        finally:
            rc, _ = b.stop(10)
            if rc != 0:
                self.error("baseline", f"exit status {rc}")

    def sell_out(self, activity):
        """Sells the one unit of the sold-out activity, then asks once more so that the
        gateway learns (from Redis) that it is sold out and answers locally after that."""
        c = http.client.HTTPConnection(*self.addr, timeout=30)
        answers = []
        for user in (1, 2):
            c.request("POST", f"/seckill/execute?userId={user}&activityId={activity}", body=b"",
                      headers={"Content-Length": "0"})
            r = c.getresponse()
            answers.append((r.status, json.loads(r.read() or b"{}").get("status")))
        c.close()
        if answers != [(200, "PROCESSING"), (409, "OUT_OF_STOCK")]:
            raise RuntimeError(f"selling out activity {activity}: unexpected answers {answers}")

    def idle_connections(self, activity):
        """RSS of the gateway holding IDLE_CONNS idle keep-alive connections, each of which
        sent one request first (a not-started execute, answered locally)."""
        n = IDLE_CONNS
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = min(hard, n + 512) if hard != resource.RLIM_INFINITY else n + 512
        if soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        pid = self.gateway.pid
        time.sleep(0.5)
        rss0 = proc_status_kb(pid, "VmRSS")
        reset_peak_rss(pid)
        m0 = scrape(self.addr)
        socks, errors, bad = [], {}, {}
        t0 = time.monotonic()
        chunk = 500
        for first in range(0, n, chunk):
            batch = []
            for i in range(first, min(first + chunk, n)):
                try:
                    s = socket.create_connection(self.addr, timeout=30)
                    s.sendall(b"POST /seckill/execute?userId=%d&activityId=%d HTTP/1.1\r\n"
                              b"Host: bench\r\nContent-Length: 0\r\n\r\n" % (i + 1, activity))
                    batch.append(s)
                except OSError as e:
                    errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
            for s in batch:
                try:
                    head = b""
                    while b"\r\n\r\n" not in head:
                        got = s.recv(4096)
                        if not got:
                            raise ConnectionError("closed")
                        head += got
                    header, _, body = head.partition(b"\r\n\r\n")
                    length = int(re.search(rb"(?i)content-length:\s*(\d+)", header).group(1))
                    while len(body) < length:
                        got = s.recv(4096)
                        if not got:
                            raise ConnectionError("closed")
                        body += got
                    code = header.split(b" ", 2)[1].decode()
                    closing = re.search(rb"(?i)\r\nconnection:\s*close", header) is not None
                    if code != "409" or b"NOT_STARTED" not in body or closing:
                        key = f"{code}{' close' if closing else ''}"
                        bad[key] = bad.get(key, 0) + 1
                    socks.append(s)
                except (OSError, ConnectionError, AttributeError) as e:
                    errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
                    s.close()
        opened_s = time.monotonic() - t0
        time.sleep(1.0)
        rss1 = proc_status_kb(pid, "VmRSS")
        hwm = proc_status_kb(pid, "VmHWM")
        m1 = scrape(self.addr)
        open_gauge = int(m1["values"].get("seckill_http_open_connections", -1))
        # Still open on the client side (none closed by the server meanwhile)?
        alive = 0
        for s in socks:
            try:
                s.setblocking(False)
                if s.recv(1, socket.MSG_PEEK) == b"":
                    continue
            except BlockingIOError:
                alive += 1
            except OSError:
                continue
        for s in socks:
            s.close()
        res = {
            "id": "idle-connections", "title": f"gateway holding {n:,} idle keep-alive connections",
            "kind": "idle", "connections": n, "held": alive, "open_s": round(opened_s, 2),
            "gateway_open_connections_gauge": open_gauge,
            "rss_before_kb": rss0, "rss_kb": rss1, "peak_rss_kb": hwm,
            "rss_per_connection_bytes": round((rss1 - rss0) * 1024 / max(alive, 1)),
            "socket_errors": sum(errors.values()), "socket_errors_detail": errors,
            "unexpected": sum(bad.values()), "unexpected_detail": bad,
            "outcomes": delta(m1["responses"], m0["responses"]), "expected": ["NOT_STARTED"],
        }
        self.results["scenarios"].append(res)
        log(f"idle: {alive} connections held, gateway RSS {rss0/1024:.1f} -> {rss1/1024:.1f} MB "
            f"(peak {hwm/1024:.1f} MB), gauge {open_gauge}, errors {errors}, unexpected {bad}")
        time.sleep(0.5)

    def accepted_ok(self, res):
        return res["outcomes"].get("OK 200", 0)

    def contended(self, activity):
        self.warm_broker(activity)
        for conns in (64, 256):
            r = self.http_scenario(f"contended-{conns}",
                                   f"contended sale, every request a new user, {conns} connections",
                                   "contended", self.gateway.pid, conns, activity, ["OK"],
                                   baseline_id=f"baseline-{conns}")
            self.contended_accepted += self.accepted_ok(r)
        self.profile_contended(activity)
        self.contended_early(activity)

    def warm_broker(self, activity):
        """Unmeasured rounds of the contended sale until the broker stops compiling."""
        kafka = self.service_pids["kafka"]
        t0, rounds, share = time.monotonic(), 0, None
        while True:
            k0 = thread_ticks(kafka)
            r = self.http_scenario("contended-warmup", "", "contended", self.gateway.pid, 64, activity,
                                   ["OK"], record=False)
            self.contended_accepted += self.accepted_ok(r)
            rounds += 1
            used = thread_shares(k0, thread_ticks(kafka))
            share = sum(v for name, v in used if "Compiler" in name)
            if share < BROKER_WARM_COMPILER_SHARE or time.monotonic() - t0 > BROKER_WARM_MAX_S:
                break
        self.results["broker_warmup"] = {"seconds": round(time.monotonic() - t0, 1), "rounds": rounds,
                                         "compiler_share_last": round(share, 3),
                                         "warm": share < BROKER_WARM_COMPILER_SHARE}
        log(f"broker warm-up: {rounds} rounds, {time.monotonic() - t0:.0f} s; its JIT compiler "
            f"took {share * 100:.1f} % of its CPU in the last")

    def profile_contended(self, activity, conns=256):
        """The profile behind the CPU targets: a twin of contended-256, not counted, with
        perf on the gateway, Redis and the broker for PROFILE_SECONDS and the CPU of every
        thread of the gateway and the broker (whose JVM frames perf cannot name) over the run."""
        threaded = {"server": self.gateway.pid, "kafka": self.service_pids["kafka"]}
        t0 = {k: thread_ticks(p) for k, p in threaded.items()}
        perf = Perf(str(self.logs / "profile-contended"), dict(threaded, redis=self.service_pids["redis"]),
                    PROFILE_SECONDS)
        r = self.http_scenario(f"contended-{conns}-profiled", "", "contended", self.gateway.pid, conns,
                               activity, ["OK"], record=False, seconds=SECONDS)
        self.contended_accepted += self.accepted_ok(r)
        t1 = {k: thread_ticks(p) for k, p in threaded.items()}
        self.results.setdefault("profiles", {})[f"contended-{conns}"] = {
            "twin_of": f"contended-{conns}", "seconds": PROFILE_SECONDS,
            "cpu_us_per_order": {k: round(v * 1e6 / max(self.accepted_ok(r), 1), 1)
                                 for k, v in r["cpu_s"].items() if k in STACK},
            "perf": perf.breakdown(),
            "threads": {k: thread_shares(t0[k], t1[k]) for k in t1},
        }

    def contended_early(self, activity):
        """The same sale with seckill.order.reply-after-ack = false: the 200 goes out once
        Redis holds the reservation, the delivery follows (docs/protocol.md, "When the
        answer comes"). Its orders are the contended sale's, checked with them."""
        self.restart_gateway(["seckill.order.reply-after-ack=false"])
        try:
            r = self.http_scenario("contended-early-warmup", "", "contended", self.gateway.pid, 64, activity,
                                   ["OK"], record=False, seconds=WARMUP_SECONDS)
            self.contended_accepted += self.accepted_ok(r)
            for conns in (64, 256):
                r = self.http_scenario(f"contended-early-{conns}",
                                       f"contended sale answered before Kafka's ack (reply-after-ack=false), "
                                       f"{conns} connections", "contended", self.gateway.pid, conns, activity,
                                       ["OK"], baseline_id=f"baseline-{conns}")
                self.contended_accepted += self.accepted_ok(r)
                ack = next((s for s in self.results["scenarios"] if s["id"] == f"contended-{conns}"), None)
                if ack:
                    r["ratio_to_contended"] = round(r["rps"] / ack["rps"], 3)
        finally:
            self.restart_gateway([])

    def storms(self, soldout, notstarted):
        for kind, activity, status in (("soldout", soldout, "OUT_OF_STOCK"),
                                       ("notstarted", notstarted, "NOT_STARTED")):
            what = "sold-out storm" if kind == "soldout" else "not-started storm"
            for conns in (64, 256):
                self.http_scenario(f"{kind}-{conns}", f"{what}, {conns} connections", kind,
                                   self.gateway.pid, conns, activity, [status],
                                   baseline_id=f"baseline-{conns}")

    def stock_left(self, activity):
        return int(self.redis("GET", self.conf.key("stock", activity)) or 0)

    def live_reservations(self, activity):
        return (self.redis("ZCARD", self.conf.key("resv", activity))
                + self.redis("SCARD", self.conf.key("queued", activity))
                + self.redis("SCARD", self.conf.key("claimed", activity)))

    def prefill(self, activity):
        """Tops the contended activity's orders up to PREFILL with unmeasured wrk runs."""
        stock = self.activities["contended"]["stock"]
        sold = stock - self.stock_left(activity)
        rounds = 0
        while sold < PREFILL and rounds < 6:
            rate = max(1000.0, max((s["rps"] for s in self.results["scenarios"]
                                    if s["id"].startswith("contended-")), default=1000.0))
            seconds = min(120, max(3, int((PREFILL - sold) / (rate * 0.8)) + 1))
            log(f"prefill: {sold:,} orders in Kafka, selling {PREFILL - sold:,} more "
                f"(~{seconds}s of wrk, consumer stopped)")
            m0 = scrape(self.addr)
            w = run_wrk(self.addr, THREADS, 256, seconds, activity, self.next_user_base())
            time.sleep(0.3)
            self.contended_accepted += delta(scrape(self.addr)["responses"], m0["responses"]).get("OK 200", 0)
            if w["errors"]["connect"] + w["errors"]["read"] + w["errors"]["write"] + w["errors"]["timeout"]:
                self.error("prefill", f"wrk errors {w['errors']}")
            sold = stock - self.stock_left(activity)
            rounds += 1
        self.results["prefill"] = {"orders": sold, "top_up_rounds": rounds}
        return sold

    def consumer_throughput(self, activity):
        expected = self.activities["contended"]["stock"] - self.stock_left(activity)
        deadline_live = time.monotonic() + 30
        while self.redis("ZCARD", self.conf.key("resv", activity)) and time.monotonic() < deadline_live:
            time.sleep(0.1)  # every accepted order marked queued (durably in Kafka)
        rows0 = self.mysql.count(f"SELECT COUNT(*) FROM seckill_order WHERE activity_id = {activity}")
        log(f"consumer: {expected:,} order events waiting in Kafka ({rows0} rows already), starting it")
        s0 = self.cpu_snapshot(self.gateway.pid)
        t_start = time.monotonic()
        c = self.start_consumer()
        t_ready = time.monotonic()
        # At a fifth of the contended run's rate, so that the measured figure pays for it
        # no more than the noise of the machine.
        perf = Perf(str(self.logs / "profile-consumer"),
                    {"consumer": c.pid, "mariadb": self.service_pids["mariadb"],
                     "redis": self.service_pids["redis"], "kafka": self.service_pids["kafka"]},
                    PROFILE_SECONDS, freq=99)
        timeout = max(180, expected / 2000)
        rows = rows0
        # The consumer's own counter is polled, and the rows counted only once it says
        # they are in: a COUNT(*) over the sale's index every 50 ms cost MariaDB as much
        # CPU as the inserts it was measuring (its profile: index walks and COUNT).
        metrics = (self.conf.get("consumer.metrics-host"), int(self.conf.get("consumer.metrics-port")))
        while True:
            persisted = scrape(metrics)["values"].get("seckill_consumer_orders_persisted_total", 0)
            if persisted + rows0 >= expected:
                rows = self.mysql.count(f"SELECT COUNT(*) FROM seckill_order WHERE activity_id = {activity}")
                if rows >= expected:
                    break
            if not c.alive():
                raise RuntimeError(f"order-consumer exited with {c.proc.returncode}")
            if time.monotonic() - t_start > timeout:
                raise RuntimeError(f"consumer: only {rows:,} of {expected:,} rows after {timeout:.0f}s")
            time.sleep(0.05)
        t_done = time.monotonic()
        s1 = self.cpu_snapshot(self.gateway.pid)
        secs, machine = self.cpu_usage(s0, s1)
        # The consumer started after the first snapshot: all of its CPU time is in the window.
        secs["consumer"] = (s1["procs"].get("consumer") or 0) / CLK_TCK
        machine["other_processes_share"] = round(max(
            0.0, machine["other_processes_share"] - secs["consumer"] / (machine["wall_s"] * NCPU)), 3)
        first_row, last_row, span_us = self.mysql.rows(
            f"SELECT MIN(created_at), MAX(created_at), "
            f"TIMESTAMPDIFF(MICROSECOND, MIN(created_at), MAX(created_at)) "
            f"FROM seckill_order WHERE activity_id = {activity}")[0]
        span_us = int(span_us)
        peak = proc_status_kb(c.pid, "VmHWM")
        # Stop it to read its exact batch count for these orders from the exit line.
        rc, stop_s = c.stop(60)
        m = re.search(r"stopped after (\d+) batches: (\d+) orders persisted", c.log_text())
        batches, persisted = (int(m.group(1)), int(m.group(2))) if m else (None, None)
        n = rows - rows0
        res = {
            "id": "consumer", "title": f"order-consumer persisting {n:,} queued orders into MariaDB",
            "kind": "consumer", "orders": n,
            "orders_per_s": round(n / (t_done - t_ready), 1),
            "orders_per_s_incl_startup": round(n / (t_done - t_start), 1),
            "orders_per_s_first_to_last_row": round(n / (span_us / 1e6), 1) if span_us else None,
            "startup_s": round(t_ready - t_start, 2), "persist_s": round(t_done - t_ready, 2),
            "first_row_at": first_row, "last_row_at": last_row,
            "batch_size_configured": int(self.conf.get("consumer.batch-size")),
            "batch_timeout_ms": int(self.conf.get("consumer.batch-timeout-ms")),
            "batches": batches,
            "mean_batch": round(persisted / batches, 1) if batches else None,
            "cpu_us_per_order": {k: round(v * 1e6 / max(n, 1), 1) for k, v in secs.items()},
            "cpu_s": {k: round(v, 2) for k, v in secs.items()},
            "machine": machine, "peak_rss_kb": peak,
            "exit_status": rc, "stop_s": stop_s,
            "partitions": int(self.conf.get("kafka.topic-partitions")),
        }
        self.results["scenarios"].append(res)
        self.results.setdefault("profiles", {})["consumer"] = {
            "twin_of": None, "seconds": PROFILE_SECONDS,
            "cpu_us_per_order": res["cpu_us_per_order"],
            "perf": perf.breakdown(),
            "threads": {},
        }
        log(f"consumer: {n:,} orders in {t_done - t_ready:.2f}s after ready = {res['orders_per_s']:,.0f}/s "
            f"(first->last row {res['orders_per_s_first_to_last_row']}/s), batches {batches}, "
            f"mean batch {res['mean_batch']}, exit {rc}")
        if rc != 0:
            self.error("consumer", f"exit status {rc} after SIGTERM")

    def check_activity(self, name, accepted=None, wait_s=120):
        """The correctness check of one sale once the consumer caught up."""
        a = self.activities[name]
        aid, stock = a["id"], a["stock"]
        deadline = time.monotonic() + wait_s
        while True:
            left = self.stock_left(aid)
            live = self.live_reservations(aid)
            rows = self.mysql.count(f"SELECT COUNT(*) FROM seckill_order WHERE activity_id = {aid}")
            if (live == 0 and rows == stock - left) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        distinct = self.mysql.rows(
            f"SELECT COUNT(*), COUNT(DISTINCT order_no), COUNT(DISTINCT user_id) "
            f"FROM seckill_order WHERE activity_id = {aid}")[0]
        sold_count = self.mysql.count(f"SELECT sold_count FROM seckill_activity WHERE id = {aid}")
        coupons = self.mysql.count(
            f"SELECT COUNT(*) FROM user_coupon uc JOIN seckill_order o ON uc.source_ref = o.order_no "
            f"WHERE o.activity_id = {aid}")
        statuses = self.redis("HVALS", self.conf.key("orders", aid)) or []
        success = sum(1 for s in statuses if s == "SUCCESS")
        v = ctl(self.conf, "verify", aid, check=False, timeout=600)
        rows = int(distinct[0])
        checks = {
            "rows == stock sold in Redis (initial - left)": rows == stock - left,
            "no duplicate order_no": int(distinct[1]) == rows,
            "no duplicate user": int(distinct[2]) == rows,
            "no live reservation left": live == 0,
            "Redis SUCCESS orders == rows": success == rows,
            "seckill_activity.sold_count == rows": sold_count == rows,
            "one user_coupon per order": coupons == rows,
            "seckillctl verify exit 0": v.returncode == 0,
        }
        if accepted is not None:
            checks["rows == orders accepted (HTTP 200)"] = rows == accepted
        res = {
            "activity": name, "activity_id": aid, "initial_stock": stock, "stock_left": left,
            "sold": stock - left, "rows": rows, "distinct_order_no": int(distinct[1]),
            "distinct_users": int(distinct[2]), "live_reservations": live,
            "redis_success": success, "sold_count": sold_count, "user_coupons": coupons,
            "accepted_http_200": accepted, "verify_exit": v.returncode,
            "verify_output": (v.stdout + v.stderr).strip()[-2000:],
            "checks": checks, "ok": all(checks.values()),
        }
        self.results["correctness"].append(res)
        if not res["ok"]:
            self.error(f"correctness {name}", [k for k, ok in checks.items() if not ok])
        log(f"correctness {name} (activity {aid}): {'OK' if res['ok'] else 'FAILED'} "
            f"rows {rows:,}, sold {stock - left:,}, live {live}, verify rc {v.returncode}"
            + ("" if res["ok"] else f" failed: {[k for k, ok in checks.items() if not ok]}"))

    def end_to_end(self):
        n, rate = E2E_ORDERS, E2E_RATE
        aid = self.activity("e2e", n)
        time.sleep(1.2)  # the gateway's activity cache (seckill.activity-refresh-ms)
        nthreads = 4
        interval = nthreads / rate
        replies, failures = [], []
        lock = threading.Lock()
        seen = {}
        stop_poll = threading.Event()
        t_begin = time.time() + 0.2
        base = self.next_user_base()

        def sender(k):
            conn = http.client.HTTPConnection(*self.addr, timeout=30)
            for j in range(k, n, nthreads):
                due = t_begin + (j // nthreads) * interval
                pause = due - time.time()
                if pause > 0:
                    time.sleep(pause)
                try:
                    conn.request("POST", f"/seckill/execute?userId={base + j}&activityId={aid}",
                                 body=b"", headers={"Content-Length": "0"})
                    r = conn.getresponse()
                    body = json.loads(r.read())
                    t = time.time()
                    with lock:
                        if r.status == 200:
                            replies.append((body["orderNo"], t))
                        else:
                            failures.append((r.status, body.get("status")))
                except (OSError, ValueError, http.client.HTTPException) as e:
                    with lock:
                        failures.append((None, type(e).__name__))
                    conn.close()
                    conn = http.client.HTTPConnection(*self.addr, timeout=30)
            conn.close()

        def poller():
            last_id = 0
            while not stop_poll.is_set():
                rows = self.mysql.rows(f"SELECT id, order_no FROM seckill_order "
                                       f"WHERE activity_id = {aid} AND id > {last_id} ORDER BY id")
                t = time.time()
                for rid, order_no in rows:
                    seen.setdefault(order_no, t)
                    last_id = max(last_id, int(rid))
                if len(seen) >= n:
                    break
                time.sleep(0.01)

        log(f"e2e: {n} orders at {rate}/s on activity {aid}, consumer running")
        poll_thread = threading.Thread(target=poller, daemon=True)
        poll_thread.start()
        senders = [threading.Thread(target=sender, args=(k,)) for k in range(nthreads)]
        for t in senders:
            t.start()
        for t in senders:
            t.join()
        send_s = time.time() - t_begin
        deadline = time.time() + 60
        while len(seen) < len(replies) and time.time() < deadline:
            time.sleep(0.05)
        stop_poll.set()
        poll_thread.join(5)
        db = [int(r[0]) for r in self.mysql.rows(
            f"SELECT TIMESTAMPDIFF(MICROSECOND, accepted_at, created_at) FROM seckill_order "
            f"WHERE activity_id = {aid}")]
        client = [(seen[o] - t) * 1000 for o, t in replies if o in seen]

        def pct(values, p):
            if not values:
                return None
            v = sorted(values)
            return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]

        db_ms = [u / 1000 for u in db]
        res = {
            "id": "e2e", "title": f"end to end, {n:,} orders at {rate}/s: accept -> row in MariaDB",
            "kind": "e2e", "orders": n, "rate_per_s": rate, "send_s": round(send_s, 2),
            "accepted": len(replies), "rows": len(db), "failures": len(failures),
            "failure_detail": failures[:10],
            "latency_ms": {"p50": pct(db_ms, 50), "p90": pct(db_ms, 90), "p99": pct(db_ms, 99),
                           "max": max(db_ms) if db_ms else None,
                           "min": min(db_ms) if db_ms else None},
            "client_observed_ms": {"p50": pct(client, 50), "p90": pct(client, 90),
                                   "p99": pct(client, 99), "max": max(client) if client else None,
                                   "poll_interval_ms": 10},
            "socket_errors": sum(1 for c, _ in failures if c is None),
            "unexpected": sum(1 for c, _ in failures if c is not None),
        }
        for k in ("latency_ms", "client_observed_ms"):
            res[k] = {kk: (round(v, 2) if isinstance(v, float) else v) for kk, v in res[k].items()}
        self.results["scenarios"].append(res)
        log(f"e2e: accepted {len(replies)}, rows {len(db)}, accept->insert p50 {res['latency_ms']['p50']} ms "
            f"p99 {res['latency_ms']['p99']} ms; reply->row seen p50 {res['client_observed_ms']['p50']} ms "
            f"p99 {res['client_observed_ms']['p99']} ms")
        return len(replies)

    # -- the whole run -------------------------------------------------------------------------

    # A step whose failure ends the run: nothing after it can run without it.
    FATAL_STEP = "gateway"

    def steps(self):
        """(name, callable) of the run, in order."""
        return [
            ("baseline", self.run_baseline),
            ("gateway", self.setup_gateway),
            ("idle", lambda: self.idle_connections(self.activities["notstarted"]["id"])),
            ("contended", lambda: self.contended(self.activities["contended"]["id"])),
            ("storms", lambda: self.storms(self.activities["soldout"]["id"],
                                           self.activities["notstarted"]["id"])),
            ("prefill", lambda: self.prefill(self.activities["contended"]["id"])),
            ("consumer", lambda: self.consumer_throughput(self.activities["contended"]["id"])),
            ("correctness", self.correctness),
            ("e2e", self.e2e_and_check),
            ("steady", self.steady_state),
            ("spike", self.spike),
            ("openloop", self.open_loop),
            ("protection", self.protection),
            ("sale checks", self.sale_checks),
            ("big sale", self.big_sale),
        ]

    def run(self):
        r = self.results
        r["started_at"] = now_utc()
        t0 = time.monotonic()
        steps = self.steps()
        only = [x.strip() for x in os.environ.get("BENCH_STEPS", "").split(",") if x.strip()]
        if only:
            steps = [(name, step) for name, step in steps if name in only]
            r["steps_only"] = only
        self.aof_rewrites_off()
        try:
            for name, step in steps:
                n0, p0 = len(r["scenarios"]), redis_persistence(self.redis)
                try:
                    step()
                except Exception as e:  # noqa: BLE001 - report it and go on where possible
                    self.error(name, e)
                    if name == self.FATAL_STEP:
                        break
                # Scenarios that did not count Redis's forks themselves get their step's.
                p1 = redis_persistence(self.redis)
                for s in r["scenarios"][n0:]:
                    s.setdefault("redis_forks", self.forks(p0, p1))
        finally:
            self.aof_rewrites_restore()
            self.shutdown()
            self.cleanup_data()
            r["finished_at"] = now_utc()
            r["duration_s"] = round(time.monotonic() - t0, 1)
            self.mysql.close()
        return r

    @staticmethod
    def forks(p0, p1):
        """AOF rewrites and RDB saves between two INFO persistence snapshots (or running at
        the end): a scenario with one measured Redis while it forked."""
        return {"aof_rewrites": p1.get("aof_rewrites", 0) - p0.get("aof_rewrites", 0),
                "rdb_saves": p1.get("rdb_saves", 0) - p0.get("rdb_saves", 0),
                "in_progress": any(p1.get(k) for k in ("aof_rewrite_in_progress", "rdb_bgsave_in_progress",
                                                         "aof_rewrite_scheduled"))}

    def aof_rewrites_off(self):
        """No automatic AOF rewrite during the run: its fork and copy-on-write would land in
        whichever scenario grew the AOF past the threshold. Restored at the end."""
        try:
            got = self.redis.each_master("CONFIG", "GET", "auto-aof-rewrite-percentage")[0][1]
            self.aof_percentage = got[1] if got and len(got) > 1 else None
            self.redis.each_master("CONFIG", "SET", "auto-aof-rewrite-percentage", "0")
            self.results["redis_auto_aof_rewrite"] = {"shipped_percentage": self.aof_percentage,
                                                      "during_run": "0 (off)"}
            log(f"redis: automatic AOF rewrites off for the run (was {self.aof_percentage}%)")
        except RedisError as e:
            self.aof_percentage = None
            self.error("redis auto-aof-rewrite-percentage", e)

    def aof_rewrites_restore(self):
        if getattr(self, "aof_percentage", None) is None:
            return
        try:
            self.redis.each_master("CONFIG", "SET", "auto-aof-rewrite-percentage", self.aof_percentage)
            log(f"redis: auto-aof-rewrite-percentage back to {self.aof_percentage}")
        except (RedisError, OSError) as e:
            self.error("restoring auto-aof-rewrite-percentage", e)

    def setup_gateway(self):
        self.start_gateway()
        self.activity("contended", 10_000_000)
        self.activity("soldout", 1)
        self.activity("notstarted", 1000, start="+1h", end="+90m")
        time.sleep(1.2)  # the gateway's activity cache (seckill.activity-refresh-ms)
        self.sell_out(self.activities["soldout"]["id"])

    def correctness(self):
        self.start_consumer()
        self.check_activity("contended", accepted=self.contended_accepted)
        self.check_activity("soldout", accepted=1)

    def e2e_and_check(self):
        accepted = self.end_to_end()
        self.check_activity("e2e", accepted=accepted)

    def archive_coupons(self):
        """Ends the run's coupons now and archives them (`seckillctl coupon archive`, all at
        once: each walk waits on MariaDB and Redis more than it computes), so that their
        users' coupon records leave Redis. Without it every run left millions of them behind
        (`seckill:ucoupon:{u<id>}`, a user's hash, keyed by no sale), and the bench's Redis
        grew by gigabytes a run. A coupon archived once in the run is not walked again."""
        coupons = [a["coupon"] for a in self.activities.values() if a["coupon"] not in self.archived_coupons]
        if not coupons:
            return
        self.mysql.rows(f"UPDATE coupon SET end_time = NOW(3) - INTERVAL 1 SECOND "
                        f"WHERE id IN ({','.join(map(str, coupons))}) AND end_time > NOW(3)")
        walks = [(c, subprocess.Popen([str(CTL), "-c", self.conf.path, "coupon", "archive", str(c)], cwd=ROOT,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
                 for c in coupons]
        for c, p in walks:
            _, err = p.communicate(timeout=1800)
            if p.returncode != 0:
                raise RuntimeError(f"seckillctl coupon archive {c}: rc {p.returncode}: {err.strip()}")
            self.archived_coupons.add(c)

    def forget_in_redis(self, aid):
        """Removes a sale's keys from Redis (its rows in MariaDB stay)."""
        for node in self.redis.nodes():
            cursor = "0"
            while True:
                cursor, keys = node("SCAN", cursor, "MATCH", f"*{{{aid}}}*", "COUNT", 1000)
                if keys:
                    node("UNLINK", *keys)
                if cursor == "0":
                    break
        self.redis("SREM", "seckill:activities", aid)

    def forget_checked_sales(self):
        """Before a scenario that is about one sale's size: the sales of the steps before,
        checked and over, leave Redis, as a shop's ended sales do once archived. Kept when
        a check failed (cleanup_data keeps them then too)."""
        if any(not c["ok"] for c in self.results["correctness"]) or os.environ.get("BENCH_KEEP_DATA") == "1":
            return None
        t0 = time.monotonic()
        self.archive_coupons()
        for a in self.activities.values():
            self.forget_in_redis(a["id"])
        used = info_field(self.redis("INFO", "memory"), "used_memory_human")
        log(f"the checked sales left Redis in {time.monotonic() - t0:.1f}s: {used} used")
        return used

    def cleanup_data(self):
        """Removes the run's sales from Redis and MariaDB (a run leaves hundreds of
        thousands of orders behind), unless BENCH_KEEP_DATA=1 or a check failed: then they
        stay for a look."""
        failed = any(not c["ok"] for c in self.results["correctness"])
        if os.environ.get("BENCH_KEEP_DATA") == "1" or failed or not self.activities:
            self.results["data_removed"] = False
            log("keeping the run's activities: " + ", ".join(
                f"{k} {v['id']}" for k, v in self.activities.items()))
            return
        t0 = time.monotonic()
        try:
            self.archive_coupons()
            for a in self.activities.values():
                aid, coupon = a["id"], a["coupon"]
                self.forget_in_redis(aid)
                for table, where in (("user_coupon", f"coupon_id = {coupon}"),
                                     ("seckill_order", f"activity_id = {aid}")):
                    while True:
                        if self.mysql.count(f"DELETE FROM {table} WHERE {where} LIMIT 50000; "
                                            f"SELECT ROW_COUNT()") < 50000:
                            break
                self.mysql.rows(f"DELETE FROM seckill_activity WHERE id = {aid}")
                self.mysql.rows(f"DELETE FROM coupon WHERE id = {coupon}")
            self.results["data_removed"] = True
            log(f"removed the run's activities from Redis and MariaDB in {time.monotonic() - t0:.1f}s")
        except (RuntimeError, OSError, RedisError) as e:
            self.error("cleanup", e)

    def shutdown(self):
        stops = {}
        for name in ("gateway", "consumer"):
            p = getattr(self, name)
            if p is not None and p.alive():
                hwm = proc_status_kb(p.pid, "VmHWM")
                rc, secs = p.stop(60)
                stops[name] = {"exit_status": rc, "stop_s": secs, "lifetime_peak_rss_kb": hwm}
                if rc != 0:
                    self.error(name, f"exit status {rc} after SIGTERM")
        self.results["stops"] = stops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--conf", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--logs", required=True)
    ap.add_argument("--baseline", default=str(BUILD / "bench" / "baseline"))
    args = ap.parse_args()
    bench = Bench(args)
    env = environment(bench.conf, bench.mysql)
    result = bench.run()
    result.update(env)
    result.update({
        "settings": {"wrk_threads": THREADS, "wrk_seconds": SECONDS, "warmup_seconds": WARMUP_SECONDS,
                     "prefill": PREFILL, "e2e_orders": E2E_ORDERS, "e2e_rate": E2E_RATE,
                     "idle_connections": IDLE_CONNS, **bench.sale_settings(), **bench.big_settings()},
        "targets": TARGETS,
        "activities": bench.activities,
        "conf_file": args.conf,
        "python": platform.python_version(),
    })
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    log(f"results in {args.out}")
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
