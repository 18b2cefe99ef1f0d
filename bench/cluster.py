#!/usr/bin/env python3
"""The contended sale of `make bench` on the cluster topology, against services that
bench/run.sh started with conf/cluster.conf (three KRaft brokers, topics on three
replicas with min.insync.replicas=2).

    cluster.py --conf FILE --out RESULT.json --logs DIR

Runs `stack.gateways` gateways sharing http.port (SO_REUSEPORT) and, for the correctness
check afterwards, `stack.consumers` consumers of one group; the same wrk runs as the
single stack's contended sale (bench.py), so that bench/report.py can set the two side
by side: requests a second, and CPU per accepted order of the gateways, Redis and the
brokers, summed over the processes of each part. What the brokers spend beyond the single
stack's broker is what replication costs per order.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench import SECONDS, THREADS, WARMUP_SECONDS, Bench, log
from benchlib import (BUILD, CLK_TCK, ROOT, Proc, cluster_service_pids, ctl_id, environment, http_ok, proc_ticks,
                      scrape, system_ticks)

# One hot activity split into 1 and then 3 buckets (seckillctl activity create --buckets):
# BENCH_HOT_BUCKETS lists the counts ("" or "0" leaves the part out); BENCH_HOT_ONLY=1 runs
# it alone (no contended sale, no correctness step).
HOT_BUCKETS = [int(b) for b in os.environ.get("BENCH_HOT_BUCKETS", "1,3").split(",") if b.strip() not in ("", "0")]
HOT_ONLY = os.environ.get("BENCH_HOT_ONLY", "0") == "1"
HOT_CONNECTIONS = 256

# Gateway i serves /metrics on METRICS_PORT_BASE + i: behind one shared port a scrape
# would reach whichever gateway the kernel picks.
METRICS_PORT_BASE = int(os.environ.get("BENCH_METRICS_PORT_BASE", "37110"))


class ClusterBench(Bench):
    """Bench on several gateways, consumers and brokers: a part's CPU is the sum of its
    processes'. Only the steps that compare the topologies."""

    def __init__(self, args):
        super().__init__(args)
        var = self.conf.data_dir(ROOT)
        pids = cluster_service_pids(self.conf)
        self.kafka_pids, self.redis_pids = pids["kafka"], pids["redis"]
        self.service_pids = {"mariadb": pids["mariadb"]}
        self.n_gateways = int(self.conf.get("stack.gateways"))
        self.n_consumers = int(self.conf.get("stack.consumers"))
        self.gateways, self.consumers = [], []
        missing = [f"kafka node {i + 1}" for i, p in enumerate(self.kafka_pids) if p is None]
        missing += [f"redis node {i + 1}" for i, p in enumerate(self.redis_pids) if p is None]
        missing += [k for k, p in self.service_pids.items() if p is None]
        if missing:
            raise RuntimeError(f"not running under {var}: {', '.join(missing)}")

    def cpu_snapshot(self, server_pid):
        del server_pid  # every gateway counts
        groups = {k: [p] for k, p in self.service_pids.items()}
        groups["kafka"] = self.kafka_pids
        groups["redis"] = self.redis_pids
        groups["server"] = [g.pid for g in self.gateways if g.alive()]
        live = [c.pid for c in self.consumers if c.alive()]
        if live:
            groups["consumer"] = live
        procs = {}
        for k, pids in groups.items():
            ticks = [proc_ticks(p) for p in pids]
            procs[k] = None if any(t is None for t in ticks) else sum(ticks)
        return {"t": time.monotonic(), "system": system_ticks(), "procs": procs}

    def scrape(self):
        total = {"responses": {}, "values": {}}
        for i in range(1, len(self.gateways) + 1):
            one = scrape((self.addr[0], METRICS_PORT_BASE + i))
            for part, values in one.items():
                for k, v in values.items():
                    total[part][k] = total[part].get(k, 0) + v
        return total

    def start_gateway(self, sets=()):
        for i in range(1, self.n_gateways + 1):
            metrics = (self.addr[0], METRICS_PORT_BASE + i)
            g = Proc(f"seckill-server-{i}", [BUILD / "seckill-server", "-c", self.conf.path, "--set",
                                             f"http.metrics-port={metrics[1]}"] + [a for kv in sets for a in ("--set", kv)],
                     self.logs).start()
            g.wait_ready(lambda m=metrics: http_ok(m, "/metrics"), 60, "answering /metrics")
            self.gateways.append(g)
        self.gateway = self.gateways[0]
        log(f"{len(self.gateways)} gateways up (pids {[g.pid for g in self.gateways]}) "
            f"on {self.addr[0]}:{self.addr[1]}")

    def start_consumer(self):
        base = int(self.conf.get("consumer.metrics-port"))
        for i in range(1, self.n_consumers + 1):
            argv = [BUILD / "order-consumer", "-c", self.conf.path, "--set", "log.level=info"]
            if base:
                argv += ["--set", f"consumer.metrics-port={base + i - 1}"]
            c = Proc(f"order-consumer-{i}", argv, self.logs).start()
            c.wait_ready(lambda c=c: "ready (group" in c.log_text(), 60, "ready")
            self.consumers.append(c)
        self.consumer = self.consumers[0]

    def contended(self, activity):
        # Three JVMs that just started: a longer warm-up than the single stack's one broker.
        r = self.http_scenario("contended-warmup", "", "contended", self.gateway.pid, 256, activity,
                               ["OK"], record=False, seconds=WARMUP_SECONDS * 3)
        self.contended_accepted += self.accepted_ok(r)
        for conns in (64, 256):
            r = self.http_scenario(f"contended-{conns}",
                                   f"contended sale on the cluster, every request a new user, {conns} connections",
                                   "contended", self.gateway.pid, conns, activity, ["OK"])
            self.contended_accepted += self.accepted_ok(r)

    def stop_gateways(self):
        for g in self.gateways:
            if g.alive():
                rc, _ = g.stop(60)
                if rc != 0:
                    self.error(g.name, f"exit status {rc} after SIGTERM")
        self.gateways = []

    def wait_cost(self, activity):
        """What redis.wait-replicas costs: the contended sale at 64 and 256 connections with
        the gateways restarted on wait-replicas = 0, then = 1 (a WAIT behind every execute
        call and queued mark), in the same run. BENCH_WAIT_COST=0 leaves it out."""
        rows = []
        for wait in (0, 1):
            self.stop_gateways()
            self.start_gateway([f"redis.wait-replicas={wait}"])
            time.sleep(1.2)  # the gateways' activity cache
            r = self.http_scenario(f"wait{wait}-warmup", "", "contended", self.gateway.pid, 256, activity,
                                   ["OK"], record=False)
            self.contended_accepted += self.accepted_ok(r)
            for conns in (64, 256):
                r = self.http_scenario(f"contended-wait{wait}-{conns}",
                                       f"contended sale on the cluster, redis.wait-replicas={wait}, {conns} connections",
                                       "contended", self.gateway.pid, conns, activity, ["OK"])
                accepted = self.accepted_ok(r)
                self.contended_accepted += accepted
                per_order = {k: round(v * 1e6 / max(accepted, 1), 1) for k, v in r["cpu_s"].items()}
                rows.append({"wait_replicas": wait, "connections": conns, "rps": r["rps"],
                             "p50_ms": r["latency_ms"]["p50"], "p99_ms": r["latency_ms"]["p99"],
                             "accepted": accepted, "cpu_us_per_accepted_order": per_order,
                             "wait_short": r["counters"].get("seckill_redis_wait_short_total", 0)})
                log(f"wait-replicas={wait}, {conns} connections: {r['rps']:,.0f} req/s, "
                    f"p50 {r['latency_ms']['p50']:.2f} ms, p99 {r['latency_ms']['p99']:.2f} ms, "
                    f"gateways {per_order.get('server', 0)} us/order, Redis {per_order.get('redis', 0)} us/order")
        self.results["wait_cost"] = rows

    def setup(self):
        self.start_gateway()
        self.activity("contended", 10_000_000)
        time.sleep(1.2)  # the gateways' activity cache (seckill.activity-refresh-ms)

    def correctness(self):
        self.start_consumer()
        self.check_activity("contended", accepted=self.contended_accepted)

    def redis_roles(self):
        """port -> master|slave of every Redis node, by ROLE."""
        roles = {}
        for node in self.conf.get("redis.nodes").split(","):
            host, _, port = node.rpartition(":")
            p = subprocess.run(["redis-cli", "-h", host, "-p", port, "ROLE"], capture_output=True, text=True,
                               timeout=10)
            roles[port] = (p.stdout.split() or ["?"])[0]
        return roles

    def hot_buckets(self):
        """The same hot sale with 1 bucket and with 3: what each Redis master spends per
        order shows whether the sale is served by one master or by three."""
        ports = [n.rpartition(":")[2] for n in self.conf.get("redis.nodes").split(",")]
        runs = []
        for count in HOT_BUCKETS:
            coupon = ctl_id(self.conf, "coupon", "create", "--name", f"bench hot {count}", "--type", "CASH",
                            "--amount", "5.00", "--total", 20_000_000, "--start", "-1m", "--end", "+1d")
            aid = ctl_id(self.conf, "activity", "create", "--coupon", coupon, "--stock", 10_000_000,
                         "--start", "now", "--end", "+50m", "--buckets", count)
            time.sleep(1.2)  # the gateways' activity cache (seckill.activity-refresh-ms)
            self.http_scenario(f"hot-{count}-warmup", "", "contended", self.gateway.pid, HOT_CONNECTIONS, aid,
                               ["OK"], record=False)
            t0 = [proc_ticks(p) for p in self.redis_pids]
            r = self.http_scenario(f"hot-{count}-buckets",
                                   f"one hot activity in {count} bucket(s), {HOT_CONNECTIONS} connections",
                                   "contended", self.gateway.pid, HOT_CONNECTIONS, aid, ["OK"], record=False)
            t1 = [proc_ticks(p) for p in self.redis_pids]
            roles = self.redis_roles()
            accepted = max(r["outcomes"].get("OK 200", 0), 1)
            per_node = {port: {"role": roles.get(port, "?"),
                               "cpu_us_per_order": round((b - a) / CLK_TCK * 1e6 / accepted, 1)}
                        for port, a, b in zip(ports, t0, t1) if a is not None and b is not None}
            runs.append({"buckets": count, "activity": aid, "rps": r["rps"], "latency_ms": r["latency_ms"],
                         "accepted": r["outcomes"].get("OK 200", 0), "outcomes": r["outcomes"],
                         "gateways_cpu_us_per_order": round(r["cpu_s"].get("server", 0) * 1e6 / accepted, 1),
                         "redis_nodes": per_node, "machine": r["machine"]})
            log(f"hot sale, {count} bucket(s): {r['rps']:,.0f} req/s, gateways "
                f"{runs[-1]['gateways_cpu_us_per_order']} us/order, Redis masters "
                + ", ".join(f"{p} {v['cpu_us_per_order']}" for p, v in per_node.items() if v["role"] == "master"))
        self.results["hot_buckets"] = runs

    FATAL_STEP = "gateways"

    def steps(self):
        hot = [("hot-buckets", self.hot_buckets)] if HOT_BUCKETS else []
        if HOT_ONLY:
            return [("gateways", self.start_gateway)] + hot
        steps = [("gateways", self.setup),
                 ("contended", lambda: self.contended(self.activities["contended"]["id"]))]
        if os.environ.get("BENCH_WAIT_COST", "1") != "0":
            steps.append(("wait-cost", lambda: self.wait_cost(self.activities["contended"]["id"])))
        return steps + [("correctness", self.correctness)] + hot

    def shutdown(self):
        stops = {}
        for p in self.gateways + self.consumers:
            if p.alive():
                rc, secs = p.stop(60)
                stops[p.name] = {"exit_status": rc, "stop_s": secs}
                if rc != 0:
                    self.error(p.name, f"exit status {rc} after SIGTERM")
        self.results["stops"] = stops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--conf", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--logs", required=True)
    args = ap.parse_args()
    args.baseline = None
    bench = ClusterBench(args)
    env = environment(bench.conf, bench.mysql)
    result = bench.run()
    result.update(env)
    result.update({
        "topology": "cluster",
        "gateways": bench.n_gateways, "consumers": bench.n_consumers,
        "brokers": len(bench.kafka_pids), "redis_nodes": len(bench.redis_pids),
        # as scripts/kafka.sh creates the topics
        "replication_factor": min(3, len(bench.kafka_pids)), "min_insync_replicas": min(2, len(bench.kafka_pids)),
        "settings": {"wrk_threads": THREADS, "wrk_seconds": SECONDS, "warmup_seconds": WARMUP_SECONDS},
        "activities": bench.activities,
        "conf_file": args.conf,
    })
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    log(f"results in {args.out}")
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
