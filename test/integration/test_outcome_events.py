"""Outcome events (docs/events.md): every final outcome the consumer records in MySQL (an
order SUCCESS, an order FAILED with its reason, a coupon used) is published to
kafka.outcome-topic, keyed by user, under an id that names the outcome. Committed means
published, even when the consumer dies between its commit and the publish; published
again means the same event under the same id, which a reader drops.

The module runs its own consumers (never the module fixture's), since which consumer's
relay publishes is part of what is tested; the stack's outcome topic is shared with the
other modules, so every check looks only at this module's sales and users."""

import threading
import time

import pytest
import requests

from kafkaread import outcome_events
from gatewayhttp import Attempt, describe_failures, metrics_samples, run_load
from sales import wait_for_consumer
from stack import Consumer, free_port, poll_until, write_conf

ORDERNO_EPOCH_MS = 1704067200000
KILLED_SALE = 3000
CONF_OVERRIDES = {
    # Small batches, so that a kill lands between batches' commits and their events.
    "consumer.batch-size": "50",
    "consumer.retry-max-ms": "500",
    "kafka.consumer.session.timeout.ms": "6000",
}


def of_sale(activity_id):
    return lambda ev: ev.get("activityId") == activity_id


def by_id(pairs):
    """{eventId: [event, ...]}: each event as often as it was published."""
    seen = {}
    for _, ev in pairs:
        seen.setdefault(ev["eventId"], []).append(ev)
    return seen


def outbox_rows(mysql, like):
    return mysql.count(f"SELECT COUNT(*) FROM outcome_outbox WHERE events LIKE '{like}'")


def scrape(conf):
    r = requests.get(f"http://127.0.0.1:{conf.get('consumer.metrics-port')}/metrics", timeout=10)
    assert r.status_code == 200, r.text[:300]
    return metrics_samples(r.text)


@pytest.fixture(scope="module")
def relay(conf, logdir):
    """The module's one consumer; tests stop and kill it as they need."""
    c = Consumer(conf, logdir)
    c.start()
    yield c
    c.finish()


def buy(api, users, activity_id):
    orders = {}
    for u in users:
        r = api.execute(u, activity_id)
        assert r.code == 200, repr(r)
        orders[u] = r["orderNo"]
    return orders


def fail_order(redis, conf, activity_id, user, reason="REJECTED"):
    """A FAILED outcome as a script writes it: an entry of the sale's failed stream, which
    the consumers record in MySQL."""
    now = int(time.time() * 1000)
    order_no = f"{(now - ORDERNO_EPOCH_MS) << 22 | 4090}-{activity_id}"
    redis("XADD", conf.key("failed", activity_id), "*", "o", order_no, "u", str(user), "r", reason,
          "t", str(now))
    redis("SADD", "seckill:activities", str(activity_id))
    return order_no, now


def test_each_outcome_is_published_with_its_fields(relay, ctl, api, gateway, mysql, redis, conf, ids):
    sale = ctl.create_sale(6)
    a = sale.activity_id
    users = [ids() for _ in range(6)]
    orders = buy(api, users, a)
    wait_for_consumer(mysql, redis, conf, a, expected_rows=6)
    loser = ids()
    failed_no, failed_ms = fail_order(redis, conf, a, loser)
    # A checkout redeems the first winner's coupon.
    winner = users[0]
    uc = int(mysql.scalar(f"SELECT id FROM user_coupon WHERE source_ref = '{orders[winner]}'"))
    poll_until(lambda: redis("HEXISTS", f"seckill:ucoupon:{{u{winner}}}", str(uc)) == 1, 20,
               "the coupon record in Redis")
    r = api.post(f"/coupons/{uc}/use", data={"userId": winner, "orderAmount": "120.00",
                                              "orderRef": f"CHK-{uc}"})
    assert r.code == 200, repr(r)

    def published():
        got = by_id(outcome_events(conf, lambda ev: ev.get("activityId") == a or ev.get("userCouponId") == uc))
        return got if len(got) == 8 else None

    got = poll_until(published, 30, "6 order.succeeded, 1 order.failed and 1 coupon.used events")
    rows = {r[0]: r for r in mysql.rows(
        "SELECT o.order_no, o.user_id, o.coupon_id, uc.id, "
        "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', o.accepted_at) DIV 1000 "
        f"FROM seckill_order o JOIN user_coupon uc ON uc.source_ref = o.order_no WHERE o.activity_id = {a}")}
    for user, order_no in orders.items():
        [ev] = got[f"order.succeeded:{order_no}"]
        _, uid, coupon, user_coupon, accepted = rows[order_no]
        assert ev == {"eventId": f"order.succeeded:{order_no}", "type": "order.succeeded", "at": ev["at"],
                      "orderNo": order_no, "userId": user, "activityId": a, "couponId": int(coupon),
                      "userCouponId": int(user_coupon), "acceptedAt": int(accepted)}, ev
        assert int(uid) == user and ev["at"] >= ev["acceptedAt"]
    [ev] = got[f"order.failed:{failed_no}"]
    assert ev == {"eventId": f"order.failed:{failed_no}", "type": "order.failed", "at": failed_ms,
                  "orderNo": failed_no, "userId": loser, "activityId": a, "reason": "REJECTED",
                  "acceptedAt": ev["acceptedAt"]}, ev
    assert mysql.scalar(f"SELECT reason FROM seckill_order_failed WHERE order_no = '{failed_no}'") == "REJECTED"
    [use] = [v[0] for k, v in got.items() if k.startswith("coupon.used:")]
    discount, payable, used_ms = mysql.rows(
        "SELECT discount, payable, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', used_at) DIV 1000 "
        f"FROM user_coupon WHERE id = {uc}")[0]
    assert use == {"eventId": f"coupon.used:{uc}:{used_ms}", "type": "coupon.used", "at": int(used_ms),
                   "userCouponId": uc, "userId": winner, "couponId": sale.coupon_id,
                   "orderRef": f"CHK-{uc}", "discount": round(float(discount) * 100),
                   "payable": round(float(payable) * 100)}, use
    # Keyed by user: a reader's partition holds a user's outcomes in order.
    keys = {ev["eventId"]: key for key, ev in outcome_events(conf, of_sale(a))}
    assert all(keys[f"order.succeeded:{o}"] == str(u) for u, o in orders.items()), keys
    # Published and so gone from the outbox; this consumer is the relay and counts them.
    poll_until(lambda: outbox_rows(mysql, f'%"activityId":{a},%') == 0, 10, "the outbox emptied")
    m = scrape(conf)
    assert m["seckill_consumer_outcome_relay"] == 1
    assert m["seckill_consumer_outcomes_published_total"] >= 8
    assert m["seckill_consumer_outcome_oldest_age_seconds"] == 0


def test_events_of_a_consumer_that_died_before_publishing_are_published_by_the_next(
        relay, ctl, api, gateway, mysql, redis, conf, ids, tmp_path):
    """The consumer commits outcomes it cannot publish (its outcome topic is missing: every
    delivery fails), then is killed: the events wait in the outbox, and the next consumer
    publishes every one of them."""
    relay.stop()
    d = tmp_path / "stuck"
    d.mkdir()
    stuck = Consumer(write_conf(d / "seckill.conf", dict(
        CONF_OVERRIDES, **{"kafka.outcome-topic": f"test.seckill.missing.{ids()}",
                           "kafka.producer.message.timeout.ms": "1000"})), d)
    stuck.start()
    try:
        sale = ctl.create_sale(40)
        a = sale.activity_id
        orders = buy(api, [ids() for _ in range(40)], a)
        wait_for_consumer(mysql, redis, conf, a, expected_rows=40)
        assert mysql.count("SELECT COALESCE(SUM(event_count), 0) FROM outcome_outbox "
                           f"WHERE events LIKE '%\"activityId\":{a},%'") == 40
        poll_until(lambda: "not published" in stuck.log_text(since_start=True), 20,
                   "the stuck consumer's relay failing to publish")
        stuck.kill9()
    finally:
        if stuck.running:
            stuck.kill9()
    assert not by_id(outcome_events(conf, of_sale(a))), "published through a topic that does not exist"

    relay.start()
    got = poll_until(lambda: (lambda g: g if len(g) == 40 else None)(by_id(outcome_events(conf, of_sale(a)))),
                     30, "the 40 committed outcomes published by the next consumer")
    assert set(got) == {f"order.succeeded:{o}" for o in orders.values()}
    poll_until(lambda: outbox_rows(mysql, f'%"activityId":{a},%') == 0, 10, "the outbox emptied")


def test_a_publish_not_followed_by_its_delete_repeats_the_same_events(
        relay, ctl, api, gateway, mysql, redis, conf, ids):
    """The window between Kafka's acknowledgement and the outbox delete: MySQL refuses the
    deletes (a trigger), so the relay publishes the same rows again and again, and is
    killed there. Once the deletes are allowed, a reader that drops ids it has seen sees
    every outcome exactly once, with the same content every time."""
    sale = ctl.create_sale(20)
    a = sale.activity_id
    mysql.rows("CREATE TRIGGER outcome_outbox_keep BEFORE DELETE ON outcome_outbox FOR EACH ROW "
               "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'outbox deletes refused by the test'")
    try:
        orders = buy(api, [ids() for _ in range(20)], a)
        wait_for_consumer(mysql, redis, conf, a, expected_rows=20)

        def repeated():
            got = by_id(outcome_events(conf, of_sale(a)))
            return got if len(got) == 20 and all(len(v) >= 2 for v in got.values()) else None

        poll_until(repeated, 30, "every event published at least twice while deletes fail")
        relay.kill9()
    finally:
        mysql.rows("DROP TRIGGER IF EXISTS outcome_outbox_keep")
    relay.start()
    poll_until(lambda: outbox_rows(mysql, f'%"activityId":{a},%') == 0, 30, "the outbox emptied")
    got = by_id(outcome_events(conf, of_sale(a)))
    assert set(got) == {f"order.succeeded:{o}" for o in orders.values()}
    for event_id, copies in got.items():
        assert len(copies) >= 2, f"{event_id}: the fault was not exercised"
        assert all(c == copies[0] for c in copies), f"{event_id}: copies differ: {copies}"


def test_consumers_killed_mid_sale_lose_no_outcome(relay, ctl, gateway, mysql, redis, conf, ids, tmp_path):
    """Two consumers, killed in turn while a sale's orders stream in: each SUCCESS row in
    MySQL is an event on the topic (at least once), and no event names an outcome that is
    not in MySQL."""
    d = tmp_path / "second"
    d.mkdir()
    second = Consumer(write_conf(d / "seckill.conf", dict(
        CONF_OVERRIDES, **{"consumer.metrics-port": str(free_port())})), d)
    second.start()
    try:
        sale = ctl.create_sale(KILLED_SALE)
        a = sale.activity_id
        attempts = [Attempt(ids(), a) for _ in range(KILLED_SALE)]
        result = {}
        load = threading.Thread(target=lambda: result.setdefault("done", run_load(conf.http_port, attempts, 8)),
                                daemon=True)
        load.start()
        count_sql = f"SELECT COUNT(*) FROM seckill_order WHERE activity_id = {a}"
        poll_until(lambda: mysql.count(count_sql) > 0, 60, "the first orders in MySQL", interval=0.02)
        kills = 0
        # While the rows are still being written: each kill cuts some batch short.
        while kills < 4 and mysql.count(count_sql) < KILLED_SALE:
            victim = (relay, second)[kills % 2]
            victim.kill9()
            kills += 1
            victim.start()
            load.join(0.3)
        load.join(120)
        assert not load.is_alive(), "the load did not finish within 120 s"
        done = result["done"]
        assert all(x.error is None and x.reply.code == 200 for x in done), describe_failures(done)
        assert kills >= 2, f"the sale was over after {kills} kill(s): the test proved little"
        wait_for_consumer(mysql, redis, conf, a, expected_rows=KILLED_SALE, timeout=120)
        poll_until(lambda: outbox_rows(mysql, f'%"activityId":{a},%') == 0, 60, "the outbox emptied")
        rows = {r[0] for r in mysql.rows(f"SELECT order_no FROM seckill_order WHERE activity_id = {a}")}
        got = by_id(outcome_events(conf, of_sale(a)))
        assert set(got) == {f"order.succeeded:{o}" for o in rows}
        print(f"\n{kills} kills; {sum(len(v) for v in got.values()) - len(got)} events published again")
    finally:
        second.finish()
