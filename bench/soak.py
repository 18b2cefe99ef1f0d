#!/usr/bin/env python3
"""make soak: the single topology under a steady load for a long time, one sale after
another, with a fault of the chaos set every few minutes; a report of the gateway's and
the consumer's memory and descriptors, Redis's memory and the consumer's Kafka lag over
time, and I1-I6 of every sale. Flat lines are the goal (docs/chaos.md, "The soak").

Built on the chaos suite (test/chaos: its faults, its I1-I6 checks, its load read back
request by request) and the benchmark's generator (build/bench/openloop). It runs its own
order-consumer and seckill-server (release binaries, SECKILL_BIN) against the services of
the configuration it is given, starts those services when they are down and stops again
those it started.

  1. the gateway and consumer start with the chaos suite's short timeouts and limits off,
     on a topic and consumer group of the soak;
  2. unless SOAK_RATE is set, a short closed-loop run (wrk, 64 connections) on a sale of
     its own measures the most orders a second the stack accepts; the soak runs at half;
  3. sales one after another for SOAK_MINUTES: each runs SOAK_SALE_SECONDS of open-loop
     load, then its window closes (the activity ENDS), the orders settle, I1-I6 and
     `seckillctl verify` are checked, and the sale is archived when `seckillctl activity
     archive` exists; every SOAK_FAULT_SECONDS a fault of the chaos set (SOAK_FAULTS) hits
     the running sale;
  4. every SOAK_SAMPLE_SECONDS a sample: the RSS and open descriptors of the gateway and the
     consumer, Redis's used_memory, the consumer's lag, the sales done.

Writes build/soak/<UTC time>/report.md (and report.json, the processes' logs) and a copy
of the report as build/soak/latest.md. Exits 1 when a sale's invariant or a fault's check
failed, or a process did not stop cleanly; flatness is reported, not enforced.

Settings (environment): SOAK_CONF (the stack's configuration; default conf/seckill.conf
then bench/conf/bench.conf, as make bench), SOAK_MINUTES (30), SOAK_RATE (orders a second
offered; default half the measured maximum), SOAK_FAULT_SECONDS (240; 0: no faults),
SOAK_FAULTS (chaos scenario keys, in turn: S2,S3,S5a,S1,S4,S3b,S5c,S6,S5b), SOAK_SALE_SECONDS
(120), SOAK_SAMPLE_SECONDS (30), SOAK_MEASURE_SECONDS (5), SOAK_COUPON_SECONDS (60: each
sale's coupon is valid that long after the sale's end, and its user coupons leave Redis that
long after again, consumer.coupon-archive-after-ms: an evening's coupons and their end,
compressed), SOAK_SET ("key=value;..." settings applied last), SECKILL_BIN (build).
"""

import argparse
import json
import os
import shutil
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT_BASE = ROOT / "build" / "soak"
DEFAULT_FAULTS = "S2,S3,S5a,S1,S4,S3b,S5c,S6,S5b"


def env_num(name, default, kind=int):
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        sys.exit(f"soak: {name}={raw!r} is not a number")
    if value < 0:
        sys.exit(f"soak: {name}={raw!r} is negative")
    return value


def settings():
    return {
        "minutes": env_num("SOAK_MINUTES", 30.0, float),
        "rate": env_num("SOAK_RATE", 0.0, float),
        "fault_seconds": env_num("SOAK_FAULT_SECONDS", 240.0, float),
        "faults": [k.strip() for k in os.environ.get("SOAK_FAULTS", DEFAULT_FAULTS).split(",") if k.strip()],
        "sale_seconds": max(20.0, env_num("SOAK_SALE_SECONDS", 120.0, float)),
        "sample_seconds": max(1.0, env_num("SOAK_SAMPLE_SECONDS", 30.0, float)),
        "measure_seconds": max(1, env_num("SOAK_MEASURE_SECONDS", 5)),
        "coupon_seconds": max(1, env_num("SOAK_COUPON_SECONDS", 60)),
    }


def parse_args():
    p = argparse.ArgumentParser(
        description="The soak: sales one after another at half the measured maximum, a chaos fault "
                    "every few minutes, RSS, descriptors, Redis memory and Kafka lag over time, I1-I6 "
                    "per sale. Settings by environment variable (see the module's docstring and "
                    "docs/chaos.md).")
    p.add_argument("--conf", help="the stack's configuration (default: SOAK_CONF, else "
                                  "conf/seckill.conf + bench/conf/bench.conf)")
    p.add_argument("--out", help="the run's directory (default build/soak/<UTC time>)")
    return p.parse_args()


def default_conf(path):
    """As make bench runs: the shipped file, then the benchmark's overrides."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Data of its own: a soak leaves millions of user coupon records in Redis, which the
    # benchmark's stack (whose ports it shares, never at the same time) must not inherit.
    path.write_text((ROOT / "conf" / "seckill.conf").read_text() + "\n# ==== bench/conf/bench.conf ====\n"
                    + (ROOT / "bench" / "conf" / "bench.conf").read_text()
                    + "\n# ==== the soak's own data ====\nstack.data-dir = var/soak\n", encoding="utf-8")
    return path


def log(msg):
    print(f"[soak {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- /proc and the services' own figures ------------------------------------------------------


def rss_mb(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def open_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def redis_used_mb(redis):
    try:
        for line in str(redis("INFO", "memory")).splitlines():
            if line.startswith("used_memory:"):
                return int(line.split(":")[1]) / (1024 * 1024)
    except Exception:  # noqa: BLE001 - Redis may be down on purpose
        pass
    return None


# ---- the run ------------------------------------------------------------------------------------


class Soak:
    def __init__(self, cfg, base_conf, out):
        self.cfg, self.out = cfg, out
        # The chaos suite's modules read their stack and binaries from the environment.
        os.environ["SECKILL_CONF"] = str(base_conf)
        os.environ.setdefault("SECKILL_BIN", str(ROOT / "build"))
        os.environ["SECKILL_ROOT"] = str(ROOT)
        os.environ["SECKILL_CHAOS_OUT"] = str(out / "chaos")
        for d in ("test/chaos", "test/lib", "bench"):
            sys.path.insert(0, str(ROOT / d))
        import benchlib  # noqa: E402 - only once the paths are set
        import chaoslib
        import chaosload
        import test_chaos
        self.benchlib, self.chaoslib, self.chaosload = benchlib, chaoslib, chaosload
        self.load_class = slim_load_class(chaosload)
        import sales
        import stack
        self.sales, self.stacklib = sales, stack
        by_key = {s.key: s for s in test_chaos.SCENARIOS}
        unknown = [k for k in cfg["faults"] if k not in by_key]
        if unknown:
            sys.exit(f"soak: SOAK_FAULTS names unknown scenarios {unknown} (known: {', '.join(by_key)})")
        self.faults = [by_key[k] for k in cfg["faults"]]
        self.base_conf = base_conf
        self.samples = []          # dicts, one per sample
        self.sales = []            # dicts, one per finished sale
        self.injected = []         # dicts, one per fault
        self.events = []           # text since the last sample
        self.lock = threading.Lock()
        self.stop_ev = threading.Event()
        self.t0 = None
        self.rate = cfg["rate"]
        self.measured = None
        self.archive = False
        self.broken = []           # what makes the run fail
        self.started_services = []

    # -- set-up
    def start(self):
        stacklib, sales, chaoslib = self.stacklib, self.sales, self.chaoslib
        self.stack = chaoslib.Stack(self.base_conf)
        for svc in (self.stack.redis_script, "mariadb", "kafka"):
            if not self.stack.running(svc):
                self.started_services.append(svc)
        if self.started_services:
            log(f"starting {' '.join(self.started_services)} (stopped again at the end)")
            self.stack.sh("stack", "up", "--services-only", timeout=900)
        overrides = {k: v for k, v in chaoslib.CHAOS_CONF.items() if k != "consumer.batch-size"}
        # info, not the bench's warn: the processes' readiness, the faults' checks and the
        # report read their info lines (a consumer says "ready" at info).
        overrides.update({"kafka.topic": "seckill.soak.orders",
                          "kafka.dead-letter-topic": "seckill.soak.orders.dlq",
                          "consumer.group-id": "seckill-soak-consumer",
                          "consumer.coupon-archive-after-ms": str(int(self.cfg["coupon_seconds"] * 1000)),
                          "log.level": "info"})
        for item in os.environ.get("SOAK_SET", "").split(";"):
            if item.strip():
                k, _, v = item.partition("=")
                overrides[k.strip()] = v.strip()
        self.overrides = overrides
        self.conf = stacklib.write_conf(self.out / "seckill.conf", overrides)
        self.stack.sh("kafka", "create-topics", conf=self.conf.path)
        backends = chaoslib.check_services()
        self.redis, self.mysql = backends["redis"], backends["mysql"]
        self.ctl = sales.Ctl(self.conf)
        self.consumer = stacklib.Consumer(self.conf, self.out)
        self.gateway = stacklib.Gateway(self.conf, self.out)
        self.consumer.start()
        self.gateway.start()
        self.archive = self.ctl("activity", "archive", "--help").rc == 0
        log(f"gateway :{self.conf.http_port} (pid {self.gateway.pid}), consumer pid {self.consumer.pid}; "
            f"seckillctl activity archive {'found' if self.archive else 'not there: sales keep their Redis keys'}")

    def measure(self):
        """The most orders a second the stack accepts: wrk, 64 connections, a sale of its own."""
        seconds = self.cfg["measure_seconds"]
        sale = self.create_sale(5_000_000, seconds + 10, "soak: measure")
        user_base = (int(time.time() * 1000) % 10**9) * 1000
        run = self.benchlib.run_wrk(("127.0.0.1", self.conf.http_port), 2, 64, seconds, sale.activity_id, user_base)
        non_200 = run["errors"]["status"]
        socket_errors = sum(v for k, v in run["errors"].items() if k != "status")
        accepted = run["requests"] - non_200 - socket_errors
        self.measured = accepted / (run["duration_us"] / 1e6)
        log(f"measured maximum: {self.measured:.0f} orders/s accepted (wrk 64 connections, {seconds} s; "
            f"{non_200} not 200, {socket_errors} socket errors)")
        # The soak starts from a consumer that has caught up, or the first samples' lag
        # would be the measurement's.
        self.sales.wait_for_consumer(self.mysql, self.redis, self.conf, sale.activity_id, consumer=self.consumer,
                                  timeout=300)
        self.wait_ended(sale.activity_id)
        self.finish_sale_keys(sale.activity_id)

    def create_sale(self, stock, seconds, name):
        """A sale from now for `seconds`, of a coupon of its own valid SOAK_COUPON_SECONDS after."""
        coupon = self.ctl.create_id("coupon", "create", "--name", name, "--type", "CASH", "--amount", "5.00",
                                    "--min-order", "10.00", "--total", stock, "--start", "-1m",
                                    "--end", f"+{int(seconds + self.cfg['coupon_seconds'])}s")
        activity = self.ctl.create_id("activity", "create", "--coupon", coupon, "--stock", stock, "--start", "now",
                                      "--end", f"+{int(seconds)}s", "--name", name)
        return self.sales.Sale(activity, coupon, stock)

    def finish_sale_keys(self, activity):
        """Archive a sale that ended, when this seckillctl can (its Redis keys go)."""
        if not self.archive:
            return None
        # The archive waits out a grace after the end (the gateways judge it by their own
        # clocks), and for MySQL to say ENDED (the consumer's lifecycle pass, within its
        # interval: `activity show` says ENDED by the clock at once): a sale that has only
        # just ended is refused for a few seconds.
        deadline = time.monotonic() + 30
        waits = ("can be archived", "only an ENDED or CANCELLED sale")
        while True:
            r = self.ctl("activity", "archive", activity)
            if r.rc == 0 or not any(w in r.stderr for w in waits) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if r.rc != 0:
            self.broken.append(f"activity {activity}: seckillctl activity archive exit {r.rc}: {r.stderr.strip()}")
        return r.rc == 0

    # -- sampling
    def sample(self):
        lag = None
        if self.consumer.running:
            lag = self.benchlib.metric_value(("127.0.0.1", self.conf.get_int("consumer.metrics-port")),
                                             "seckill_consumer_lag")
        g = self.gateway.pid if self.gateway.running else None
        c = self.consumer.pid if self.consumer.running else None
        with self.lock:
            events, self.events = self.events, []
            done = len(self.sales)
        row = {"t": time.monotonic() - self.t0, "gateway_pid": g, "consumer_pid": c,
               "gateway_rss": rss_mb(g) if g else None, "gateway_fds": open_fds(g) if g else None,
               "consumer_rss": rss_mb(c) if c else None, "consumer_fds": open_fds(c) if c else None,
               "redis_mb": redis_used_mb(self.redis), "lag": lag, "sales": done, "events": events}
        if self.samples:
            prev = self.samples[-1]
            for who in ("gateway", "consumer"):
                if prev[f"{who}_pid"] and row[f"{who}_pid"] and prev[f"{who}_pid"] != row[f"{who}_pid"]:
                    row["events"].append(f"{who} restarted")
        self.samples.append(row)
        self.write_report()

    def sampler(self):
        period = self.cfg["sample_seconds"]
        nxt = time.monotonic()
        while not self.stop_ev.wait(max(0.0, nxt - time.monotonic())):
            try:
                self.sample()
            except Exception as e:  # noqa: BLE001 - a sample lost is noted, the run goes on
                log(f"sample failed: {e}")
            nxt += period

    def event(self, text):
        with self.lock:
            self.events.append(text)

    # -- one sale
    def run_sale(self, n, seconds, next_fault):
        """One sale: the load for `seconds` (longer when a fault's recovery needs it), a fault
        when its time has come; then the window closes, the orders settle and are checked.
        Returns the time of the next fault."""
        chaoslib, chaosload = self.chaoslib, self.chaosload
        stock = max(1000, int(self.rate * seconds))
        t_created = time.monotonic()
        sale = self.create_sale(stock, seconds, f"soak {n}")
        a = sale.activity_id
        sampler = chaosload.Sampler(self.conf.http_port, self.conf)
        metrics = chaosload.Scrapers([self.gateway])
        user_base = (int(time.time() * 1000) % 10**9) * 1000
        log_path = self.out / f"load-{n}.log"
        load = self.load_class(self.stacklib.BIN, log_path, self.conf.http_port, a, user_base, self.rate, 256,
                            int(self.rate * (seconds + 120)) + 1000, on_accept=sampler.offer)
        sc = chaoslib.Scenario(f"sale {n}", f"activity {a}", None, stock=stock)
        ctx = chaoslib.Ctx(sc, self.conf, [self.gateway], [self.consumer], self.redis, self.mysql, self.ctl,
                           self.stack, sale, load)
        faults = []
        self.event(f"sale {n} (activity {a}) started")
        t_start = time.monotonic()
        sampler.start()
        metrics.start()
        load.start()
        # The load stops a little before the window closes, so no request meets the end;
        # a fault comes only while there is time left for the recovery and orders after it.
        end = t_created + seconds - 3
        try:
            while time.monotonic() < end:
                now = time.monotonic()
                if (next_fault is not None and now >= next_fault and load.accepted >= 300
                        and now < end - self.chaoslib.RECOVERY_TIMEOUT - 10):
                    fault = self.faults[len(self.injected) % len(self.faults)]
                    self.inject(fault, ctx, faults)
                    next_fault = time.monotonic() + self.cfg["fault_seconds"]
                    self.after_fault(ctx, load, faults[-1])
                    continue
                time.sleep(0.2)
            t_load = time.monotonic() - t_start
            try:
                load.stop(timeout=60)
            except AssertionError as e:
                ctx.expect.append(("load generator", False, str(e)[:300]))
        finally:
            load.stop_ev.set()
        # The window closes: the sale ENDS, as every sale does.
        status = self.wait_ended(a)
        timeout = int(self.conf.get("seckill.pre-reduce-timeout")) + 45
        quiet = chaoslib._quiesce(ctx, timeout)
        sampler.stop()
        metrics.stop()
        tries = load.snapshot()
        sc.expect_503 = any(f["scenario"].expect_503 for f in faults)
        sc.expect_errors = any(f["scenario"].expect_errors for f in faults)
        sc.allow = set().union(*(f["scenario"].allow for f in faults)) if faults else set()
        res, counts = chaoslib.check(ctx, tries, sampler, metrics, quiet)
        expect = chaoslib.expectations(ctx, tries) + ctx.expect
        expect.append(("ended", status == "ENDED", f"status {status} after its window closed"))
        archived = self.finish_sale_keys(a)
        failed = [f"{k}: {v[1]}" for k, v in res.items() if v[0] == "FAIL"]
        failed += [f"{name}: {detail}" for name, ok, detail in expect if not ok]
        row = {"n": n, "activity": a, "seconds": t_load, "stock": stock, "requests": len(tries),
               "rate_sent": len(tries) / t_load if t_load else 0, "counts": counts, "results": res,
               "expect": expect, "faults": [f["key"] for f in faults], "archived": archived,
               "notes": ctx.notes, "failed": failed}
        with self.lock:
            self.sales.append(row)
        if failed:
            self.broken.append(f"sale {n} (activity {a}): " + "; ".join(failed))
        else:
            log_path.unlink(missing_ok=True)  # a passed sale's request log is not worth its space
        log(f"sale {n} (activity {a}): {counts['accepted']} accepted, {counts['persisted']} persisted, "
            f"{len(tries) / t_load:.0f} requests/s; " + ", ".join(f"{k} {v[0]}" for k, v in res.items())
            + ("" if not failed else f"; FAILED: {failed[:3]}"))
        self.event(f"sale {n} done")
        return next_fault

    def inject(self, scenario, ctx, faults):
        log(f"fault {scenario.key}: {scenario.title}")
        ctx.t_recovered = None
        n_expect = len(ctx.expect)
        t = time.monotonic()
        try:
            scenario.fault(ctx)
            ok, error = True, ""
        except BaseException as e:  # noqa: BLE001 - recorded; the services are put back below
            ok, error = False, f"{type(e).__name__}: {str(e)[:300]}"
            ctx.expect.append(("fault ran", False, error))
        self.stack.ensure_up()
        for svc in (self.gateway, self.consumer):
            if not svc.running:
                svc.start()
        if ctx.t_recovered is None:
            ctx.fault_end()
        if scenario.post is not None:
            scenario.post(ctx)
        entry = {"key": scenario.key, "title": scenario.title, "scenario": scenario, "at": t - self.t0,
                 "sale": ctx.scenario.key, "seconds": ctx.t_recovered - t, "ran": ok,
                 "checks": ctx.expect[n_expect:], "recovered_after": None}
        faults.append(entry)
        with self.lock:
            self.injected.append(entry)
        self.event(f"fault {scenario.key}")

    def after_fault(self, ctx, load, entry):
        """The first order accepted after the recovery, awaited up to the chaos suite's bound
        (the sale's load goes on meanwhile)."""
        chaoslib = self.chaoslib
        deadline = time.monotonic() + chaoslib.RECOVERY_TIMEOUT
        while load.last_accept <= ctx.t_recovered and time.monotonic() < deadline:
            time.sleep(0.05)
        if load.last_accept > ctx.t_recovered:
            first = min(t.done for t in load.snapshot() if t.code == 200 and t.done > ctx.t_recovered)
            entry["recovered_after"] = first - ctx.t_recovered
            ctx.notes.append(f"{entry['key']}: first order accepted {entry['recovered_after']:.1f} s after recovery")

    def wait_ended(self, activity):
        """The sale's status once its window has closed: ENDED, or what it said last."""
        status = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = self.ctl("activity", "show", activity, "--json")
            try:
                status = json.loads(r.stdout.strip().splitlines()[-1]).get("status")
            except (ValueError, IndexError, AttributeError):
                status = None
            if status == "ENDED":
                break
            time.sleep(0.5)
        return status

    # -- the whole run
    def run(self):
        cfg = self.cfg
        if not self.rate:
            self.measure()
            self.rate = max(50.0, self.measured / 2)
        log(f"soak: {cfg['minutes']:g} min at {self.rate:.0f} orders/s, "
            + (f"a fault every {cfg['fault_seconds']:g} s" if cfg["fault_seconds"] > 0 else "no faults")
            + f", sales of {cfg['sale_seconds']:g} s")
        self.t0 = time.monotonic()
        sampler = threading.Thread(target=self.sampler, daemon=True)
        sampler.start()
        stop_at = self.t0 + cfg["minutes"] * 60
        next_fault = self.t0 + cfg["fault_seconds"] if cfg["fault_seconds"] > 0 and self.faults else None
        n = 0
        while time.monotonic() < stop_at - 20:
            n += 1
            seconds = min(cfg["sale_seconds"], max(20.0, stop_at - time.monotonic()))
            next_fault = self.run_sale(n, seconds, next_fault)
        self.stop_ev.set()
        sampler.join(cfg["sample_seconds"] + 30)
        self.sample()

    def stop(self):
        self.stop_ev.set()
        for svc in (self.gateway, self.consumer):
            try:
                svc.finish(timeout=int(self.conf.get("http.request-timeout-ms")) / 1000 + 20)
            except BaseException as e:  # noqa: BLE001 - part of the report
                self.broken.append(f"{svc.name} did not stop cleanly: {str(e)[:300]}")
        for svc in self.started_services:
            self.stack.sh(svc, "stop", check=False)

    # -- the report
    def verdict(self):
        """Flat: the last third's highest value at most 10 % (and a small absolute slack)
        above the first third's, per series."""
        series = [("gateway RSS", "gateway_rss", 4.0, "MB"), ("gateway fds", "gateway_fds", 4, ""),
                  ("consumer RSS", "consumer_rss", 4.0, "MB"), ("consumer fds", "consumer_fds", 4, ""),
                  ("Redis used_memory", "redis_mb", 4.0, "MB"), ("Kafka lag", "lag", 1000, "")]
        if len(self.samples) < 3:
            return "too short to judge (fewer than 3 samples)", []
        third = max(1, len(self.samples) // 3)
        first, last = self.samples[:third], self.samples[-third:]
        lines, grew = [], []
        for name, key, slack, unit in series:
            a = [s[key] for s in first if s[key] is not None]
            b = [s[key] for s in last if s[key] is not None]
            if not a or not b:
                lines.append(f"{name}: no samples")
                continue
            fa, fb = max(a), max(b)
            flat = fb <= fa * 1.10 + slack
            lines.append(f"{name}: first third max {fa:.1f}{unit}, last third max {fb:.1f}{unit}: "
                         f"{'flat' if flat else 'GREW'}")
            if not flat:
                grew.append(name)
        if not grew:
            return "flat: every series' last third stays within 10 % of its first third", lines
        why = "; ".join(grew)
        if "Redis used_memory" in grew and not self.archive:
            why += (" (a sale's Redis keys stay until `seckillctl activity archive` removes them; "
                    "this seckillctl has no such command)")
        return f"NOT flat: {why}", lines

    def write_report(self):
        def num(v, fmt="{:.1f}"):
            return "—" if v is None else fmt.format(v)

        cfg = self.cfg
        with self.lock:
            samples, sales, injected = list(self.samples), list(self.sales), list(self.injected)
        verdict, verdict_lines = self.verdict()
        out = [f"# Soak {self.out.name}", "",
               f"- configuration: `{self.base_conf}` then the chaos suite's timeouts "
               f"(`{self.conf.path.relative_to(ROOT) if self.conf.path.is_relative_to(ROOT) else self.conf.path}`)",
               f"- {cfg['minutes']:g} min planned; rate {self.rate:.0f} orders/s offered"
               + (f" (half of {self.measured:.0f}/s measured: wrk, 64 connections, {cfg['measure_seconds']} s)"
                  if self.measured else " (SOAK_RATE)"),
               (f"- a fault every {cfg['fault_seconds']:g} s, in turn from {', '.join(cfg['faults'])}"
                if cfg["fault_seconds"] > 0 else "- no faults (SOAK_FAULT_SECONDS=0)")
               + f"; sales of {cfg['sale_seconds']:g} s; a sample every {cfg['sample_seconds']:g} s",
               f"- `seckillctl activity archive`: {'called for every sale that ended' if self.archive else 'not available: every sale keeps its Redis keys'}",
               f"- each sale's coupon valid {cfg['coupon_seconds']:g} s after the sale, its user coupons archived "
               f"{cfg['coupon_seconds']:g} s after that (`consumer.coupon-archive-after-ms`)",
               f"- binaries: `{self.stacklib.BIN}`", "",
               f"**Verdict: {verdict}.**", ""]
        out += [f"- {line}" for line in verdict_lines]
        out += ["", "## Over time", "",
                "| time | gateway RSS MB | gateway fds | consumer RSS MB | consumer fds | Redis used_memory MB "
                "| Kafka lag | sales done | events |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for s in samples:
            m, sec = divmod(int(s["t"]), 60)
            out.append(f"| {m}:{sec:02d} | {num(s['gateway_rss'])} | {num(s['gateway_fds'], '{}')} | "
                       f"{num(s['consumer_rss'])} | {num(s['consumer_fds'], '{}')} | {num(s['redis_mb'])} | "
                       f"{num(s['lag'], '{:.0f}')} | {s['sales']} | {', '.join(s['events'])} |")
        cols = self.chaoslib.COLUMNS
        out += ["", "## Sales", "",
                "| sale | activity | s | requests/s | stock | accepted | persisted | 503 | fault | "
                + " | ".join(cols) + " | fault checks | archived |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|---|" + "---|" * len(cols) + "---|---|"]
        for r in sales:
            c = r["counts"]
            checks_ok = all(ok for _, ok, _ in r["expect"])
            out.append(f"| {r['n']} | {r['activity']} | {r['seconds']:.0f} | {r['rate_sent']:.0f} | {r['stock']} | "
                       f"{c['accepted']} | {c['persisted']} | {c['503']} | {', '.join(r['faults']) or '—'} | "
                       + " | ".join(r["results"].get(k, ("—",))[0] for k in cols)
                       + f" | {'PASS' if checks_ok else 'FAIL'} | "
                       + {None: "—", True: "yes", False: "FAILED"}[r["archived"]] + " |")
        out += ["", "## Faults", "", "| at | sale | fault | took s | first order after recovery | checks |",
                "|---:|---|---|---:|---:|---|"]
        for f in injected:
            m, sec = divmod(int(f["at"]), 60)
            checks = "; ".join(f"{name}: {'PASS' if ok else 'FAIL'} ({detail})" for name, ok, detail in f["checks"])
            out.append(f"| {m}:{sec:02d} | {f['sale']} | {f['key']} {f['title']} | {f['seconds']:.1f} | "
                       f"{num(f['recovered_after'], '{:.1f} s')} | {checks or '—'} |")
        out += ["", "## Details", ""]
        for r in sales:
            out.append(f"### sale {r['n']} (activity {r['activity']})")
            out += [f"- {k}: {v[0]} — {v[1]}" for k, v in r["results"].items()]
            out += [f"- fault/{name}: {'PASS' if ok else 'FAIL'} — {detail}" for name, ok, detail in r["expect"]]
            out.append(f"- answers: {json.dumps(r['counts']['kinds'], sort_keys=True)}; Redis statuses: "
                       f"{json.dumps(r['counts']['statuses'], sort_keys=True)}")
            out += [f"- note: {n}" for n in r["notes"]]
            out.append("")
        if self.broken:
            out += ["## Failures", ""] + [f"- {b}" for b in self.broken] + [""]
        text = "\n".join(out) + "\n"
        (self.out / "report.md").write_text(text, encoding="utf-8")
        shutil.copyfile(self.out / "report.md", OUT_BASE / "latest.md")
        serial = {"settings": cfg, "rate": self.rate, "measured": self.measured, "archive": self.archive,
                  "verdict": verdict, "samples": samples,
                  "sales": [{k: v for k, v in r.items()} for r in sales],
                  "faults": [{k: v for k, v in f.items() if k != "scenario"} for f in injected],
                  "failures": self.broken}
        (self.out / "report.json").write_text(json.dumps(serial, indent=1, default=str) + "\n", encoding="utf-8")


def slim_load_class(chaosload):
    """chaosload.OpenLoad keeping each request as a small object: a soak's sale sends
    hundreds of thousands of them."""

    class SlimReply:
        __slots__ = ("code", "status", "order_no")

        def __init__(self, code, status, order_no):
            self.code, self.status, self.order_no = code, status, order_no

        def get(self, key, default=None):
            return self.order_no if key == "orderNo" else default

        def __getitem__(self, key):
            if key != "orderNo":
                raise KeyError(key)
            return self.order_no

        def __repr__(self):
            return f"{self.code} {self.status} {self.order_no}"

    class Slim(chaosload.OpenLoad):
        def _parse(self, line):
            f = line.rstrip("\n").split("\t", 7)
            t = chaosload.Try(int(f[1]), repeat=f[2] == "1")
            t.sent, t.done = float(f[3]), float(f[4])
            if f[0] == "E":
                t.error = {"refused": ConnectionRefusedError, "timeout": TimeoutError}.get(
                    f[5], ConnectionResetError)(f[5])
                return t
            # What gatewayhttp.Reply asserts of every answer: JSON, a boolean success, and
            # a status and message on a failure.
            try:
                if f[6].split(";")[0].strip() != "application/json":
                    raise ValueError(f"Content-Type {f[6]!r}")
                body = json.loads(f[7] if len(f) > 7 else "")
                if not isinstance(body, dict) or not isinstance(body.get("success"), bool):
                    raise ValueError("no boolean success")
                if not body["success"] and ("status" not in body or "message" not in body):
                    raise ValueError("a failure without status and message")
                t.reply = SlimReply(int(f[5]), body.get("status"), body.get("orderNo"))
            except (ValueError, IndexError) as e:
                t.error = AssertionError(f"execute user {t.user}: {e}")
            return t

    return Slim


def main():
    parse = parse_args()
    cfg = settings()
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = Path(parse.out).resolve() if parse.out else OUT_BASE / stamp
    out.mkdir(parents=True, exist_ok=True)
    OUT_BASE.mkdir(parents=True, exist_ok=True)
    conf = parse.conf or os.environ.get("SOAK_CONF")
    conf = Path(conf).resolve() if conf else default_conf(out / "base.conf")
    if not conf.exists():
        sys.exit(f"soak: {conf} does not exist")
    soak = Soak(cfg, conf, out)
    rc = 0
    try:
        soak.start()
        soak.run()
    except BaseException as e:  # noqa: BLE001 - the report says what broke
        soak.broken.append(f"the run broke: {type(e).__name__}: {str(e)[:500]}")
        log(f"the run broke: {type(e).__name__}: {e}")
    finally:
        soak.stop_ev.set()
        if hasattr(soak, "gateway"):
            soak.stop()
        if hasattr(soak, "conf"):
            soak.write_report()
    if soak.broken:
        rc = 1
        log("FAILED: " + " | ".join(b[:200] for b in soak.broken[:5]))
    log(f"report: {(out / 'report.md').relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
