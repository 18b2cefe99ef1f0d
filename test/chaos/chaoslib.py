"""The chaos suite's machinery: one flash sale under a paced load, one fault injected into a
real service or binary while it runs, then quiescence and independent checks of I1-I6.

Reuses the integration suite's helpers (test/integration/conftest.py: the binaries as
Service objects, seckillctl, the mariadb CLI wrapper, the config writer), imported under
its own module name so that it never clashes with this directory's conftest, and those of
test/lib (RESP, configuration, HTTP). The load, the I6 sampler and the /metrics scraper
are in chaosload.py. The services (Redis, Kafka, MariaDB) are the stack's, driven through
scripts/{redis,kafka,mariadb}.sh with CONF naming the stack's configuration.

Every scenario:
  1. writes its own configuration (short timeouts, limits off, the chaos topic and group),
     starts an order-consumer and a seckill-server, creates a fresh coupon and activity;
  2. starts a paced load (threads with keep-alive connections, distinct users, a few
     repeats), an I6 sampler and a /metrics scraper;
  3. injects its fault once enough orders are accepted, recovers, waits for the first
     order accepted after recovery, keeps the load on for a few seconds, stops it;
  4. waits for quiescence (no live reservation, MySQL rows = Redis SUCCESS, stable);
  5. checks I1..I6 and `seckillctl verify` each on its own, plus what docs/design.md
     expects of that fault ("fault" column), and records one row of the results table.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from chaosload import Loads, Sampler, Scrapers
from resp import RedisError
import sales
import stack as stacklib


ROOT = stacklib.ROOT
BIN = stacklib.BIN
BASE_CONF = stacklib.BASE_CONF
OUT = Path(os.environ.get("SECKILL_CHAOS_OUT") or ROOT / "build" / "chaos")

# Short timeouts so that every fault plays out in seconds (docs/design.md, "Failure behaviour"),
# limits off (one client IP, many users), and a topic and consumer group of the chaos
# suite's own: a consumer of the stack (make up) never takes our partitions, and ours
# never replays anybody else's orders.
CHAOS_CONF = {
    "seckill.pre-reduce-timeout": "5",
    "http.request-timeout-ms": "4000",
    "redis.timeout-ms": "500",
    "redis.reconnect-max-ms": "1000",
    # librdkafka checks message timeouts about once a second: a delivery can fail up to
    # ~1 s after message.timeout.ms (measured 3.97 s for 3000). 2.5 s keeps the 503 of a
    # Kafka outage inside the 4 s request timeout.
    "kafka.producer.message.timeout.ms": "2500",
    "consumer.retry-max-ms": "1000",
    # No WAIT for replicas, whatever the stack's file says (conf/cluster.conf: 1): the
    # cluster scenarios set it themselves, with the request timeout it needs.
    "redis.wait-replicas": "0",
    "seckill.enable-rate-limit": "false",
    "seckill.enable-anti-brush": "false",
    "seckill.reaper-interval-ms": "500",
    # A killed gateway's reservations go back once its node lease lapsed and the other
    # reapers' grace passed (lease + reconnect-max + request timeout: 8 s here).
    "seckill.node-lease-ms": "3000",
    # Many small batches: a consumer kill lands between claim, commit and finalize.
    "consumer.batch-size": "50",
    # A killed consumer leaves the group when its session expires: the broker's minimum.
    "kafka.consumer.session.timeout.ms": "6000",
    "kafka.topic": "seckill.chaos.orders",
    "kafka.dead-letter-topic": "seckill.chaos.orders.dlq",
    "consumer.group-id": "seckill-chaos-consumer",
}

SETTLE = 2.0             # seconds after recovery before "after" answers are judged
RECOVERY_TIMEOUT = 30.0  # longest wait for the first order accepted after a fault


def extra_settings():
    """CHAOS_SET="key=value;key=value": settings applied last to every scenario's
    configuration, to rerun the suite with another value (not used by make chaos)."""
    out = {}
    for item in os.environ.get("CHAOS_SET", "").split(";"):
        if item.strip():
            k, _, v = item.partition("=")
            out[k.strip()] = v.strip()
    return out


def log(msg):
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- the stack's services ---------------------------------------------------------------


class Stack:
    """The backing services, through the project's scripts (pid files under the stack's
    stack.data-dir)."""

    def __init__(self, conf_path=BASE_CONF):
        self.env = stacklib.child_env()
        self.env["CONF"] = str(conf_path)
        self.data = stacklib.conf_of(conf_path).data_dir(ROOT)
        self.kafka_nodes = len(stacklib.conf_of(conf_path).get("kafka.brokers").split(","))
        # A Redis Cluster (redis.nodes) has a script of its own.
        self.redis_script = "redis-cluster" if stacklib.conf_of(conf_path).get("redis.nodes") else "redis"

    @staticmethod
    def kafka_pidfile(node):
        """Node 1 of scripts/kafka.sh keeps its files in kafka/, node N in kafka-N/."""
        return "kafka/kafka.pid" if node == 1 else f"kafka-{node}/kafka.pid"

    def sh(self, script, *args, timeout=180, check=True, conf=None):
        env = dict(self.env)
        if conf is not None:
            env["CONF"] = str(conf)
        p = subprocess.run(["bash", str(ROOT / "scripts" / f"{script}.sh"), *args], env=env,
                           capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        out = (p.stdout + p.stderr).strip()
        if check and p.returncode != 0:
            raise AssertionError(f"scripts/{script}.sh {' '.join(args)} failed ({p.returncode}):\n{out}")
        return p.returncode, out

    def running(self, script):
        return self.sh(script, "status", check=False)[0] == 0

    def frozen(self, pidfile):
        try:
            pid = int((self.data / pidfile).read_text().strip())
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (OSError, ValueError):
            return False
        return stat.rsplit(")", 1)[1].split()[0] == "T"

    def kill9(self, pidfile, timeout=10):
        """SIGKILL a service by its pid file and wait until it is gone (or a zombie)."""
        pid = int((self.data / pidfile).read_text().strip())
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                return pid
            if state == "Z":
                return pid
            time.sleep(0.02)
        raise AssertionError(f"pid {pid} ({pidfile}) still alive {timeout}s after SIGKILL")

    def ensure_up(self):
        """After a scenario, failed or not: every service runs, none is frozen."""
        if self.redis_script == "redis" and self.frozen("redis/redis.pid"):
            self.sh("redis", "thaw", check=False)
        for node in range(1, self.kafka_nodes + 1):
            if self.frozen(self.kafka_pidfile(node)):
                self.sh("kafka", "--node", str(node), "thaw", check=False)
        for script in (self.redis_script, "mariadb", "kafka"):
            if not self.running(script):
                log(f"{script} is down after the scenario: starting it")
                self.sh(script, "start")


def check_services():
    """The backing services answer and the binaries exist, or the whole suite stops with
    one clear message (the integration suite's check)."""
    return stacklib.connect_backends(stacklib.conf_of(BASE_CONF), "the chaos suite")


# ---- scenario -----------------------------------------------------------------------------


class Scenario:
    """One row of the table. `fault(ctx)` injects the fault and recovers from it; it may
    append ("name", ok, detail) to ctx.expect for what docs/design.md promises of that fault.
    `allow` names findings that the protocol's stated limits admit for this fault:
      'unanswered_persisted'  a request cut off without an answer whose order was persisted
                              (the gateway died after the order reached Kafka)."""

    def __init__(self, key, title, fault, stock=100000, rate=400, threads=32, warm=300,
                 after=3.0, overrides=None, allow=(), expect_503=False, expect_errors=False,
                 sellout=False, max_seconds=60, post=None, gateways=1, consumers=1, generator="python"):
        self.key, self.title, self.fault = key, title, fault
        # Several gateways each listen on a port of their own, the load split over them
        # (as behind a load balancer); several consumers share the group.
        self.gateways, self.consumers = gateways, consumers
        # "python": a thread per connection (chaosload.Load); "openloop": the C generator
        # (chaosload.OpenLoad), for rates Python cannot keep next to three brokers.
        self.generator = generator
        self.stock, self.rate, self.threads, self.warm = stock, rate, threads, warm
        self.after, self.overrides = after, dict(overrides or {})
        self.allow = set(allow)
        self.expect_503, self.expect_errors = expect_503, expect_errors
        self.sellout = sellout
        self.max_seconds = max_seconds
        self.post = post      # post(ctx): after quiescence, before the checks


def accepted(part, t0, t1=None):
    """Requests of one load part answered 200, sent from t0 on and, with t1, answered by t1
    (time.monotonic(), as Ctx.t_fault and t_recovered)."""
    return sum(1 for t in part.snapshot() if t.code == 200 and t.sent >= t0 and (t1 is None or t.done <= t1))


class Ctx:
    def __init__(self, scenario, conf, gateways, consumers, redis, mysql, ctl, stack, sale, load):
        self.scenario, self.conf = scenario, conf
        self.gateways, self.consumers = gateways, consumers
        self.gateway, self.consumer = gateways[0], consumers[0]
        self.redis, self.mysql, self.ctl, self.stack = redis, mysql, ctl, stack
        self.sale, self.load = sale, load
        self.a = sale.activity_id
        self.expect = []     # (name, ok, detail)
        self.notes = []
        self.t_fault = self.t_recovered = None
        # A fault that cuts clients off from their gateway (test/hosts/test_partitions.py):
        # a predicate of the tries whose answer could not reach the client; their client
        # timeouts are the fault's, not a hang. None: every client timeout is a hang.
        self.unanswerable = None
        self.post_checks = []    # callables a fault leaves for its scenario's post

    def key(self, kind):
        return self.conf.key(kind, self.a)

    def fault_start(self):
        self.t_fault = time.monotonic()

    def fault_end(self):
        self.t_recovered = time.monotonic()

    def live(self):
        return sales.live_reservations(self.redis, self.conf, self.a)


def _quiesce(ctx, timeout):
    """No live reservation (reserved, queued or claimed) and MySQL rows = Redis SUCCESS,
    twice in a row half a second apart. Returns (reached, seconds, last state)."""
    t0 = time.monotonic()
    stable = 0
    state = {}
    while True:
        try:
            state = {"live": ctx.live(),
                     "rows": ctx.mysql.count(f"SELECT COUNT(*) FROM seckill_order WHERE activity_id = {ctx.a}"),
                     "success": sales.success_count(ctx.redis, ctx.conf, ctx.a)}
            ok = state["live"] == 0 and state["rows"] == state["success"]
        except (AssertionError, OSError, RedisError) as e:
            state = {"error": str(e)}
            ok = False
        stable = stable + 1 if ok else 0
        if stable >= 2:
            return True, time.monotonic() - t0, state
        if time.monotonic() - t0 > timeout:
            return False, time.monotonic() - t0, state
        time.sleep(0.5)


def _hgetall(redis, key):
    flat = redis("HGETALL", key) or []
    return dict(zip(flat[0::2], flat[1::2]))


def check(ctx, tries, sampler, metrics, quiet):
    """I1..I6 and verify, each on its own; returns (results, counts).
    results: {name: (status, detail)} with status PASS, FAIL or n/a."""
    sc, a, conf, redis, mysql = ctx.scenario, ctx.a, ctx.conf, ctx.redis, ctx.mysql
    res = {}
    stock = sc.stock
    stock_left = int(redis("GET", ctx.key("stock")) or 0)
    resv = redis("ZCARD", ctx.key("resv"))
    queued = redis("SCARD", ctx.key("queued"))
    claimed = redis("SCARD", ctx.key("claimed"))
    users_h = _hgetall(redis, ctx.key("users"))
    orders_h = _hgetall(redis, ctx.key("orders"))
    returned = int(redis("HGET", ctx.key("activity"), "returned") or 0)
    statuses = {}
    for s in orders_h.values():
        statuses[s] = statuses.get(s, 0) + 1
    r_success = {o for o, s in orders_h.items() if s == "SUCCESS"}
    r_failed = {o for o, s in orders_h.items() if s == "FAILED"}

    rows = sales.order_rows(mysql, a)                     # order_no -> user
    n_rows, d_orders, d_users = (int(x) for x in mysql.rows(
        f"SELECT COUNT(*), COUNT(DISTINCT order_no), COUNT(DISTINCT user_id) "
        f"FROM seckill_order WHERE activity_id = {a}")[0])
    sold_count = mysql.count(f"SELECT sold_count FROM seckill_activity WHERE id = {a}")
    uc = mysql.rows(f"SELECT COUNT(u.id) FROM seckill_order o LEFT JOIN user_coupon u "
                    f"ON u.source_ref = o.order_no WHERE o.activity_id = {a} GROUP BY o.order_no")
    uc_bad = sum(1 for r in uc if r[0] != "1")

    # What the clients were told, per user.
    ok_orders = {}        # order_no -> user, from 200 answers
    told = {}             # user -> set of kinds
    dup_answers = 0
    for t in tries:
        told.setdefault(t.user, set()).add(t.kind())
        if t.code == 200:
            no = t.reply.get("orderNo")
            if no in ok_orders:
                dup_answers += 1
            ok_orders[no] = t.user
    ok_users = {}
    for no, u in ok_orders.items():
        ok_users.setdefault(u, []).append(no)

    # I1 no oversell
    i1 = n_rows <= stock and len(r_success) <= stock and stock_left >= 0 and sold_count <= stock
    res["I1"] = ("PASS" if i1 else "FAIL",
                 f"rows {n_rows}, Redis SUCCESS {len(r_success)}, sold_count {sold_count} <= stock {stock}; "
                 f"stock left {stock_left}")

    # I2 one per user: MySQL, the users hash, and the answers (no user told 200 twice
    # with two orders that both count).
    shared = len(users_h) - len(set(users_h.values()))
    twice = [u for u, nos in ok_users.items() if len(nos) > 1 and
             sum(1 for n in nos if orders_h.get(n) != "FAILED") > 1]
    i2 = n_rows == d_users and shared == 0 and not twice
    res["I2"] = ("PASS" if i2 else "FAIL",
                 f"rows {n_rows} = distinct users {d_users}; users hash: {shared} orders shared; "
                 f"users with two live accepted orders {len(twice)}" + (f" e.g. {twice[:3]}" if twice else ""))

    # I3 conservation
    total = stock_left + resv + queued + claimed + len(r_success) + returned
    res["I3"] = ("PASS" if total == stock else "FAIL",
                 f"stock {stock_left} + reserved {resv} + queued {queued} + claimed {claimed} + "
                 f"SUCCESS {len(r_success)}" + (f" + returned {returned}" if returned else "")
                 + f" = {total} {'==' if total == stock else '!='} {stock}")

    # I4 no order left behind; Redis and MySQL agree; answers honoured.
    stuck = [o for o, s in orders_h.items() if s not in ("SUCCESS", "FAILED")]
    ok_unknown = [o for o in ok_orders if o not in orders_h]
    ok_failed = sorted(o for o in ok_orders if orders_h.get(o) == "FAILED")
    row_not_success = [o for o in rows if orders_h.get(o) != "SUCCESS"]
    success_no_row = [o for o in r_success if o not in rows]
    unanswered_persisted, told503_persisted, unknown_persisted = [], [], []
    for o, u in rows.items():
        if o in ok_orders:
            continue
        kinds = told.get(u, set())
        if kinds & {"refused", "dropped", "timeout", "bad"}:
            unanswered_persisted.append(o)
        elif "503" in kinds:
            told503_persisted.append(o)
        else:
            unknown_persisted.append(o)
    problems = []
    if not quiet[0]:
        problems.append(f"no quiescence after {quiet[1]:.0f} s ({quiet[2]})")
    if stuck:
        problems.append(f"{len(stuck)} orders neither SUCCESS nor FAILED e.g. {stuck[:3]}")
    if ok_unknown:
        problems.append(f"{len(ok_unknown)} orders answered 200 unknown to Redis e.g. {ok_unknown[:3]}")
    if ok_failed:
        problems.append(f"{len(ok_failed)} orders answered 200 ended FAILED e.g. {ok_failed[:3]}")
    if row_not_success:
        problems.append(f"{len(row_not_success)} rows not SUCCESS in Redis e.g. {row_not_success[:3]}")
    if success_no_row:
        problems.append(f"{len(success_no_row)} SUCCESS without a row e.g. {success_no_row[:3]}")
    if sold_count != n_rows:
        problems.append(f"sold_count {sold_count} != rows {n_rows}")
    if told503_persisted:
        problems.append(f"{len(told503_persisted)} orders persisted for users told 503")
    if unknown_persisted:
        problems.append(f"{len(unknown_persisted)} orders persisted for users never accepted")
    if unanswered_persisted and "unanswered_persisted" not in sc.allow:
        problems.append(f"{len(unanswered_persisted)} orders persisted whose request got no answer")
    accepted_persisted = sum(1 for o in ok_orders if o in rows)
    detail = (f"quiescent after {quiet[1]:.1f} s; 200 -> SUCCESS {accepted_persisted}/{len(ok_orders)}, "
              f"200 -> FAILED {len(ok_failed)}; Redis SUCCESS = rows both ways"
              + (f"; unanswered -> persisted {len(unanswered_persisted)} (allowed: the order had reached Kafka)"
                 if unanswered_persisted and "unanswered_persisted" in sc.allow else ""))
    res["I4"] = ("FAIL" if problems else "PASS", "; ".join(problems) if problems else detail)

    # I5 idempotent
    i5 = n_rows == d_orders == d_users and uc_bad == 0 and dup_answers == 0
    res["I5"] = ("PASS" if i5 else "FAIL",
                 f"rows {n_rows} = distinct order_no {d_orders} = distinct users {d_users}; "
                 f"orders without exactly one user_coupon {uc_bad}; order numbers answered twice {dup_answers}")

    # I6 SUCCESS never before commit
    if sampler.samples == 0:
        res["I6"] = ("FAIL", f"no SUCCESS sampled ({sampler.unchecked} unchecked): the check saw nothing")
    else:
        ms = sorted(sampler.check_ms)
        p50 = ms[len(ms) // 2] if ms else 0
        res["I6"] = ("FAIL" if sampler.violations else "PASS",
                     f"{sampler.samples} SUCCESS sampled ({sampler.turning} seen turning from PROCESSING), "
                     f"{len(sampler.violations)} without a row"
                     + (f" e.g. {sampler.violations[:3]}" if sampler.violations else "")
                     + f"; row query {p50:.1f} ms (median)"
                     + (f"; {sampler.unchecked} unchecked (MySQL away)" if sampler.unchecked else ""))

    v = ctx.ctl("verify", a)
    res["verify"] = ("PASS" if v.rc == 0 else "FAIL",
                     "exit 0" if v.rc == 0 else f"exit {v.rc}: " + " | ".join(
                         line for line in v.stdout.splitlines() if line.startswith("FAIL")) + v.stderr.strip())

    kinds = {}
    for t in tries:
        k = t.kind()
        kinds[k] = kinds.get(k, 0) + 1
    # Retries of users whose first attempt got 503: accepted, or DUPLICATE because a
    # reservation made for them after all (its answer lost in a Redis stall) still holds.
    first = {t.user: t for t in tries if not t.repeat}
    retry_503 = {}
    for t in tries:
        if t.repeat and t.user in first and first[t.user].code == 503:
            k = t.reply.status if t.code == 409 else t.kind()
            retry_503[k] = retry_503.get(k, 0) + 1
    counts = {
        "requests": len(tries),
        "stock": stock,
        "accepted": kinds.get("200", 0),
        "persisted": n_rows,
        "failed": len(r_failed),
        "rolled_back": metrics.total("seckill_orders_rolled_back_total"),
        "expired": metrics.total("seckill_reservations_expired_total"),
        "header_timeouts": metrics.total("seckill_http_header_timeouts_total"),
        "409": kinds.get("409", 0),
        "503": kinds.get("503", 0),
        "conn_errors": kinds.get("refused", 0) + kinds.get("dropped", 0),
        "timeouts": kinds.get("timeout", 0),
        "bad": kinds.get("bad", 0),
        "ok_failed": len(ok_failed),
        "unanswered_persisted": len(unanswered_persisted),
        "told503_persisted": len(told503_persisted),
        "stock_left": stock_left,
        "statuses": statuses,
        "kinds": kinds,
        "retry_after_503": retry_503,
    }
    return res, counts


HELD = re.compile(r"rollback got no verdict from Redis; the answer to user (\S+) waits for one")


def held_users(ctx):
    """The users whose answer a gateway held for a rollback's verdict."""
    return {m.group(1) for g in ctx.gateways for m in HELD.finditer(g.log_text())}


def expectations(ctx, tries):
    """What every fault must keep (on top of the scenario's own expectations): no answer
    that is not JSON, no client timeout (a hang), only 200/409/503 answers, 409 only as
    OUT_OF_STOCK or DUPLICATE, 503 only as UNAVAILABLE; 503s and connection errors only
    where the fault explains them; orders accepted again after recovery."""
    sc = ctx.scenario
    out = []
    bad = [t for t in tries if t.kind() == "bad"]
    hung = [t for t in tries if t.kind() == "timeout"]
    cut_off = [t for t in hung if ctx.unanswerable is not None and ctx.unanswerable(t)]
    hung = [t for t in hung if t not in cut_off]
    odd = [t for t in tries if t.reply is not None and (
        t.code not in (200, 409, 503)
        or (t.code == 409 and t.reply.status not in ("OUT_OF_STOCK", "DUPLICATE"))
        or (t.code == 503 and t.reply.status != "UNAVAILABLE"))]
    out.append(("answers", not bad and not hung and not odd,
                f"{len(bad)} not JSON, {len(hung)} client timeouts, {len(odd)} unexpected"
                + (f"; {len(cut_off)} client timeouts of requests the fault cut off" if cut_off else "")
                + (f" e.g. {(bad + hung + odd)[:2]}" if bad or hung or odd else "")))
    # An answer may come after http.request-timeout-ms only when it waited for the verdict
    # of a rollback Redis had not answered (docs/protocol.md, "Request timeout"): the
    # gateway logs each such user once.
    held = held_users(ctx)
    late = [t for t in tries if t.reply is not None and t.latency > int(ctx.conf.get("http.request-timeout-ms")) / 1000]
    slow = [t for t in late if str(t.user) not in held]
    out.append(("within request timeout", not slow,
                f"slowest answer {max((t.latency for t in tries if t.reply is not None), default=0):.2f} s"
                + (f"; {len(late) - len(slow)} later, held for a rollback's verdict" if len(late) > len(slow) else "")
                + (f"; {len(slow)} slower than http.request-timeout-ms" if slow else "")))
    n503 = sum(1 for t in tries if t.code == 503)
    nerr = sum(1 for t in tries if t.kind() in ("refused", "dropped"))
    if not sc.expect_503 and n503:
        out.append(("no 503", False, f"{n503} answers 503 where the fault should not cause any"))
    if not sc.expect_errors and nerr:
        out.append(("no connection errors", False, f"{nerr} connection errors where the gateway stayed up"))
    # A failed delivery whose rollback finds no reservation: the reaper expired the order
    # while its delivery report was still pending. Had that delivery succeeded, the client
    # would have been told 200 for a FAILED order.
    late = sum(g.log_text().count("rollback found it already expired") for g in ctx.gateways)
    out.append(("no expiry before the delivery report", late == 0,
                f"{late} failed deliveries found their reservation already released"))
    if ctx.t_recovered is not None:
        after = [t for t in tries if t.sent >= ctx.t_recovered + SETTLE]
        ok_after = sum(1 for t in after if t.code == 200)
        out.append(("recovered", ok_after > 0 or sc.sellout,
                    f"{ok_after} accepted after recovery"))
    return out


class LocalPlant:
    """The gateways and consumers of a scenario: this suite starts its own on loopback, each
    on a configuration written for the scenario, and stops them after it (the clean stops
    are checks of the row). Another suite passes run() a plant of its own with the same
    members (test/hosts/partlib.py: the processes of the hosts topology)."""

    netns = None

    def __init__(self, sc, out):
        overrides = dict(CHAOS_CONF)
        overrides.update(sc.overrides)
        overrides.update(extra_settings())
        self.conf = stacklib.write_conf(out / "seckill.conf", overrides)
        # Each instance its own HTTP and metrics port; one of a kind logs into `out` itself.
        confs = [self.conf] + [stacklib.write_conf(out / f"seckill-{i + 1}.conf", overrides)
                               for i in range(1, max(sc.gateways, sc.consumers))]
        self.consumers = [stacklib.Consumer(confs[i], out if sc.consumers == 1 else out / f"consumer-{i + 1}")
                          for i in range(sc.consumers)]
        self.gateways = [stacklib.Gateway(confs[i], out if sc.gateways == 1 else out / f"gateway-{i + 1}")
                         for i in range(sc.gateways)]

    def targets(self):
        """(address, port) of each gateway, as the load reaches it."""
        return [("127.0.0.1", g.conf.http_port) for g in self.gateways]

    def start(self):
        for svc in self.consumers + self.gateways:
            svc.start()

    def finish(self):
        """(name, ok, detail) of each process: clean stops, exit 0 after SIGTERM, no
        sanitizer report, no work left undone."""
        out = []
        several = len(self.gateways) + len(self.consumers) > 2
        for svc in self.gateways + self.consumers:
            try:
                svc.finish(timeout=int(self.conf.get("http.request-timeout-ms")) / 1000 + 20)
                ok, detail = True, "exit 0"
            except BaseException as e:  # noqa: BLE001 - recorded in the table
                ok, detail = False, str(e)[:400]
            name = f"{svc.name} {svc.log.parent.name}" if several else svc.name
            out.append((f"{name} clean", ok, detail))
        return out


def run(sc, stack, redis, mysql, results, plant=None):
    """Runs one scenario and records its row in `results` (a list). Fails the test when
    any check fails. `plant`: a function of (sc, out) giving the gateways and consumers
    (LocalPlant by default)."""
    out = OUT / sc.key
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    plant = (plant or LocalPlant)(sc, out)
    conf, gateways, consumers = plant.conf, plant.gateways, plant.consumers
    targets = plant.targets()
    ctl = sales.Ctl(conf)
    row = {"key": sc.key, "title": sc.title, "results": {}, "counts": {}, "notes": [], "expect": []}
    results.append(row)
    load = sampler = metrics = None
    t_start = time.monotonic()
    try:
        plant.start()
        sale = ctl.create_sale(sc.stock)
        log(f"{sc.key}: activity {sale.activity_id}, stock {sc.stock}, gateway "
            + ", ".join(f"{h}:{p}" if plant.netns else f":{p}" for h, p in targets))
        sampler = Sampler(targets[0][1], conf, host=targets[0][0])
        metrics = Scrapers(gateways)
        user_base = (int(time.time() * 1000) % 10**9) * 1000
        load = Loads([p for _, p in targets], sale.activity_id, user_base, sc.rate,
                     sc.threads, max_requests=int(sc.rate * sc.max_seconds), on_accept=sampler.offer,
                     generator=sc.generator, bin_dir=BIN, out_dir=out,
                     hosts=[h for h, _ in targets] if plant.netns else None, netns=plant.netns)
        ctx = Ctx(sc, conf, gateways, consumers, redis, mysql, ctl, stack, sale, load)
        sampler.start()
        metrics.start()
        t_load_start = time.monotonic()
        load.start()
        stacklib.poll_until(lambda: load.accepted >= sc.warm or load.finished, 30,
                      f"{sc.warm} accepted orders before the fault")
        log(f"{sc.key}: {load.accepted} accepted; fault: {sc.title}")
        sc.fault(ctx)
        if ctx.t_recovered is None:
            ctx.fault_end()
        if not sc.sellout:
            t_rec = ctx.t_recovered
            deadline = time.monotonic() + RECOVERY_TIMEOUT
            while load.last_accept <= t_rec and time.monotonic() < deadline and not load.finished:
                time.sleep(0.05)
            if load.last_accept > t_rec:
                first = min(t.done for t in load.snapshot() if t.code == 200 and t.done > t_rec)
                ctx.notes.append(f"first order accepted {first - t_rec:.1f} s after recovery")
        time.sleep(sc.after)
        t_load = time.monotonic() - t_load_start
        load.stop()
        n_tries = len(load.tries)
        skipped = sum(s.get("skipped", 0) for s in load.summaries() if s)
        ctx.notes.append(f"load: {n_tries} requests in {t_load:.1f} s, {n_tries / t_load:.0f}/s sent "
                         f"(target {sc.rate:.0f}/s, {sc.generator})"
                         + (f"; {(n_tries + skipped) / t_load:.0f}/s offered, {skipped} of them skipped "
                            f"after waiting 1 s for a connection" if skipped else ""))
        log(f"{sc.key}: load stopped after {n_tries} requests; waiting for quiescence")
        timeout = int(conf.get("seckill.pre-reduce-timeout")) + 45
        quiet = _quiesce(ctx, timeout)
        if sc.post is not None:
            sc.post(ctx)
        sampler.stop()
        metrics.stop()
        tries = load.snapshot()
        res, counts = check(ctx, tries, sampler, metrics, quiet)
        row["results"], row["counts"] = res, counts
        row["expect"] = expectations(ctx, tries) + ctx.expect
        if sc.sellout:
            row["expect"].append(("sold out exactly", counts["persisted"] == sc.stock and counts["stock_left"] == 0,
                                  f"{counts['persisted']} rows of a stock of {sc.stock}, {counts['stock_left']} left"))
        row["notes"] = ctx.notes
    except BaseException as e:
        row["expect"].append(("scenario ran", False, f"{type(e).__name__}: {str(e)[:400]}"))
        raise
    finally:
        if load is not None:
            load.stop_ev.set()
        for th in (sampler, metrics):
            if th is not None:
                th.stop_ev.set()
        row["expect"] += plant.finish()
        stack.ensure_up()
        if load is not None:
            forget_sale(redis, conf, sale.activity_id, load.snapshot())
        row["seconds"] = time.monotonic() - t_start
        write_report(results)
    failed = [f"{k}: {v[1]}" for k, v in row["results"].items() if v[0] == "FAIL"]
    failed += [f"{name}: {detail}" for name, ok, detail in row["expect"] if not ok]
    log(f"{sc.key}: {'FAILED' if failed else 'passed'} in {row['seconds']:.0f} s; "
        + ", ".join(f"{k} {v[0]}" for k, v in row["results"].items()))
    if failed:
        pytest.fail(f"{sc.key} ({sc.title}):\n  " + "\n  ".join(failed), pytrace=False)


def forget_sale(redis, conf, activity, tries):
    """Once a scenario is judged and its processes are gone: the sale's per-order state in
    Redis and its buyers' coupons go. A scenario of the cluster suite sells up to 100,000
    orders, and left there they piled up run after run in the tests' cluster (300 MB a
    master after a dozen runs), which made every AOF rewrite, restart and resync of the
    next scenarios that much heavier. The activity itself and its MySQL rows stay."""
    keys = [conf.key(kind, activity) for kind in ("orders", "users", "failed", "resv", "queued", "claimed")]
    try:
        redis(*(["UNLINK"] + keys))
        redis.unlink(f"seckill:ucoupon:{{u{u}}}" for u in {t.user for t in tries})
    except (OSError, ConnectionError, RedisError) as e:
        log(f"cleaning up activity {activity} in Redis failed: {e}")


# ---- report ----------------------------------------------------------------------------


COLUMNS = ("I1", "I2", "I3", "I4", "I5", "I6", "verify")


def terminal_summary(terminalreporter, title, results):
    """The scenario x invariant table at the end of a pytest session, when any ran."""
    if not results:
        return
    tr = terminalreporter
    tr.section(f"{title}: scenario x invariant")
    tr.write_line(table(results))
    tr.write_line("")
    tr.write_line(f"details: {OUT / 'report.md'}")


def table(results):
    """The scenario x invariant table, in Markdown."""
    lines = ["| scenario | fault | " + " | ".join(COLUMNS) + " | stock | accepted | persisted | FAILED "
             "(rolled back / expired) | 503 | conn. errors | 200→FAILED | 503→SUCCESS |",
             "|---|---|" + "---|" * len(COLUMNS) + "---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in results:
        fault_ok = all(ok for _, ok, _ in row["expect"])
        cells = [row["results"].get(c, ("—", ""))[0] for c in COLUMNS]
        c = row["counts"]
        if c:
            nums = [str(c.get("stock", "")), str(c["accepted"]), str(c["persisted"]),
                    f"{c['failed']} ({c['rolled_back']} / {c['expired']})",
                    str(c["503"]), str(c["conn_errors"] + c["timeouts"]), str(c["ok_failed"]),
                    str(c["told503_persisted"])]
        else:
            nums = ["—"] * 8
        lines.append(f"| {row['key']} {row['title']} | {'PASS' if fault_ok else 'FAIL'} | "
                     + " | ".join(cells) + " | " + " | ".join(nums) + " |")
    return "\n".join(lines)


def details(results):
    out = []
    for row in results:
        out.append(f"### {row['key']} {row['title']} ({row.get('seconds', 0):.0f} s)")
        for name, ok, detail in row["expect"]:
            out.append(f"- fault/{name}: {'PASS' if ok else 'FAIL'} — {detail}")
        for k in COLUMNS:
            if k in row["results"]:
                st, detail = row["results"][k]
                out.append(f"- {k}: {st} — {detail}")
        c = row["counts"]
        if c:
            out.append(f"- answers: {json.dumps(c['kinds'], sort_keys=True)}; Redis statuses: "
                       f"{json.dumps(c['statuses'], sort_keys=True)}; stock left {c['stock_left']}"
                       + (f"; connections closed by the header timeout {c['header_timeouts']}"
                          if c.get("header_timeouts") else "")
                       + (f"; retries after a 503: {json.dumps(c['retry_after_503'], sort_keys=True)}"
                          if c.get("retry_after_503") else ""))
        for n in row["notes"]:
            out.append(f"- note: {n}")
        out.append("")
    return "\n".join(out)


def write_report(results):
    OUT.mkdir(parents=True, exist_ok=True)
    text = ("# Chaos run " + time.strftime("%Y-%m-%d %H:%M:%S") + f" (binaries: {BIN})\n\n"
            + table(results) + "\n\n" + details(results))
    (OUT / "report.md").write_text(text + "\n", encoding="utf-8")
    serial = [{k: v for k, v in r.items()} for r in results]
    (OUT / "report.json").write_text(json.dumps(serial, indent=1, default=str) + "\n", encoding="utf-8")
