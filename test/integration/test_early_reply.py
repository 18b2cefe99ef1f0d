"""seckill.order.reply-after-ack = false: the client is told 200 as soon as Redis holds its
reservation, before Kafka has the order. That 200 must never turn out a lie.

Before, a delivery that failed after such a 200 rolled the order back (FAILED), and the
reaper expired the reservations of a gateway that died before delivering them. Now a
promised order is never rolled back or expired: its gateway produces it again until Kafka
acknowledges it, and the reaper of any gateway hands stale reservations back to Kafka
(schema/lua/redeliver.lua). The broker is frozen (SIGSTOP) longer than the producer's
message timeout while clients buy; every order answered 200 must end SUCCESS, in Redis and
in MariaDB, once it thaws."""

import collections
import os
import signal
import threading
import time

from stack import ROOT, kafka_script, poll_until
from gatewayhttp import Api

EARLY = {
    "seckill.order.reply-after-ack": "false",
    "kafka.producer.message.timeout.ms": "1000",
    "redis.timeout-ms": "300",
    "redis.reconnect-max-ms": "500",
    "http.request-timeout-ms": "2500",
    "seckill.pre-reduce-timeout": "3",
    "seckill.node-lease-ms": "2000",
    "seckill.reaper-interval-ms": "200",
}
FREEZE_S = 6  # longer than the message timeout and the pre-reduce timeout


class Buyers:
    """Threads buying one order each for fresh users on the given gateways, until stopped;
    remembers every order answered 200, by gateway."""

    def __init__(self, apis, activity_id, ids, threads=8):
        self.accepted = collections.defaultdict(list)
        self.codes = collections.Counter()
        self.refused = []  # users answered 503
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i % len(apis), apis[i % len(apis)], activity_id, ids))
                         for i in range(threads)]
        for t in self._threads:
            t.start()

    def _run(self, which, api, activity_id, ids):
        while not self._stop.is_set():
            user = ids()
            r = api.execute(user, activity_id)
            with self._lock:
                self.codes[r.code] += 1
                if r.code == 200:
                    self.accepted[which].append(r.json["orderNo"])
                elif r.code == 503:
                    self.refused.append(user)

    def count(self, which=None):
        with self._lock:
            return sum(len(v) for k, v in self.accepted.items() if which is None or k == which)

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join()


def statuses(redis, conf, activity_id, order_nos):
    return collections.Counter(redis("HMGET", conf.key("orders", activity_id), *order_nos))


def assert_every_200_ends_success(redis, mysql, ctl, conf, activity_id, accepted):
    def rows():
        got = mysql.rows(f"SELECT order_no FROM seckill_order WHERE activity_id = {activity_id}")
        return {r[0] for r in got}

    poll_until(lambda: set(accepted) <= rows(), 90, f"all {len(accepted)} orders answered 200 in MariaDB")
    poll_until(lambda: statuses(redis, conf, activity_id, accepted) == {"SUCCESS": len(accepted)}, 30,
               "every order answered 200 SUCCESS in Redis")
    persisted = rows()
    assert persisted == set(accepted), f"{len(persisted - set(accepted))} rows nobody was told 200"
    r = ctl("verify", activity_id)
    assert r.rc == 0, repr(r)


def test_a_200_before_the_ack_survives_a_frozen_broker(gateway_with, consumer, ctl, redis, mysql, conf, ids):
    g = gateway_with(EARLY)
    sale = ctl.create_sale(stock=100000)
    buyers = Buyers([Api(g.base_url)], sale.activity_id, ids)
    frozen = False
    try:
        poll_until(lambda: buyers.count() >= 200, 30, "200 orders before the freeze")
        kafka_script("freeze")
        frozen = True
        before = buyers.count()
        poll_until(lambda: "kafka delivery failed" in g.log_text(since_start=True), 15,
                   "deliveries failing on the frozen broker", interval=0.05)
        poll_until(lambda: buyers.count() >= before + 200, 15, "orders answered 200 while the broker is frozen")
        # The fault's length, not a wait for a condition: past the pre-reduce timeout, so
        # that the reaper meets the reservations whose deliveries keep failing.
        time.sleep(FREEZE_S)
        kafka_script("thaw")
        frozen = False
        mark = buyers.count()
        poll_until(lambda: buyers.count() >= mark + 200, 30, "orders after the thaw")
    finally:
        buyers.stop()
        if frozen:
            kafka_script("thaw")
    assert set(buyers.codes) == {200}, buyers.codes
    accepted = buyers.accepted[0]
    assert_every_200_ends_success(redis, mysql, ctl, conf, sale.activity_id, accepted)
    log = g.log_text(since_start=True)
    assert "rolled back" not in log, "an order answered 200 was rolled back"
    assert "producing them again" in log, "the reaper never met a stale reservation: the freeze was too short"


def test_orders_of_a_gateway_killed_before_delivering_are_delivered_by_another(
        gateway_with, consumer, ctl, redis, mysql, conf, ids):
    doomed, survivor = gateway_with(EARLY), gateway_with(EARLY)
    sale = ctl.create_sale(stock=100000)
    kafka_script("freeze")
    try:
        buyers = Buyers([Api(doomed.base_url)], sale.activity_id, ids, threads=4)
        try:
            poll_until(lambda: buyers.count() >= 300, 30, "orders answered 200 by the doomed gateway")
        finally:
            buyers.stop()
        # Killed with its orders still in its producer's queue: only Redis knows them.
        doomed.kill9()
    finally:
        kafka_script("thaw")
    accepted = buyers.accepted[0]
    assert statuses(redis, conf, sale.activity_id, accepted)["PROCESSING"] > 0, "nothing was left undelivered"
    assert_every_200_ends_success(redis, mysql, ctl, conf, sale.activity_id, accepted)
    assert "producing them again" in survivor.log_text(since_start=True)
    assert "expired" not in survivor.log_text(since_start=True)


def test_a_503_while_redis_is_frozen_never_ends_success(gateway_with, consumer, ctl, redis, mysql, conf, base_conf,
                                                        ids):
    """Redis frozen longer than redis.timeout-ms and the pre-reduce timeout: the gateway
    drops its connection with scripts on it, which Redis runs when it thaws. Their
    reservations are already stale then, and a reaper that delivers stale reservations
    would sell them to clients told 503. The answers wait for release.lua 'forget'
    instead, which releases such a reservation or stops the script from making it."""
    g = gateway_with(EARLY)
    sale = ctl.create_sale(stock=100000)
    buyers = Buyers([Api(g.base_url)], sale.activity_id, ids)
    redis_pid = int((base_conf.data_dir(ROOT) / "redis" / "redis.pid").read_text().strip())
    try:
        poll_until(lambda: buyers.count() >= 200, 30, "200 orders before the freeze")
        os.kill(redis_pid, signal.SIGSTOP)
        try:
            time.sleep(FREEZE_S - 2)  # the fault's length: past the pre-reduce timeout
        finally:
            os.kill(redis_pid, signal.SIGCONT)
        mark = buyers.count()
        poll_until(lambda: buyers.count() >= mark + 200, 30, "orders after the thaw")
    finally:
        buyers.stop()
    assert buyers.refused, f"no request was refused: the freeze did not reach a script (answers {dict(buyers.codes)})"
    accepted = buyers.accepted[0]
    assert_every_200_ends_success(redis, mysql, ctl, conf, sale.activity_id, accepted)
    poll_until(lambda: redis("ZCARD", conf.key("resv", sale.activity_id)) == 0, 30, "no reservation left")
    users = conf.key("users", sale.activity_id)
    orders = conf.key("orders", sale.activity_id)
    sold = []
    for user in buyers.refused:
        order_no = redis("HGET", users, str(user))
        if order_no and redis("HGET", orders, order_no) != "FAILED":
            sold.append((user, order_no))
    assert not sold, f"{len(sold)} of {len(buyers.refused)} users told 503 hold an order: {sold[:3]}"
    assert "waits for one" in g.log_text(since_start=True), "no answer waited for Redis to settle its order"
