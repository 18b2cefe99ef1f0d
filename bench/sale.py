"""The flash-sale scenarios of `make bench` added by issue 10: the steady state and the
20:00 spike (consumer running), open-loop latency and the shipped protection on (consumer
stopped, like the closed-loop contended sale they are compared with).

A mixin of bench.py's Bench: it uses its gateway and consumer, its Redis and MariaDB
sessions, http_scenario() and check_activity(). bench/README.md describes the scenarios.
"""

import os
import threading
import time

from benchlib import (CTL, ROOT, delta, metric_value, redis_persistence, run_openloop, scrape)


def env_int(name, default):
    value = os.environ.get(name)
    return int(value) if value else default


STEADY_SECONDS = env_int("BENCH_STEADY_SECONDS", 60)
OPENLOOP_SECONDS = env_int("BENCH_OPENLOOP_SECONDS", 15)
OPENLOOP_SHARES = (50, 80)      # % of the closed-loop maximum (contended-256) of the same run
OPENLOOP_CONNS = 512
SPIKE_USERS = env_int("BENCH_SPIKE_USERS", 200000)
SPIKE_STOCK = env_int("BENCH_SPIKE_STOCK", 10000)
SPIKE_RATE = env_int("BENCH_SPIKE_RATE", 100000)
# Each connection carries one request at a time: with too few, the generator waits for
# free ones and the users no longer arrive within the 2 s (the report shows by how much).
SPIKE_CONNS = env_int("BENCH_SPIKE_CONNS", 4096)

# The shipped protection: what conf/seckill.conf says for these keys is what the
# protection-on scenarios run with (bench/conf/bench.conf turns them off for the others).
PROTECTION_KEYS = ("seckill.enable-rate-limit", "seckill.rate-limit.permits-per-second",
                   "seckill.rate-limit.burst-capacity", "seckill.max-requests-per-user",
                   "seckill.max-requests-per-ip", "seckill.enable-anti-brush",
                   "seckill.anti-brush-threshold", "seckill.anti-brush.ban-seconds")
# The global token bucket and the local per-IP share raised out of the way (both still
# checked), so that the per-user, per-IP and anti-brush work of every request is what is
# measured.
BUCKET_RAISED = {"seckill.rate-limit.permits-per-second": "100000000",
                 "seckill.rate-limit.burst-capacity": "100000000",
                 "seckill.rate-limit.per-ip-local-permits-per-second": "100000000",
                 "seckill.rate-limit.per-ip-local-burst": "100000000"}
ACTIVITY_CACHE_S = 1.2  # seckill.activity-refresh-ms: a new sale is known to the gateway


def log(msg):
    print(f"bench: {msg}", flush=True)


class SaleScenarios:
    """Scenarios of Bench (bench.py) after the consumer scenario."""

    def sale_settings(self):
        return {"steady_seconds": STEADY_SECONDS, "openloop_seconds": OPENLOOP_SECONDS,
                "openloop_shares_pct": list(OPENLOOP_SHARES), "openloop_connections": OPENLOOP_CONNS,
                "spike_users": SPIKE_USERS, "spike_stock": SPIKE_STOCK, "spike_rate": SPIKE_RATE,
                "spike_connections": SPIKE_CONNS}

    def ensure_consumer(self):
        if not (self.consumer and self.consumer.alive()):
            self.start_consumer()

    def pause_consumer(self):
        """Stops the consumer (it must exit 0) for scenarios compared with the closed-loop
        contended sale, which runs with it stopped: its CPU and MariaDB's stay out of them.
        sale_checks() starts it again."""
        if self.consumer and self.consumer.alive():
            rc, _ = self.consumer.stop(60)
            if rc != 0:
                self.error("consumer", f"exit status {rc} after SIGTERM (paused)")
            log("consumer stopped for the open-loop and protection scenarios")

    def sale_checks(self):
        """The correctness of the sales whose orders waited in Kafka: the consumer again,
        then rows = accepted, no duplicates, verify."""
        self.ensure_consumer()
        for name in ("openloop", "protected"):
            if name in self.activities:
                self.check_activity(name, accepted=self.activities[name].get("accepted"), wait_s=300)

    def consumer_lag(self):
        port = int(self.conf.get("consumer.metrics-port"))
        if not port:
            return None
        v = metric_value((self.conf.get("consumer.metrics-host"), port), "seckill_consumer_lag")
        return None if v is None else int(v)

    def rows_of(self, aid):
        return self.mysql.count(f"SELECT COUNT(*) FROM seckill_order WHERE activity_id = {aid}")

    def wait_rows(self, aid, want, timeout):
        """Polls until the sale has `want` rows; the rows then and the seconds it took."""
        t0 = time.monotonic()
        rows = self.rows_of(aid)
        while rows < want and time.monotonic() - t0 < timeout:
            time.sleep(0.05)
            rows = self.rows_of(aid)
        return rows, time.monotonic() - t0

    # -- steady state ----------------------------------------------------------------------------

    def steady_state(self):
        """STEADY_SECONDS of sale at 256 connections with the consumer running: accepted and
        persisted orders/s, the lag at the end, then every accepted order in MariaDB."""
        self.ensure_consumer()
        aid = self.activity("steady", 10_000_000)
        time.sleep(ACTIVITY_CACHE_S)
        t0 = time.monotonic()
        r = self.http_scenario("steady-256", f"steady state: {STEADY_SECONDS} s of sale at 256 connections, "
                               f"consumer running", "steady", self.gateway.pid, 256, aid, ["OK"],
                               seconds=STEADY_SECONDS)
        rows_end = self.rows_of(aid)
        t_rows = time.monotonic() - t0
        lag = self.consumer_lag()
        accepted = r["outcomes"].get("OK 200", 0)
        rows, drain_s = self.wait_rows(aid, accepted, 300)
        r.update({
            "accepted": accepted,
            "accepted_per_s": round(accepted / r["seconds"], 1),
            "rows_at_end": rows_end, "rows_at_end_after_s": round(t_rows, 2),
            "persisted_per_s": round(rows_end / t_rows, 1),
            "behind_at_end": accepted - rows_end,
            "consumer_lag_gauge_at_end": lag,
            "drain_s": round(drain_s, 2), "rows_after_drain": rows,
        })
        log(f"steady: {r['accepted_per_s']:,.0f} accepted/s, {r['persisted_per_s']:,.0f} persisted/s, "
            f"{accepted - rows_end:,} behind at the end (lag gauge {lag}), drained in {drain_s:.1f}s")
        self.check_activity("steady", accepted=accepted, wait_s=300)

    # -- open loop -------------------------------------------------------------------------------

    def openloop_scenario(self, sid, title, kind, aid, rate, expected, **kw):
        """One bench/openloop run against the gateway, with the gateway's outcomes and the
        CPU of every process, like http_scenario's."""
        pid = self.gateway.pid
        m0, p0, s0 = scrape(self.addr), redis_persistence(self.redis), self.cpu_snapshot(pid)
        o = run_openloop(self.addr, aid, rate, self.next_user_base(), **kw)
        s1 = self.cpu_snapshot(pid)
        time.sleep(0.3)
        m1, p1 = scrape(self.addr), redis_persistence(self.redis)
        secs, machine = self.cpu_usage(s0, s1, o["cpu_s"])
        outcomes = delta(m1["responses"], m0["responses"])
        served = sum(outcomes.values()) or o["answered"] or 1
        unexpected = {k: v for k, v in outcomes.items() if k.split()[0] not in expected}
        res = {
            "id": sid, "title": title, "kind": kind, "activity": aid,
            "target_rate": round(rate), "connections": kw.get("conns"),
            "due": o["due"], "sent": o["sent"], "answered": o["answered"], "unanswered": o["unanswered"],
            "socket_errors": o["socket_errors"], "reconnects": o["reconnects"],
            # The schedule's length, and when the last request actually went out: a generator
            # short of free connections sends late (the wait counts in the latency).
            "send_seconds": o["send_seconds"], "last_sent_s": o["last_sent_s"],
            "max_send_wait_ms": o["max_send_wait_ms"],
            "achieved_rate": round(o["sent"] / o["last_sent_s"]) if o["last_sent_s"] else None,
            "first_due_to_last_answer_s": o["first_due_to_last_answer_s"], "start_unix_ms": o["start_unix_ms"],
            "http_status": o["status"], "latency_ms": o["latency_ms"],
            "outcomes": outcomes, "expected": expected,
            "unexpected": sum(unexpected.values()), "unexpected_detail": unexpected,
            "cpu_us_per_request": {k: round(v * 1e6 / served, 1) for k, v in secs.items()},
            "openloop_cpu_us_per_request": round(o["cpu_s"] * 1e6 / served, 1),
            "machine": machine, "redis_forks": self.forks(p0, p1), "openloop": o["argv"],
        }
        accepted = outcomes.get("OK 200", 0)
        if accepted * 2 >= served:
            res["stack_cpu_us_per_accepted_order"] = round(
                sum(secs.get(k, 0) for k in ("server", "redis", "kafka")) * 1e6 / accepted, 1)
        self.results["scenarios"].append(res)
        lat = o["latency_ms"]
        log(f"{sid}: {res['sent']:,} sent at {res['achieved_rate']}/s (target {rate:,.0f}), answered "
            f"{o['answered']:,}, unanswered {o['unanswered']}, socket errors {o['socket_errors']}, "
            f"p50 {lat['p50']} p99 {lat['p99']} p99.9 {lat['p999']} max {lat['max']} ms, statuses {o['status']}")
        return res

    def open_loop(self):
        """A constant arrival rate at OPENLOOP_SHARES % of this run's closed-loop maximum (the
        contended sale at 256 connections), every request a new user."""
        closed = next((s for s in self.results["scenarios"] if s["id"] == "contended-256"), None)
        if closed is None:
            raise RuntimeError("no contended-256 figure in this run to take the rates from")
        self.pause_consumer()
        aid = self.activity("openloop", 10_000_000)
        time.sleep(ACTIVITY_CACHE_S)
        accepted = 0
        for share in OPENLOOP_SHARES:
            rate = closed["rps"] * share / 100
            r = self.openloop_scenario(
                f"openloop-{share}", f"open loop at {share} % of the contended-256 maximum "
                f"({rate:,.0f} req/s for {OPENLOOP_SECONDS} s)", "openloop", aid, rate, ["OK"],
                seconds=OPENLOOP_SECONDS, conns=OPENLOOP_CONNS)
            r["share_of_closed_loop_max_pct"] = share
            r["closed_loop_max_rps"] = closed["rps"]
            accepted += r["outcomes"].get("OK 200", 0)
            self.activities["openloop"]["accepted"] = accepted

    # -- the 20:00 spike -------------------------------------------------------------------------

    def spike(self):
        """SPIKE_USERS distinct users arriving at SPIKE_RATE/s on a fresh sale of SPIKE_STOCK,
        consumer running: exactly SPIKE_STOCK orders, every request answered, and the time
        from the first request to the last row in MariaDB."""
        self.ensure_consumer()
        aid = self.activity("spike", SPIKE_STOCK)
        time.sleep(ACTIVITY_CACHE_S)
        last_row = {}
        stop = threading.Event()

        def poller():  # the wall-clock moment the sale's last row is committed, to 20 ms
            while not stop.is_set():
                if self.rows_of(aid) >= SPIKE_STOCK:
                    last_row["t"] = time.time()
                    return
                time.sleep(0.02)

        watch = threading.Thread(target=poller, daemon=True)
        watch.start()
        r = self.openloop_scenario(
            "spike", f"the 20:00 spike: {SPIKE_USERS:,} distinct users at {SPIKE_RATE:,}/s on a "
            f"{SPIKE_STOCK:,}-stock sale", "spike", aid, SPIKE_RATE, ["OK", "OUT_OF_STOCK"],
            count=SPIKE_USERS, conns=SPIKE_CONNS)
        watch.join(120)
        stop.set()
        rows = self.rows_of(aid)
        db = self.mysql.rows(
            f"SELECT TIMESTAMPDIFF(MICROSECOND, MIN(accepted_at), MAX(created_at)) "
            f"FROM seckill_order WHERE activity_id = {aid}")[0][0]
        ok = r["http_status"].get("200", 0)
        r.update({
            "stock": SPIKE_STOCK, "users": SPIKE_USERS, "accepted": ok, "rows": rows,
            "first_request_to_last_row_s": round(last_row["t"] - r["start_unix_ms"] / 1000, 3)
            if "t" in last_row else None,
            "first_accept_to_last_row_s_mariadb": round(int(db) / 1e6, 3) if db not in (None, "NULL") else None,
            "checks": {
                f"exactly {SPIKE_STOCK:,} orders accepted (HTTP 200)": ok == SPIKE_STOCK,
                f"exactly {SPIKE_STOCK:,} rows in MariaDB": rows == SPIKE_STOCK,
                "every request sent and answered": r["sent"] == SPIKE_USERS and r["answered"] == SPIKE_USERS
                and r["unanswered"] == 0,
                "no socket errors": r["socket_errors"] == 0,
                "only 200 OK and 409 OUT_OF_STOCK": r["unexpected"] == 0,
            },
        })
        log(f"spike: {ok:,} accepted, {rows:,} rows, statuses {r['http_status']}, p99 {r['latency_ms']['p99']} ms, "
            f"last row {r['first_request_to_last_row_s']} s after the first request")
        # The exact count is correctness; what the generator could not send or hear is a result.
        for name in list(r["checks"])[:2]:
            if not r["checks"][name]:
                self.error("spike", f"failed: {name}")
        self.check_activity("spike", accepted=ok, wait_s=120)

    # -- protection on ---------------------------------------------------------------------------

    def restart_gateway(self, sets):
        rc, _ = self.gateway.stop(60)
        if rc != 0:
            self.error("gateway", f"exit status {rc} after SIGTERM (restart)")
        self.start_gateway(sets)

    def protection(self):
        """The contended sale with the shipped limits and anti-brush, clients spread over many
        IPs by X-Forwarded-For (one per 64 users, each user one request): first with the
        global bucket raised (the per-user/per-IP/anti-brush work measured), then with the
        bucket as shipped (nearly everything 429)."""
        from ctlconf import Conf  # test/lib, on the path since bench.py put it there
        shipped_conf = Conf(ROOT / "conf" / "seckill.conf", CTL)
        shipped = {k: shipped_conf.get(k) for k in PROTECTION_KEYS}
        self.pause_consumer()
        aid = self.activity("protected", 10_000_000)
        accepted = 0
        variants = (("protection", "global bucket raised", dict(shipped, **BUCKET_RAISED), ["OK"]),
                    ("protection-shipped", "as shipped", shipped, ["OK", "RATE_LIMITED"]))
        for prefix, what, values, expected in variants:
            self.restart_gateway([f"{k}={v}" for k, v in values.items()] + ["http.trust-forwarded-for=true"])
            time.sleep(ACTIVITY_CACHE_S)
            if prefix == "protection":
                r = self.http_scenario(f"{prefix}-warmup", "", "protection", self.gateway.pid, 64, aid,
                                       expected, record=False, xff=True)
                accepted += r["outcomes"].get("OK 200", 0)
                self.activities["protected"]["accepted"] = accepted
            for conns in (64, 256):
                r = self.http_scenario(f"{prefix}-{conns}", f"contended sale, shipped protection ({what}), "
                                       f"{conns} connections", prefix, self.gateway.pid, conns, aid, expected,
                                       baseline_id=f"baseline-{conns}", xff=True)
                accepted += r["outcomes"].get("OK 200", 0)
                self.activities["protected"]["accepted"] = accepted
                r["protection"] = what
                r["protection_settings"] = dict(values, **{"http.trust-forwarded-for": "true"})
                off = next((s for s in self.results["scenarios"] if s["id"] == f"contended-{conns}"), None)
                if off:
                    r["limits_off"] = off["id"]
                    r["ratio_to_limits_off"] = round(r["rps"] / off["rps"], 3)
