"""The big-sale scenario of `make bench` (issue 24): the contended sale on an activity that
already holds BENCH_BIG_ORDERS (2,000,000) SUCCESS orders, with the per-sale gauges as
shipped (seckill.sale-stats-interval-ms = 5000) and then off, and Redis's SLOWLOG over 10 ms
read across each run.

A mixin of bench.py's Bench, like sale.py. The orders are written straight into the sale's
Redis keys in the shape execute.lua and finalize.lua leave a sold order in
(test/lib/bulkfill.py), not through HTTP: two million orders through wrk would take minutes. They have no MySQL
rows, so the sale has no correctness check; the run's cleanup removes it.
"""

import threading
import time

from bulkfill import bulk_fill  # test/lib, on the path since bench.py put it there
from resp import redis_client  # test/lib
from sale import ACTIVITY_CACHE_S, env_int, log


def info_field(info, name):
    """One field of an INFO section's text, or None."""
    for line in (info or "").splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    return None

BIG_ORDERS = env_int("BENCH_BIG_ORDERS", 2_000_000)
BIG_STOCK = 10_000_000 + BIG_ORDERS
SLOW_US = 10_000


class BigSaleScenarios:
    """The big sale, after the protection scenarios (the gateway is restarted with the run's
    configuration, then with the gauges off)."""

    def big_fill(self, aid, n):
        first_user = 9 * 10**15 + (int(time.time()) % 10**6) * 10**7
        t0 = time.monotonic()
        done = bulk_fill(self.redis, self.conf, aid, n, first_user)
        log(f"big sale: {done:,} SUCCESS orders written into activity {aid} in {time.monotonic() - t0:.1f} s")

    def slowlog(self):
        """(entries over SLOW_US since the last reset, the longest in ms, its command)."""
        entries = self.redis("SLOWLOG", "GET", "1024") or []
        if not entries:
            return 0, 0.0, ""
        worst = max(entries, key=lambda e: e[2])
        return len(entries), round(worst[2] / 1000, 1), " ".join(str(a) for a in worst[3][:2])

    def big_sale(self):
        if BIG_ORDERS <= 0:
            log("big sale: skipped (BENCH_BIG_ORDERS=0)")
            return
        self.pause_consumer()
        # The rewrite's fork stalls Redis for as long as its memory takes to copy: the big
        # sale's figures are of a Redis that holds the big sale, not every sale of the run.
        self.results["redis_before_big_sale"] = self.forget_checked_sales()
        aid = self.activity("big", BIG_STOCK)
        self.big_fill(aid, BIG_ORDERS)
        old = dict(zip(*[iter(self.redis("CONFIG", "GET", "slowlog-*"))] * 2))
        self.redis("CONFIG", "SET", "slowlog-log-slower-than", str(SLOW_US))
        self.redis("CONFIG", "SET", "slowlog-max-len", "1024")
        try:
            for prefix, what, sets in (("bigsale", "gauges as shipped", []),
                                       ("bigsale-gauges-off", "gauges off", ["seckill.sale-stats-interval-ms=0"])):
                self.restart_gateway(sets)
                time.sleep(ACTIVITY_CACHE_S)
                self.redis("SLOWLOG", "RESET")
                for conns in (64, 256):
                    r = self.http_scenario(f"{prefix}-{conns}", f"contended sale holding {BIG_ORDERS:,} orders, "
                                           f"{what}, {conns} connections", prefix, self.gateway.pid, conns, aid,
                                           ["OK"], baseline_id=f"baseline-{conns}")
                    count, worst_ms, worst_cmd = self.slowlog()
                    self.redis("SLOWLOG", "RESET")
                    r["big_orders"] = BIG_ORDERS
                    r["gauges"] = what
                    r["slowlog_over_10ms"] = count
                    r["slowlog_worst_ms"] = worst_ms
                    r["slowlog_worst_command"] = worst_cmd
                    for other in (f"contended-{conns}", f"bigsale-{conns}"):
                        o = next((s for s in self.results["scenarios"] if s["id"] == other and s is not r), None)
                        if o:
                            r[f"ratio_to_{other.split('-')[0]}"] = round(r["rps"] / o["rps"], 3)
                    log(f"{prefix}-{conns}: SLOWLOG {count} command(s) over 10 ms, worst {worst_ms} ms {worst_cmd}")
            self.restart_gateway([])
            self.rewrite_during_sale(aid)
        finally:
            for k, v in old.items():
                self.redis("CONFIG", "SET", k, v)
            self.restart_gateway([])

    def rewrite_during_sale(self, aid):
        """bigsale-rewrite-64: the contended sale at 64 connections on the big sale while
        Redis rewrites its AOF (BGREWRITEAOF 2 s into the run; the run's automatic rewrites
        are off, so this is the only one), with Redis's settings as shipped: the fork of a
        process holding the big sale and the rewrite's disk and CPU land in the run."""
        time.sleep(ACTIVITY_CACHE_S)

        def rewrite():
            time.sleep(2)
            c = redis_client(self.conf, timeout=60)
            t0 = time.monotonic()
            c("BGREWRITEAOF")
            started["ms"] = round((time.monotonic() - t0) * 1000, 1)

        started = {}
        trigger = threading.Thread(target=rewrite)
        trigger.start()
        r = self.http_scenario("bigsale-rewrite-64", f"contended sale holding {BIG_ORDERS:,} orders while Redis "
                               "rewrites its AOF (settings as shipped), 64 connections", "bigsale-rewrite",
                               self.gateway.pid, 64, aid, ["OK"], baseline_id="baseline-64")
        trigger.join()
        deadline = time.monotonic() + 300
        while info_field(self.redis("INFO", "persistence"), "aof_rewrite_in_progress") == "1":
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        r["big_orders"] = BIG_ORDERS
        r["bgrewriteaof_ms"] = started.get("ms")
        r["fork_ms"] = round(int(info_field(self.redis("INFO", "stats"), "latest_fork_usec") or 0) / 1000, 1)
        r["rewrite_s"] = int(info_field(self.redis("INFO", "persistence"), "aof_last_rewrite_time_sec") or -1)
        r["redis_used_memory"] = info_field(self.redis("INFO", "memory"), "used_memory_human")
        shipped = next((s for s in self.results["scenarios"] if s["id"] == "bigsale-64"), None)
        if shipped:
            r["ratio_to_bigsale"] = round(r["rps"] / shipped["rps"], 3)
        log(f"bigsale-rewrite-64: fork {r['fork_ms']} ms, rewrite {r['rewrite_s']} s of "
            f"{r['redis_used_memory']}, p99 {r['latency_ms']['p99']} ms, max {r['latency_ms']['max']} ms")

    def big_settings(self):
        return {"big_orders": BIG_ORDERS}
