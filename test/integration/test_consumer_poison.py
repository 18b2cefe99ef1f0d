"""A poison batch: MySQL refuses some orders of a batch for good (a CHECK constraint), and
the consumer must not stall on them. The sale's MySQL stock is lowered below what Redis
sells, so `activity_sold_within_stock` refuses the orders past it; another sale's orders
and a coupon redemption ride in the same batch. The consumer isolates the refused orders,
dead-letters each with MySQL's reason, persists the rest, ends the refused orders FAILED
in Redis (their user free, their stock NOT back: MySQL says the sale is sold out, and a
unit returned would be sold and refused again — after a Redis failover it is the unit of
an order Redis forgot), commits and goes on: lag back to 0, nothing persisted twice, the
refusals counted on /metrics.

The module has its own topic, dead-letter topic and consumer group, so that a consumer
that stalls here (the code before the fix) leaves nothing behind for the other modules."""

import json
import re
import subprocess
import time

import pytest
import requests

import kafkaread
from mariadb import RowLock

from stack import ROOT, child_env, poll_until
from gatewayhttp import metrics_samples

TOPIC = "seckill.poison.orders"
DLQ = "seckill.poison.orders.dlq"
CONF_OVERRIDES = {
    "kafka.topic": TOPIC,
    "kafka.dead-letter-topic": DLQ,
    "consumer.group-id": "seckill-poison-consumer",
    # One batch gathers the whole burst below: the refused orders share it with the
    # orders and the redemption that must still go through.
    "consumer.batch-timeout-ms": "1500",
    "consumer.retry-max-ms": "1000",
}

POISONED_STOCK = 6   # what Redis sells
MYSQL_STOCK = 4      # what MySQL's CHECK lets through
HEALTHY_STOCK = 5
BOUND_S = 30         # the consumer before the fix never gets there: the test fails in time


# ---- the dead-letter topic ---------------------------------------------------------------

HEADERS = ("x-error", "x-source-topic", "x-source-partition", "x-source-offset")


def read_topic(brokers, topic):
    """Every message of `topic` as [(value, {header: value})]."""
    return [(r.value, r.headers) for r in kafkaread.read(brokers, topic, HEADERS)]


# ---- the consumer's /metrics -------------------------------------------------------------

def scrape(conf):
    r = requests.get(f"http://127.0.0.1:{conf.get('consumer.metrics-port')}/metrics", timeout=10)
    assert r.status_code == 200, r.text[:300]
    return metrics_samples(r.text)


REFUSED = "seckill_consumer_mysql_refused_total"
DEAD = "seckill_consumer_dead_letters_total"


# ---- the test ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def topics(conf):
    """This module's topic and dead-letter topic (kept, like the chaos suite's)."""
    p = subprocess.run(["bash", str(ROOT / "scripts" / "kafka.sh"), "create-topics"], cwd=ROOT,
                       env=dict(child_env(), CONF=str(conf.path)), capture_output=True,
                       text=True, timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr


def user_coupon_of(api, user):
    r = api.get("/coupons", params={"userId": user})
    assert r.code == 200, repr(r)
    coupons = r["coupons"]
    assert len(coupons) == 1, repr(r)
    return coupons[0]["userCouponId"]


class Poison:
    """One poisoned burst: a sentinel sale whose winner's coupon is redeemed inside the
    burst, a sale whose MySQL stock is below what Redis sells, and a healthy sale created
    after it (so its seckill_activity row has the higher id: the consumer raises counters
    in id order)."""

    def __init__(self, conf, ctl, mysql, redis, ids, consumer, api):
        self.conf, self.mysql, self.redis, self.ids, self.consumer, self.api = (
            conf, mysql, redis, ids, consumer, api)
        # The sentinel's order in MySQL also means the consumer holds its partitions.
        self.sentinel = ctl.create_sale(1)
        self.winner = ids()
        r = api.execute(self.winner, self.sentinel.activity_id)
        assert r.code == 200, repr(r)
        first = r["orderNo"]
        poll_until(lambda: api.order_status(first) == "SUCCESS", BOUND_S,
                   "the sentinel order to be persisted")
        self.user_coupon = user_coupon_of(api, self.winner)
        self.poisoned = ctl.create_sale(POISONED_STOCK)
        self.healthy = ctl.create_sale(HEALTHY_STOCK)
        # MySQL now holds less stock than Redis sells: the CHECK refuses the orders past it.
        mysql.rows(f"UPDATE seckill_activity SET stock = {MYSQL_STOCK} "
                   f"WHERE id = {self.poisoned.activity_id}")
        self.orders = {}   # order number -> (user, activity)
        self.before = None

    def send(self):
        self.before = scrape(self.conf)
        for _ in range(POISONED_STOCK):
            self.buy(self.poisoned.activity_id)
        r = self.api.post(f"/coupons/{self.user_coupon}/use",
                          data={"userId": self.winner, "orderAmount": "100.00",
                                "orderRef": f"POISON-{self.user_coupon}"})
        assert r.code == 200 and r["success"], repr(r)
        for _ in range(HEALTHY_STOCK):
            self.buy(self.healthy.activity_id)

    def buy(self, activity):
        u = self.ids()
        r = self.api.execute(u, activity)
        assert r.code == 200, repr(r)
        self.orders[r["orderNo"]] = (u, activity)

    def rows(self, sale):
        return {no: int(user) for no, user in self.mysql.rows(
            f"SELECT order_no, user_id FROM seckill_order WHERE activity_id = {sale.activity_id}")}

    def wait_settled(self):
        """The scrape once the consumer got past the burst: every order it can persist
        in MySQL, the redemption applied, the refusals counted, the lag 0."""
        def settled():
            s = scrape(self.conf)
            return (len(self.rows(self.healthy)) == HEALTHY_STOCK
                    and len(self.rows(self.poisoned)) == MYSQL_STOCK
                    and s["seckill_consumer_lag"] == 0
                    and s.get(REFUSED, 0) - self.before.get(REFUSED, 0) == POISONED_STOCK - MYSQL_STOCK
                    and self.mysql.scalar("SELECT status FROM user_coupon "
                                          f"WHERE id = {self.user_coupon}") == "USED"
                    and s)

        state = {}

        def progress():
            state["s"] = settled()
            return state["s"]

        try:
            poll_until(progress, BOUND_S, "the consumer to get past the refused orders")
        except pytest.fail.Exception:
            pytest.fail(f"the consumer stalled: {len(self.rows(self.healthy))}/{HEALTHY_STOCK} "
                        f"orders of the healthy sale and {len(self.rows(self.poisoned))}/"
                        f"{MYSQL_STOCK} of the poisoned one in MySQL after {BOUND_S}s; consumer "
                        f"log:\n{self.consumer.log_tail(20)}")
        return state["s"]

    def check(self, after):
        """What a user and an operator must find once the burst is through."""
        mysql, redis, conf = self.mysql, self.redis, self.conf
        healthy_rows, poisoned_rows = self.rows(self.healthy), self.rows(self.poisoned)
        # Nothing persisted twice; the counters say what the rows say.
        for sale, rows in ((self.healthy, healthy_rows), (self.poisoned, poisoned_rows)):
            assert all(self.orders[no] == (user, sale.activity_id) for no, user in rows.items())
            n = len(rows)
            assert mysql.scalar(f"SELECT sold_count FROM seckill_activity WHERE id = {sale.activity_id}") == str(n)
            assert mysql.scalar(f"SELECT issued_count FROM coupon WHERE id = {sale.coupon_id}") == str(n)
            assert mysql.count(f"SELECT COUNT(*) FROM user_coupon WHERE coupon_id = {sale.coupon_id}") == n
        assert mysql.scalar(f"SELECT used_count FROM coupon WHERE id = {self.sentinel.coupon_id}") == "1"

        # The refused orders: FAILED in Redis, their users free, their stock not back
        # (MySQL sold the sale out: the CHECK refused them).
        a = self.poisoned.activity_id
        refused = {no for no, (_, act) in self.orders.items() if act == a} - set(poisoned_rows)
        assert len(refused) == POISONED_STOCK - MYSQL_STOCK
        pairs = redis("HGETALL", conf.key("orders", a))
        statuses = dict(zip(pairs[::2], pairs[1::2]))
        assert {no: statuses[no] for no in refused} == {no: "FAILED" for no in refused}
        assert all(statuses[no] == "SUCCESS" for no in poisoned_rows)
        assert redis("SCARD", conf.key("claimed", a)) == 0
        assert redis("GET", conf.key("stock", a)) == "0"
        holders = redis("HGETALL", conf.key("users", a))
        assert set(holders[1::2]) == set(poisoned_rows)
        for no in refused:
            assert self.api.order_status(no) == "FAILED", no
        # ... and recorded FAILED in MySQL with why: their place is held by the rows MySQL
        # sold (the lifecycle pass drains the failed stream).
        def recorded():
            rows = mysql.rows("SELECT order_no, reason FROM seckill_order_failed "
                              f"WHERE activity_id = {a}")
            return dict(rows) if len(rows) >= len(refused) else None
        poll_until(recorded, 30, "the refused orders recorded in seckill_order_failed")
        assert recorded() == {no: "SUPERSEDED" for no in refused}

        # Each refused order once on the dead-letter topic, with MySQL's reason.
        dead = {}
        for value, headers in read_topic(conf.get("kafka.brokers"), DLQ):
            try:
                no = json.loads(value).get("orderNo")
            except ValueError:
                continue
            if no in self.orders:
                dead.setdefault(no, []).append(headers)
        assert set(dead) == refused, f"dead-lettered {sorted(dead)}, refused {sorted(refused)}"
        for no, letters in dead.items():
            assert len(letters) == 1, f"{no} dead-lettered {len(letters)} times"
            h = letters[0]
            assert "activity_sold_within_stock" in h["x-error"] and "4025" in h["x-error"], h
            assert h["x-source-topic"] == TOPIC, h
            assert int(h["x-source-offset"]) >= 0 and int(h["x-source-partition"]) >= 0, h

        # The metrics: the refusals counted, everything else persisted.
        def delta(series):
            return after.get(series, 0) - self.before.get(series, 0)

        assert delta(REFUSED) == POISONED_STOCK - MYSQL_STOCK
        assert delta(DEAD) == POISONED_STOCK - MYSQL_STOCK
        assert delta("seckill_consumer_orders_persisted_total") == HEALTHY_STOCK + MYSQL_STOCK
        assert delta("seckill_consumer_coupon_uses_persisted_total") == 1
        assert after["seckill_consumer_ready"] == 1
        log = self.consumer.log_text(since_start=True)
        for no in refused:
            assert sum(1 for line in log.splitlines() if no in line and "refused" in line) == 1, \
                f"{no}: not logged once as refused:\n{self.consumer.log_tail(30)}"
        return delta


@pytest.fixture
def poison(topics, conf, ctl, mysql, redis, ids, consumer, gateway, api):
    return Poison(conf, ctl, mysql, redis, ids, consumer, api)


def test_poison_orders_are_dead_lettered_and_the_rest_persisted(poison):
    poison.send()
    delta = poison.check(poison.wait_settled())
    # A refusal is not retried: the persist step never failed.
    assert delta('seckill_consumer_retries_total{step="persist",backend="mysql"}') == 0


def test_connection_lost_mid_split_retries_without_loss_or_doubling(poison, mysql):
    """The split is under way (the poisoned sale's halves committed, its offenders found)
    when the consumer's MySQL connection is killed: a transient error, so the batch goes
    back to the retry path and is written again from the start. The halves committed
    before are replayed, adding nothing; the offenders are found again and dead-lettered
    once."""
    healthy = poison.healthy.activity_id
    # The healthy sale's counter row is locked, so the split's half holding its orders
    # waits on it, after the poisoned sale's halves are done.
    lock = RowLock(mysql, f"SELECT id FROM seckill_activity WHERE id = {healthy}")
    try:
        poison.send()
        waiting = "SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() " \
                  f"AND INFO LIKE 'UPDATE seckill_activity SET sold_count%WHERE id = {healthy}'"
        victim = poll_until(lambda: len(poison.rows(poison.poisoned)) == MYSQL_STOCK
                            and mysql.scalar(waiting), BOUND_S,
                            "the split to wait on the locked row, its poisoned halves committed")
        mysql.rows(f"KILL CONNECTION {victim}")
    finally:
        lock.release()
    delta = poison.check(poison.wait_settled())
    assert delta('seckill_consumer_retries_total{step="persist",backend="mysql"}') >= 1
    log = poison.consumer.log_text(since_start=True)
    assert "persist failed" in log and "retrying" in log
    # The lost connection did cut a split: the refused batch held the healthy orders too.
    splits = [int(n) for n in re.findall(r"refused part of a batch of (\d+) orders", log)]
    assert splits and max(splits) >= POISONED_STOCK + HEALTHY_STOCK, splits
