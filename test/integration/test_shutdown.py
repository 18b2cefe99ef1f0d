"""SIGTERM to the gateway in the middle of a sale: it stops accepting, answers every
request it took (the order, or 503 UNAVAILABLE), flushes Kafka and exits 0 within its
drain bound; every order it answered 200 reaches SUCCESS in MySQL."""

import http.client
import threading
import time

import pytest

from sales import order_rows, success_count, wait_for_consumer

from stack import Gateway, kafka_script, poll_until, write_conf
from gatewayhttp import Attempt, Reply, describe_failures, run_load
from stallproxy import StallProxy

STOCK = 100000
THREADS = 16

CONF_OVERRIDES = {
    # A short drain bound: request timeout + 2 s of drain + the 5 s Kafka flush.
    "http.request-timeout-ms": "4000",
    "kafka.producer.message.timeout.ms": "2000",
}


@pytest.fixture(scope="module")
def sale(ctl, gateway, consumer):
    return ctl.create_sale(STOCK)


def is_connection_error(e):
    """Refused, reset or closed before an answer: expected around a shutdown. Anything
    else (an answer that is not JSON, a timeout) is a failure."""
    return isinstance(e, (ConnectionError, http.client.RemoteDisconnected,
                          http.client.BadStatusLine)) and not isinstance(e, TimeoutError)


class BackgroundLoad:
    """run_load of `count` fresh users on one activity, in a thread until stopped."""

    def __init__(self, port, activity, count, threads):
        base = int(time.time() * 1000) % 10**12 * 1000
        self.attempts = [Attempt(base + i, activity) for i in range(1, count + 1)]
        self.stop_ev = threading.Event()
        self.result = {}
        self.thread = threading.Thread(
            target=lambda: self.result.setdefault("done", run_load(port, self.attempts, threads, stop=self.stop_ev)),
            daemon=True)
        self.thread.start()

    def stop(self):
        """Stops it; returns every attempt made."""
        self.stop_ev.set()
        self.thread.join(60)
        assert not self.thread.is_alive(), "the load did not stop"
        return self.result["done"]


def test_sigterm_drains(conf, gateway, consumer, sale, mysql, redis):
    a = sale.activity_id
    load = BackgroundLoad(conf.http_port, a, 50000, THREADS)

    users = conf.key("users", a)
    poll_until(lambda: redis("HLEN", users) >= 300, 60, "300 orders before the SIGTERM", interval=0.01)
    bound = int(conf.get("http.request-timeout-ms")) / 1000 + 2 + 5
    t0 = time.monotonic()
    gateway.terminate()
    rc = gateway.wait(bound + 10)
    elapsed = time.monotonic() - t0
    done = load.stop()
    assert rc is not None, f"the gateway did not exit within {bound + 10:.0f}s of SIGTERM"
    gateway.record_exit()
    assert rc == 0, f"exit status {rc}; log:\n{gateway.log_tail()}"
    assert elapsed <= bound, f"the gateway took {elapsed:.1f}s to drain, bound {bound}s"

    sent = [x for x in done if x.sent is not None]
    answered = [x for x in sent if x.reply is not None]
    dropped = [x for x in sent if x.error is not None and is_connection_error(x.error)]
    broken = [x for x in sent if x.error is not None and not is_connection_error(x.error)]
    ok = [x for x in answered if x.reply.code == 200]
    unavailable = [x for x in answered if x.reply.code == 503]
    print(f"\nexit after {elapsed:.2f}s; {len(sent)} sent: {len(ok)} accepted, "
          f"{len(unavailable)} 503, {len(dropped)} refused or dropped connections")
    assert not broken, describe_failures(broken)
    others = [x for x in answered if x.reply.code not in (200, 503)]
    assert not others, f"answers other than 200 and 503: {others[:5]}"
    for x in ok:
        assert x.reply["success"] is True and x.reply["status"] == "PROCESSING", repr(x)
    for x in unavailable:
        assert x.reply.status == "UNAVAILABLE", repr(x)
    assert len(ok) >= 300

    rows_count = wait_for_consumer(mysql, redis, conf, a, None, consumer, timeout=60)
    rows = order_rows(mysql, a)
    accepted = {x.reply["orderNo"]: x.user for x in ok}
    missing = set(accepted) - set(rows)
    assert not missing, f"{len(missing)} orders answered 200 are not in MySQL, e.g. {sorted(missing)[:5]}"
    assert all(rows[o] == u for o, u in accepted.items())
    # An order nobody was told about may only come from a request whose connection
    # dropped; a 503 promised that nothing was taken.
    extra = {o: u for o, u in rows.items() if o not in accepted}
    told_503 = {x.user for x in unavailable}
    assert not (set(extra.values()) & told_503), "an order was persisted for a user told 503"
    assert not extra, (f"{len(extra)} orders persisted whose request got no answer "
                       f"(reply lost in the shutdown), e.g. {list(extra.items())[:5]}")
    assert rows_count == success_count(redis, conf, a)
    stock_left = int(redis("GET", conf.key("stock", a)))
    assert stock_left + rows_count == STOCK, "I3: Redis stock + SUCCESS orders != initial stock"


# ---- SIGTERM while a backend does not answer ---------------------------------------------
#
# The drain ends at its deadline with Redis commands (or Kafka deliveries) still pending;
# whatever callbacks run after that must not touch a request evhttp already freed (issue
# 11 item 1). The gateway under test runs under ASan: a use-after-free aborts it with a
# report instead of exiting 0.

STALL_OVERRIDES = {
    "http.request-timeout-ms": "3000",
    "kafka.producer.message.timeout.ms": "1000",
    "redis.timeout-ms": "1000",
    "redis.reconnect-min-ms": "20",
    "redis.reconnect-max-ms": "50",
}
POLLERS = 24


class Pollers:
    """Clients that poll /seckill/result and /seckill/stock on keep-alive connections
    until stopped, as a sale's page does. Records every answer code and every error."""

    def __init__(self, port, activity_id, users, n=POLLERS):
        self.port, self.activity_id, self.users = port, activity_id, users
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.codes = {}
        self.errors = 0
        self.bad = []
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(n)]
        for t in self.threads:
            t.start()

    def _run(self, i):
        conn = None
        user = self.users[i % len(self.users)]
        paths = [f"/seckill/result?userId={user}&activityId={self.activity_id}",
                 f"/seckill/stock/{self.activity_id}"]
        n = 0
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                conn.request("GET", paths[n % 2])
                n += 1
                resp = conn.getresponse()
                body = resp.read().decode("utf-8", "replace")
                Reply(resp.status, resp.headers, body, paths[n % 2])
                with self.lock:
                    self.codes[resp.status] = self.codes.get(resp.status, 0) + 1
                if resp.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except AssertionError as e:
                with self.lock:
                    self.bad.append(str(e))
                break
            except (OSError, http.client.HTTPException):
                with self.lock:
                    self.errors += 1
                if conn is not None:
                    conn.close()
                conn = None
                time.sleep(0.01)  # the listener is closed: do not spin on refused connects
        if conn is not None:
            conn.close()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(60)
        assert not any(t.is_alive() for t in self.threads), "a poller did not stop"


def start_own_gateway(tmp_path, name, overrides):
    """A gateway of this test alone, stopped and checked by the test itself: its drain is
    meant to reach the deadline, which the fixtures' check counts as lost work."""
    d = tmp_path / name
    d.mkdir()
    g = Gateway(write_conf(d / "seckill.conf", overrides), d)
    return g.start()


def sigterm_and_wait(g, bound):
    t0 = time.monotonic()
    g.terminate()
    rc = g.wait(bound + 10)
    elapsed = time.monotonic() - t0
    if rc is None:
        g.proc.kill()
        g.proc.wait()
    assert rc is not None, f"the gateway did not exit within {bound + 10:.0f}s of SIGTERM:\n{g.log_tail()}"
    sanitizer = g.sanitizer_lines()
    assert not sanitizer, "sanitizer report at shutdown:\n" + "\n".join(sanitizer[:20]) + "\n" + g.log_tail(80)
    assert rc == 0, f"exit status {rc}; log:\n{g.log_tail()}"
    assert elapsed <= bound, f"the gateway took {elapsed:.1f}s to stop, bound {bound}s"
    return elapsed


def stop_bound(conf):
    """SIGTERM to exit: the drain (request timeout + max(2 s, redis timeout + 1 s)), the
    5 s Kafka flush, the settling of the last rollbacks and marks (redis timeout), and the
    answers' flush."""
    req = int(conf.get("http.request-timeout-ms")) / 1000
    red = int(conf.get("redis.timeout-ms")) / 1000
    return req + max(2, red + 1) + 5 + red + 1


def check_orders_accounted(mysql, redis, conf, activity_id, done, stock):
    """Every execute answered 200 reaches MySQL; no user told 503 holds an order; and the
    stock is all accounted for: Redis stock + reservations left + SUCCESS = initial."""
    ok = {x.reply["orderNo"]: x.user for x in done if x.reply is not None and x.reply.code == 200}
    told_503 = {x.user for x in done if x.reply is not None and x.reply.code == 503}
    poll_until(lambda: set(ok) <= set(order_rows(mysql, activity_id))
               and redis("SCARD", conf.key("queued", activity_id)) == 0
               and redis("SCARD", conf.key("claimed", activity_id)) == 0,
               90, f"the {len(ok)} accepted orders in MySQL")
    rows = order_rows(mysql, activity_id)
    assert all(rows[o] == u for o, u in ok.items())
    assert not (set(rows.values()) & told_503), "an order was persisted for a user told 503"
    resv = redis("ZCARD", conf.key("resv", activity_id))
    stock_left = int(redis("GET", conf.key("stock", activity_id)))
    assert stock_left + resv + success_count(redis, conf, activity_id) == stock, (
        f"I3: stock {stock_left} + reservations {resv} + SUCCESS != {stock}")
    return ok


def test_sigterm_with_redis_stalled(tmp_path, consumer, ctl, conf, mysql, redis):
    """Redis (behind a proxy) stops answering mid-sale while pollers keep asking and
    executes keep coming; SIGTERM then reaches the drain deadline with Redis commands
    pending. The gateway exits 0 without a sanitizer report and no accepted order is
    lost."""
    stock = 5000
    sale = ctl.create_sale(stock)
    a = sale.activity_id
    proxy = StallProxy(conf.get("redis.host"), conf.get("redis.port"))
    g = None
    pollers = None
    try:
        g = start_own_gateway(tmp_path, "stalled", dict(STALL_OVERRIDES, **{"redis.port": proxy.port}))
        load = BackgroundLoad(g.conf.http_port, a, 20000, 8)
        pollers = Pollers(g.conf.http_port, a, [x.user for x in load.attempts[:POLLERS]])
        poll_until(lambda: redis("HLEN", conf.key("users", a)) >= 200, 60, "200 orders before the stall",
                   interval=0.01)
        proxy.stall()
        # Commands pile up behind the stall; the pollers keep adding more.
        poll_until(lambda: "redis did not answer within" in g.log_text(since_start=True), 10,
                   "the gateway to notice the stalled Redis")
        elapsed = sigterm_and_wait(g, stop_bound(g.conf))
        pollers.finish()
        done = load.stop()
    finally:
        if pollers is not None:
            pollers.finish()
        if g is not None and g.running:
            g.proc.kill()
            g.proc.wait()
        proxy.close()
    print(f"\nexit after {elapsed:.2f}s; pollers: {pollers.codes}, {pollers.errors} connection errors")
    assert not pollers.bad, f"answers that are not the API's JSON: {pollers.bad[:3]}"
    log = g.log_text(since_start=True)
    assert "drain deadline passed" in log, "the drain went idle: the test did not reach the deadline"
    ok = check_orders_accounted(mysql, redis, conf, a, done, stock)
    assert len(ok) >= 100


def kafka(action):
    kafka_script(action)


def test_sigterm_during_kafka_outage(tmp_path, consumer, ctl, conf, mysql, redis):
    """The broker frozen (SIGSTOP) with orders on their way to it; SIGTERM then drains
    while their deliveries time out and roll back, and the final flush meets what is
    left. The gateway exits 0 without a sanitizer report; every order answered 200 is in
    MySQL, no user told 503 holds one, and the stock of the rest came back."""
    stock = 5000
    sale = ctl.create_sale(stock)
    a = sale.activity_id
    g = start_own_gateway(tmp_path, "kafka-outage", STALL_OVERRIDES)
    pollers = None
    frozen = False
    try:
        load = BackgroundLoad(g.conf.http_port, a, 20000, 8)
        pollers = Pollers(g.conf.http_port, a, [x.user for x in load.attempts[:POLLERS]])
        poll_until(lambda: redis("HLEN", conf.key("users", a)) >= 200, 60, "200 orders before the outage",
                   interval=0.01)
        kafka("freeze")
        frozen = True
        # The first deliveries fail; the orders of the other clients are still out.
        poll_until(lambda: "kafka delivery failed" in g.log_text(since_start=True), 10,
                   "deliveries failing on the frozen broker", interval=0.01)
        elapsed = sigterm_and_wait(g, stop_bound(g.conf))
        pollers.finish()
        done = load.stop()
    finally:
        if frozen:
            kafka("thaw")
        if pollers is not None:
            pollers.finish()
        if g.running:
            g.proc.kill()
            g.proc.wait()
    print(f"\nexit after {elapsed:.2f}s; pollers: {pollers.codes}, {pollers.errors} connection errors")
    assert not pollers.bad, f"answers that are not the API's JSON: {pollers.bad[:3]}"
    sent = [x for x in done if x.sent is not None]
    broken = [x for x in sent if x.error is not None and not is_connection_error(x.error)]
    assert not broken, describe_failures(broken)
    ok = check_orders_accounted(mysql, redis, conf, a, done, stock)
    assert len(ok) >= 100
    # Nothing was left for the reaper: every reservation was confirmed or rolled back.
    assert redis("ZCARD", conf.key("resv", a)) == 0, "reservations left behind by the shutdown"
