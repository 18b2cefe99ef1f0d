#!/usr/bin/env python3
"""make bench-latency: the contended sale of `make bench` on the hosts topology (every part
in a network namespace of its own, docs/scale-out.md "On several machines") with the links
between the gateways and Redis and Kafka slowed, beside the loopback cluster's figures, so
that what the batching of execute.lua calls and Kafka produces is worth at real round trips
is measured.

    latency.py [--out-dir DIR]          (root; make bench-latency)

The kernel here has no netem, so the delay comes from bench/delayproxy.c: one in each
gateway's namespace (sk-gw1, sk-gw2), an nftables redirect there (test/lib/netfault.py,
Redirect) sending every new connection to a Redis node (10.77.0.11-.19) or a broker
(.21-.23) through it. It holds each chunk back its --one-way-us in each direction, so a
round trip gains twice that: 250 us one way is 0.5 ms per round trip (a link inside a
datacenter), 1000 us is 2 ms (across zones). The settings:

  no proxy     the hosts topology as it is (the bridge's own round trip)
  +0 ms        the proxy in the path with no delay: what it costs by itself
  +0.5 ms      250 us each way
  +2 ms        1000 us each way

each measured twice, in this order and then in reverse (the figures drift over a run as
the brokers' JVMs warm up; a mirrored order gives each setting the same mean position).
For each: the proxies (SCHED_FIFO: the wire's timing must not wait for the stack's CPU)
and rules in place, then both gateways started (a gateway keeps its connections, and only
new ones are redirected), a Redis PING round trip from sk-gw1 to a node measured through
the same path, a warm-up, then wrk from sk-client against both gateways at once
(10.77.0.41 and .42, half the connections each, one thread each, the same
bench/wrkexecute.lua as `make bench`) at 64 and at 256 connections in all. The consumers
are stopped, as in bench/cluster.py: the orders wait in Kafka. Per run: requests a second
(both wrk summed), p50 and p99 (the slower gateway's: wrk's percentiles cannot be merged;
both are in the JSON), answers outside 2xx, socket errors, CPU per accepted order (the
gateways' 200s) of the gateways, the Redis nodes, the brokers and the proxies, each summed
over its processes from /proc ticks, and the means of the gateways' execute batch, Redis
round trip and Kafka delivery histograms; the report gives each setting's mean of its two
passes.

It writes bench/results/latency-<UTC time>.md and .json and prints the table. The
topology's configuration is build/bench-latency/hosts.conf (conf/cluster.conf +
bench/conf/bench.conf, data under var/bench-latency, removed at the end); it refuses to
start while any sk-* namespace exists (another hosts topology). Whatever happens (an
error, Ctrl-C, SIGTERM) the gateways and proxies are stopped, the rules removed and the
topology brought down (`make down TOPOLOGY=hosts CONF=build/bench-latency/hosts.conf` by
hand after a SIGKILL).

Environment: BENCH_LATENCY_SECONDS (20) per measured run, BENCH_LATENCY_WARMUP (5) before
each setting's runs, BENCH_LATENCY_FIRST_WARMUP (45) before the first (three JVMs that just
started).
"""

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from benchlib import (BUILD, CLK_TCK, CTL, NCPU, ROOT, MySQL, Proc, cluster_service_pids, ctl_id, delta,
                      environment, http_ok, proc_ticks, scrape, system_ticks, wrk_argv, wrk_result)

import netfault  # noqa: E402 - test/lib is on the path from benchlib
from ctlconf import Conf  # noqa: E402
from resp import RedisError, redis_client  # noqa: E402

SECONDS = int(os.environ.get("BENCH_LATENCY_SECONDS") or 20)
WARMUP = int(os.environ.get("BENCH_LATENCY_WARMUP") or 5)
# Three broker JVMs that just started: a first run of 15 s left the first measured one at
# half the throughput of the same setting measured again at the end.
FIRST_WARMUP = int(os.environ.get("BENCH_LATENCY_FIRST_WARMUP") or 45)
CONNECTIONS = (64, 256)
# (label, one-way delay in us or None for no proxy), then the same in reverse: the figures
# drift over a run (the brokers' JVMs go on warming up: no proxy measured first and last in
# one pass differed by 1.25x at 256 connections and 2x at 64), and a mirrored order gives
# each setting the same mean position. The report gives the mean of the two passes and each.
PASS = [("no proxy", None), ("+0 ms", 0), ("+0.5 ms", 250), ("+2 ms", 1000)]
SETTINGS = [(label, us, 1) for label, us in PASS] + [(label, us, 2) for label, us in reversed(PASS)]
# The proxies run SCHED_FIFO: they stand for the wire, whose timing does not wait for the CPU
# of the machine under test; at normal priority on two saturated cores a chunk due after
# 250 us was written some 150 us late on average.
PROXY_RT = ["chrt", "-f", "10"]
# The gateways' histograms whose mean per run says what a round trip costs them and how
# many requests one execute.lua call carried (seckill_execute_batch_size).
HISTOGRAMS = {"execute_batch": "seckill_execute_batch_size", "redis_rtt": "seckill_redis_roundtrip_seconds",
              "kafka_delivery": "seckill_kafka_delivery_seconds"}
GATEWAYS = {"sk-gw1": "10.77.0.41", "sk-gw2": "10.77.0.42"}
CLIENT_NS = "sk-client"
PROXY = BUILD / "bench" / "delayproxy"
WORK = ROOT / "build" / "bench-latency"
HOSTS_CONF = WORK / "hosts.conf"
HOSTS_EXTRA = WORK / "extra.conf"
DATA_DIR = "var/bench-latency"
USER_BASE_STEP = 10**10
# The second wrk of a run starts its users this far above the first's (wrkexecute.lua adds
# thread * 10^9: one thread each).
SECOND_WRK_OFFSET = 5 * 10**9


def log(msg):
    print(f"bench-latency: {msg}", flush=True)


class Interrupted(Exception):
    pass


def on_sigterm(signum, frame):
    raise Interrupted(f"signal {signum}")


def sk_leftovers():
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in listing.splitlines() if line.startswith("sk-")]


class LatencyBench:
    def __init__(self, args):
        self.args = args
        self.stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.logs = ROOT / "var" / "bench" / f"latency-{self.stamp}"
        Proc.RUN_DIR = str(self.logs / "run")
        # The delays are this script's, per setting: none from the topology's up.
        self.env = dict(os.environ, HOSTS_CONF=str(HOSTS_CONF), HOSTS_EXTRA=str(HOSTS_EXTRA),
                        STACK_BIN_DIR=str(BUILD), HOSTS_DELAY_US="0")
        self.gateways, self.proxies, self.redirects = [], [], []
        self.up = False
        self.user_base = USER_BASE_STEP
        self.rows, self.errors, self.settings_info = [], [], []

    # -- the topology ----------------------------------------------------------------------

    def hosts(self, *args, timeout=900):
        log(f"scripts/hosts.sh {' '.join(args)}")
        p = subprocess.Popen(["bash", str(ROOT / "scripts" / "hosts.sh"), *args], env=self.env, cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            out = p.communicate(timeout=timeout)[0].strip()
        except BaseException:
            # SIGTERM, not the SIGKILL subprocess.run would send: an up that is cut short
            # stops what it started and removes what it made (hosts.sh's own trap).
            p.terminate()
            try:
                p.wait(180)
            except subprocess.TimeoutExpired:
                p.kill()
            raise
        (self.logs / f"hosts-{args[0]}.log").write_text(out + "\n")
        if p.returncode != 0:
            raise RuntimeError(f"scripts/hosts.sh {' '.join(args)} failed ({p.returncode}):\n{out[-3000:]}")
        return out

    def stack(self, *args):
        p = subprocess.run(["bash", str(ROOT / "scripts" / "stack.sh"), *args],
                           env=dict(self.env, CONF=str(HOSTS_CONF)), cwd=ROOT, capture_output=True, text=True,
                           timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"scripts/stack.sh {' '.join(args)} failed ({p.returncode}): "
                               f"{(p.stdout + p.stderr).strip()[-2000:]}")

    def bring_up(self):
        WORK.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        HOSTS_EXTRA.write_text("# bench/latency.py: the benchmark's overrides, its own data directory\n"
                               + (ROOT / "bench" / "conf" / "bench.conf").read_text()
                               + f"\nstack.data-dir = {DATA_DIR}\n")
        # A data directory of the benchmark alone: a killed run's is stale (no topology runs now).
        shutil.rmtree(ROOT / DATA_DIR, ignore_errors=True)
        self.up = True
        self.hosts("up")
        self.conf = Conf(HOSTS_CONF, CTL)
        # Only the services are measured: the gateways start per setting, behind the proxies;
        # the consumers stay stopped (the orders wait in Kafka, as in bench/cluster.py).
        self.stack("down", "--apps-only")
        pids = cluster_service_pids(self.conf)
        self.redis_pids, self.kafka_pids = pids["redis"], pids["kafka"]
        missing = [f"redis node {i + 1}" for i, p in enumerate(self.redis_pids) if p is None]
        missing += [f"kafka node {i + 1}" for i, p in enumerate(self.kafka_pids) if p is None]
        if missing:
            raise RuntimeError(f"not running under {DATA_DIR}: {', '.join(missing)}")
        self.redis = redis_client(self.conf, timeout=60)
        # No automatic AOF rewrite during the runs (bench.py says why); the data goes at the end.
        self.redis.each_master("CONFIG", "SET", "auto-aof-rewrite-percentage", "0")
        self.redis_node = self.conf.get("redis.nodes").split(",")[0].rsplit(":", 1)
        self.dests = sorted({n.rsplit(":", 1)[0] for key in ("redis.nodes", "kafka.brokers")
                             for n in self.conf.get(key).split(",") if n})
        self.http_port = int(self.conf.get("http.port"))

    def activity(self):
        coupon = ctl_id(self.conf, "coupon", "create", "--name", "bench latency", "--type", "CASH",
                        "--amount", "5.00", "--min-order", "10.00", "--total", 20_000_000,
                        "--start", "-1m", "--end", "+1d")
        self.aid = ctl_id(self.conf, "activity", "create", "--coupon", coupon, "--stock", 10_000_000,
                          "--start", "now", "--end", "+50m", "--name", "bench latency")
        log(f"activity {self.aid} (coupon {coupon}), stock 10,000,000")

    # -- proxies and gateways --------------------------------------------------------------

    def start_proxies(self, one_way_us):
        for ns in GATEWAYS:
            p = Proc(f"delayproxy-{ns}", ["ip", "netns", "exec", ns, *PROXY_RT, PROXY, "--one-way-us", one_way_us,
                                          "--mark", hex(netfault.Redirect.MARK)], self.logs).start()
            self.proxies.append(p)
            p.wait_ready(lambda p=p: re.search(r"^listening \d+", p.log_text(), re.M), 10, "listening")
            port = int(re.search(r"^listening (\d+)", p.log_text(), re.M).group(1))
            self.redirects.append(netfault.Redirect(ns, self.dests, port).apply())

    def stop_proxies(self):
        """Rules first (no new connection may reach a proxy that is gone), then the proxies;
        their last line says how late they released chunks."""
        for r in self.redirects:
            r.restore()
        self.redirects = []
        summaries = []
        for p in self.proxies:
            rc, _ = p.stop(10)
            if rc != 0:
                self.error(p.name, f"exit status {rc} after SIGTERM")
            lines = [l for l in p.log_text().splitlines() if l.startswith("delayproxy: one-way")]
            summaries.append(f"{p.name}: {lines[-1][len('delayproxy: '):]}" if lines else f"{p.name}: no summary")
        self.proxies = []
        return summaries

    def start_gateways(self):
        for i, (ns, addr) in enumerate(GATEWAYS.items(), 1):
            g = Proc(f"seckill-server-{i}", ["ip", "netns", "exec", ns, BUILD / "seckill-server", "-c", HOSTS_CONF,
                                             "--set", f"http.host={addr}"], self.logs).start()
            self.gateways.append(g)
            g.wait_ready(lambda a=addr: http_ok((a, self.http_port), "/healthz"), 60, "answering /healthz")
        time.sleep(1.2)  # the gateways' activity cache (seckill.activity-refresh-ms)

    def stop_gateways(self):
        for g in self.gateways:
            rc, _ = g.stop(60)
            if rc != 0:
                self.error(g.name, f"exit status {rc} after SIGTERM")
        self.gateways = []

    def error(self, where, what):
        msg = f"{where}: {what}"
        log("ERROR " + msg)
        self.errors.append(msg)

    # -- one measured run ------------------------------------------------------------------

    def cpu(self):
        groups = {"gateways": [g.pid for g in self.gateways], "redis": self.redis_pids,
                  "brokers": self.kafka_pids, "proxies": [p.pid for p in self.proxies]}
        out = {}
        for k, pids in groups.items():
            ticks = [proc_ticks(p) for p in pids]
            out[k] = None if any(t is None for t in ticks) else sum(ticks)
        return {"t": time.monotonic(), "system": system_ticks(), "procs": out}

    def scrape_all(self):
        """The responses by status and the unlabelled values, summed over both gateways."""
        total = {"responses": {}, "values": {}}
        for addr in GATEWAYS.values():
            for part, values in scrape((addr, self.http_port)).items():
                for k, v in values.items():
                    total[part][k] = total[part].get(k, 0) + v
        return total

    def run(self, conns, seconds, record=True):
        self.user_base += USER_BASE_STEP
        argvs = [["ip", "netns", "exec", CLIENT_NS]
                 + wrk_argv((addr, self.http_port), 1, conns // 2, seconds, self.aid,
                            self.user_base + i * SECOND_WRK_OFFSET)
                 for i, addr in enumerate(GATEWAYS.values())]
        m0, s0 = self.scrape_all(), self.cpu()
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        procs = [subprocess.Popen(a, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for a in argvs]
        outs = [p.communicate(timeout=seconds + 60) for p in procs]
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        s1 = self.cpu()
        time.sleep(0.3)  # requests still in flight when wrk stopped get their answers
        m1 = self.scrape_all()
        ws = [wrk_result(p.returncode, o, e) for p, (o, e) in zip(procs, outs)]
        outcomes = delta(m1["responses"], m0["responses"])
        means = {}
        for key, name in HISTOGRAMS.items():
            n = m1["values"].get(f"{name}_count", 0) - m0["values"].get(f"{name}_count", 0)
            total = m1["values"].get(f"{name}_sum", 0) - m0["values"].get(f"{name}_sum", 0)
            means[key] = round(total / n * (1000 if name.endswith("_seconds") else 1), 2) if n else None
        accepted = outcomes.get("OK 200", 0)
        secs = {k: (s1["procs"][k] - v) / CLK_TCK for k, v in s0["procs"].items()
                if v is not None and s1["procs"][k] is not None}
        wall = s1["t"] - s0["t"]
        busy = (s1["system"][0] - s0["system"][0]) / CLK_TCK
        wrk_cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
        res = {
            "connections": conns, "seconds": seconds,
            "rps": round(sum(w["requests"] / (w["duration_us"] / 1e6) for w in ws), 1),
            "requests": sum(w["requests"] for w in ws),
            "p50_ms": round(max(w["latency_us"]["p50"] for w in ws) / 1000, 2),
            "p99_ms": round(max(w["latency_us"]["p99"] for w in ws) / 1000, 2),
            "per_gateway_latency_ms": [{k: round(v / 1000, 3) for k, v in w["latency_us"].items()} for w in ws],
            "non_2xx": sum(w["errors"]["status"] for w in ws),
            "socket_errors": sum(v for w in ws for k, v in w["errors"].items() if k != "status"),
            "outcomes": outcomes, "accepted": accepted,
            # the mean execute.lua batch (requests), Redis round trip and Kafka delivery (ms)
            "gateway_means": means,
            "cpu_s": {k: round(v, 2) for k, v in secs.items()},
            "cpu_us_per_accepted_order": {k: round(v * 1e6 / max(accepted, 1), 1) for k, v in secs.items()},
            "wrk_cpu_s": round(wrk_cpu, 2),
            "machine": {"busy_share": round(busy / (wall * NCPU), 3),
                        "other_share": round(max(0.0, busy - sum(secs.values()) - wrk_cpu) / (wall * NCPU), 3)},
            "wrk": [" ".join(str(x) for x in a).replace(str(ROOT) + "/", "") for a in argvs],
        }
        per = res["cpu_us_per_accepted_order"]
        res["stack_us_per_order"] = round(sum(per.get(k, 0) for k in ("gateways", "redis", "brokers", "proxies")), 1)
        log(f"{conns} connections{'' if record else ' (warm-up)'}: {res['rps']:,.0f} req/s, p50 {res['p50_ms']} ms, "
            f"p99 {res['p99_ms']} ms, non-2xx {res['non_2xx']}, socket errors {res['socket_errors']}, "
            f"us/order gateways {per.get('gateways')} Redis {per.get('redis')} brokers {per.get('brokers')} "
            f"proxies {per.get('proxies', '-')}, machine busy {res['machine']['busy_share']:.0%}; mean execute "
            f"batch {means['execute_batch']}, Redis round trip {means['redis_rtt']} ms, Kafka delivery "
            f"{means['kafka_delivery']} ms")
        return res

    def setting(self, label, one_way_us, npass, warmup):
        log(f"setting {label}, pass {npass}: "
            + ("no proxy" if one_way_us is None else f"delay proxy, {one_way_us} us each way"))
        info = {"setting": label, "one_way_us": one_way_us, "pass": npass,
                "added_round_trip_ms": None if one_way_us is None else 2 * one_way_us / 1000}
        try:
            if one_way_us is not None:
                self.start_proxies(one_way_us)
            info["ping_rtt_ms"] = round(netfault.ping_rtt_ms("sk-gw1", *self.redis_node), 3)
            log(f"Redis PING round trip from sk-gw1: {info['ping_rtt_ms']} ms")
            self.start_gateways()
            self.run(256, warmup, record=False)
            for conns in CONNECTIONS:
                r = self.run(conns, SECONDS)
                r.update({"setting": label, "one_way_us": one_way_us, "pass": npass})
                self.rows.append(r)
        finally:
            self.stop_gateways()
            if self.proxies or self.redirects:
                info["proxies"] = self.stop_proxies()
            self.settings_info.append(info)

    def teardown(self):
        # A second Ctrl-C or SIGTERM must not cut the clean-up short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        self.stop_gateways()
        if self.proxies or self.redirects:
            self.stop_proxies()
        for ns in GATEWAYS:
            netfault.clear(ns)  # a rule a failed apply left
        if self.up:
            try:
                self.hosts("down", timeout=600)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                self.error("down", e)
            self.up = False
        shutil.rmtree(ROOT / DATA_DIR, ignore_errors=True)
        left = sk_leftovers()
        if left:
            self.error("down", f"namespaces left: {' '.join(left)}")

    def main(self):
        t0 = time.monotonic()
        try:
            self.bring_up()
            self.env_info = environment(self.conf, MySQL(self.conf))
            self.activity()
            for k, (label, us, npass) in enumerate(SETTINGS):
                try:
                    self.setting(label, us, npass, FIRST_WARMUP if k == 0 else WARMUP)
                except (RuntimeError, OSError, RedisError, subprocess.TimeoutExpired) as e:
                    self.error(f"setting {label}", e)
        finally:
            self.teardown()
        self.duration = round(time.monotonic() - t0)


# ---- the report ----------------------------------------------------------------------------


def loopback_cluster():
    """The newest committed make bench run with the cluster's contended sale: its file and
    rows, or None."""
    results = ROOT / "bench" / "results"
    files = [results / "latest.json"] + sorted(results.glob("2*.json"), reverse=True)
    for f in files:
        try:
            d = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        sc = {s["id"]: s for s in (d.get("cluster") or {}).get("scenarios", [])}
        rows = []
        # contended-N, and contended-wait1-N where the run has it: the same settings
        # (conf/cluster.conf's redis.wait-replicas = 1) with the gateways restarted, which
        # shows how far two runs of one setting lie apart on this machine.
        for sid, conns in [(f"contended{w}-{c}", c) for w in ("", "-wait1") for c in CONNECTIONS]:
            s = sc.get(sid)
            if not s:
                continue
            accepted = max(s["outcomes"].get("OK 200", 0), 1)
            names = {"server": "gateways", "redis": "redis", "kafka": "brokers"}
            per = {names[k]: round(v * 1e6 / accepted, 1) for k, v in s["cpu_s"].items() if k in names}
            rows.append({"setting": f"loopback cluster ({sid})", "connections": conns, "rps": s["rps"],
                         "p50_ms": s["latency_ms"]["p50"], "p99_ms": s["latency_ms"]["p99"],
                         "non_2xx": s["outcomes"].get("non-2xx", 0) + s.get("unexpected", 0),
                         "socket_errors": s["socket_errors"], "cpu_us_per_accepted_order": per,
                         "stack_us_per_order": round(sum(per.values()), 1),
                         "machine": {"busy_share": s["machine"]["machine_busy_share"],
                                     "other_share": s["machine"]["other_processes_share"]}})
        if {r["connections"] for r in rows} == set(CONNECTIONS):
            name = f.name if f.name != "latest.json" else f"latest.json ({d.get('stamp', '?')})"
            return {"file": f"bench/results/{name}", "started_at": d.get("started_at"), "rows": rows}
    return None


def mean_rows(rows):
    """One row per setting and connection count: the passes' mean (CPU per order over all
    their accepted orders), and each pass's req/s."""
    out = []
    for label, us in PASS:
        for conns in CONNECTIONS:
            runs = [r for r in rows if r["one_way_us"] == us and r["connections"] == conns]
            if not runs:
                continue
            accepted = max(sum(r["accepted"] for r in runs), 1)
            cpu = {k: round(sum(r["cpu_s"].get(k, 0) for r in runs) * 1e6 / accepted, 1) for k in runs[0]["cpu_s"]}

            def avg(get):
                vals = [get(r) for r in runs if get(r) is not None]
                return sum(vals) / len(vals) if vals else None
            out.append({
                "setting": label, "one_way_us": us, "connections": conns, "passes": len(runs),
                "rps": round(avg(lambda r: r["rps"]), 1), "rps_each": [r["rps"] for r in runs],
                "p50_ms": avg(lambda r: r["p50_ms"]), "p99_ms": avg(lambda r: r["p99_ms"]),
                "non_2xx": sum(r["non_2xx"] for r in runs), "socket_errors": sum(r["socket_errors"] for r in runs),
                "cpu_us_per_accepted_order": cpu,
                "stack_us_per_order": round(sum(cpu.get(k, 0) for k in ("gateways", "redis", "brokers", "proxies")), 1),
                "gateway_means": {k: avg(lambda r, k=k: r["gateway_means"].get(k)) for k in HISTOGRAMS},
                "machine": {k: avg(lambda r, k=k: r["machine"][k]) for k in ("busy_share", "other_share")},
            })
    return out


def fmt(v, digits=1):
    if v is None:
        return "–"
    if isinstance(v, (int, float)) and abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def markdown(bench, loop):
    head = ("| links | added per round trip | conn | req/s | × +0 ms | p50 ms | p99 ms | non-2xx | socket errors "
            "| gateways µs | Redis µs | brokers µs | proxies µs | sum µs/order | execute batch | Redis RTT ms "
            "| Kafka delivery ms | busy / other |")
    out = [f"# Latency between the gateways and Redis/Kafka {bench.stamp}", "",
           f"`make bench-latency` (bench/latency.py), {SECONDS} s of wrk per run after a warm-up ({FIRST_WARMUP} s "
           f"before the first setting, {WARMUP} s before each other), each setting in two passes, the second in "
           f"the reverse order (no proxy, +0, +0.5, +2 ms, then +2, +0.5, +0 ms, no proxy: the figures drift as "
           f"the brokers' JVMs warm up); each hosts row is the mean of its two passes, the req/s of each in "
           f"brackets (first pass first). {bench.duration} s in all. Machine: "
           f"{bench.env_info['machine']['nproc']} CPUs ({bench.env_info['machine']['cpu_model']}), kernel "
           f"{bench.env_info['machine']['kernel']}, load average before "
           f"{' '.join(bench.env_info['machine']['loadavg_before'])}; git {bench.env_info['versions']['git']}.",
           "",
           "The hosts topology (docs/scale-out.md, \"On several machines\": 9 Redis Cluster nodes, 3 KRaft brokers "
           "(replication factor 3, min.insync.replicas 2), 2 gateways, each in a network namespace of its own on one "
           "bridge, on this one machine), conf/cluster.conf + bench/conf/bench.conf (redis.wait-replicas = 1, "
           "kafka.producer.linger.ms = 1, reply after the ack), consumers stopped. wrk from sk-client against both "
           "gateways at once, half the connections each. A delay is bench/delayproxy.c (SCHED_FIFO) in each "
           "gateway's namespace holding every chunk back the one-way time in each direction between the gateways "
           "and every Redis node and broker: 0.5 ms per round trip is 250 µs each way, 2 ms is 1000 µs. Redis "
           "replication and the brokers' own traffic are not delayed. CPU per accepted order (the gateways' 200s), "
           "summed over the processes of each part; p50/p99 are the slower gateway's; × +0 ms: req/s over the "
           "row with the proxy in the path and no delay; execute batch, Redis RTT, Kafka delivery: the means of "
           "the gateways' histograms over the run (requests per execute.lua call, ms per Redis command, ms from "
           "produce to delivery report); busy / other: the machine's CPU in use, and the share of it that went to "
           "processes outside the benchmark.", "", head, "|" + "---|" * (head.count("|") - 1)]
    means = mean_rows(bench.rows)
    base = {r["connections"]: r["rps"] for r in means if r["one_way_us"] == 0}
    rows = []
    if loop:
        rows += [(r, r["setting"], "–", "–") for r in loop["rows"]]
    for r in means:
        added = "none" if r["one_way_us"] is None else f"{2 * r['one_way_us'] / 1000:g} ms"
        ratio = f"{r['rps'] / base[r['connections']]:.2f}" if base.get(r["connections"]) else "–"
        each = " (" + " / ".join(fmt(v) for v in r["rps_each"]) + ")" if len(r["rps_each"]) > 1 else ""
        rows.append((dict(r, rps_text=fmt(r["rps"]) + each), f"hosts, {r['setting']}", added, ratio))
    for conns in CONNECTIONS:
        for r, links, added, ratio in rows:
            if r["connections"] != conns:
                continue
            per = r["cpu_us_per_accepted_order"]
            m = r["machine"]
            g = r.get("gateway_means") or {}
            out.append(f"| {links} | {added} | {conns} | {r.get('rps_text') or fmt(r['rps'])} | {ratio} | {fmt(r['p50_ms'], 2)} | "
                       f"{fmt(r['p99_ms'], 2)} | {r['non_2xx']} | {r['socket_errors']} | {fmt(per.get('gateways'))} | "
                       f"{fmt(per.get('redis'))} | {fmt(per.get('brokers'))} | {fmt(per.get('proxies'))} | "
                       f"{fmt(r['stack_us_per_order'])} | {fmt(g.get('execute_batch'))} | "
                       f"{fmt(g.get('redis_rtt'), 2)} | {fmt(g.get('kafka_delivery'), 2)} | "
                       f"{m['busy_share']:.0%} / {m['other_share']:.0%} |")
    out.append("")
    if loop:
        out.append(f"The loopback cluster rows are `make bench`'s cluster topology (bench/cluster.py: the same wrk "
                   f"with 2 threads against 2 gateways sharing one port on 127.0.0.1, the same configuration but "
                   f"its ports) from {loop['file']}, run {loop['started_at']} on the same machine: "
                   f"contended-N and, where that run has it, contended-wait1-N (the same settings, the gateways "
                   f"restarted: how far two runs of one setting lie apart here).")
    else:
        out.append("No committed `make bench` run in bench/results/ has the cluster topology's contended sale: "
                   "the loopback cluster rows are missing.")
    out += ["", "Redis PING round trip from sk-gw1 to the first Redis node, through the same path, and the "
            "proxies' own lag (how late after its due time a chunk was written, on average and at most):", "",
            "| links | PING ms | proxies |", "|---|---|---|"]
    for i in bench.settings_info:
        prox = "; ".join(re.sub(r"^delayproxy-(sk-gw\d): one-way (\d+) us: .*released ([\d.]+) us late on "
                                r"average \(most ([\d.]+) us\)$", r"\1 \3 µs (most \4)", s)
                         for s in i.get("proxies", [])) or "–"
        out.append(f"| {i['setting']} (pass {i['pass']}) | {fmt(i.get('ping_rtt_ms'), 3)} | {prox} |")
    if bench.errors:
        out += ["", "Errors:", ""] + [f"- {e}" for e in bench.errors]
    out += ["", "Commands: " + "; ".join(f"`{w}`" for w in bench.rows[0]["wrk"]) if bench.rows else ""]
    return "\n".join(out).rstrip() + "\n"


def main():
    ap = argparse.ArgumentParser(description="the contended sale on the hosts topology with delayed links")
    ap.add_argument("--out-dir", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-latency: needs root (the hosts topology's namespaces)")
    for what, path in (("seckill-server", BUILD / "seckill-server"), ("delayproxy", PROXY)):
        if not Path(path).exists():
            sys.exit(f"bench-latency: {path} is not built (make bench-latency builds it)")
    if shutil.which("wrk") is None:
        sys.exit("bench-latency: wrk not found (scripts/install-deps.sh)")
    left = sk_leftovers()
    if left:
        sys.exit(f"bench-latency: a hosts topology is up ({' '.join(left[:4])} ...): make down TOPOLOGY=hosts first")
    signal.signal(signal.SIGTERM, on_sigterm)
    bench = LatencyBench(args)
    try:
        bench.main()
    except (Interrupted, KeyboardInterrupt) as e:
        log(f"interrupted ({str(e) or 'Ctrl-C'}): torn down")
        return 130
    loop = loopback_cluster()
    md = markdown(bench, loop)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"latency-{bench.stamp}.md").write_text(md)
    (out / f"latency-{bench.stamp}.json").write_text(json.dumps({
        "stamp": bench.stamp, "seconds": SECONDS, "warmup_seconds": WARMUP, "duration_s": bench.duration,
        "rows": bench.rows, "means": mean_rows(bench.rows), "settings": bench.settings_info, "loopback_cluster": loop, "errors": bench.errors,
        **bench.env_info}, indent=2) + "\n")
    print(md)
    log(f"bench/results/latency-{bench.stamp}.md and .json; logs in var/bench/latency-{bench.stamp}")
    return 1 if bench.errors or not bench.rows else 0


if __name__ == "__main__":
    sys.exit(main())
