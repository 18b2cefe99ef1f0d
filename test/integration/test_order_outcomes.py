"""Every order outcome in MySQL (issue 15 item 3): an order that ends FAILED is recorded in
seckill_order_failed with its reason and time, by the consumers, from the failed stream the
failing script wrote in the same step; `seckillctl order show` prints one order's history."""

import json
import time

import pytest

from sales import execute_script, wait_for_consumer

from stack import poll_until
from gatewayhttp import Api

CONF_OVERRIDES = {"consumer.lifecycle-interval-ms": "200", "seckill.reaper-interval-ms": "200",
                  "seckill.pre-reduce-timeout": "20"}

ORDERNO_EPOCH_MS = 1704067200000


def failed_record(mysql, order_no):
    rows = mysql.rows(
        "SELECT user_id, activity_id, reason, "
        "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', accepted_at) DIV 1000, "
        "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', failed_at) DIV 1000 "
        f"FROM seckill_order_failed WHERE order_no = '{order_no}'")
    if not rows:
        return None
    user, activity, reason, accepted, failed = rows[0]
    return {"user": int(user), "activity": int(activity), "reason": reason,
            "accepted_ms": int(accepted), "failed_ms": int(failed)}


def order_show(ctl, order_no):
    return json.loads(ctl.run_ok("order", "show", order_no, "--json").stdout)


def test_expired_reservation_is_recorded_failed(ctl, gateway, consumer, api, redis, mysql, conf, ids):
    sale = ctl.create_sale(5, start="-50s", end="+30m")
    buyer = ids()
    real = api.execute(buyer, sale.activity_id)
    assert real.code == 200, repr(real)
    # A reservation of this gateway's node that never reached Kafka, 30 s old: the reaper
    # expires it at its next pass.
    node = (int(real["orderNo"].split("-")[0]) >> 12) & 1023
    accepted_ms = int(time.time() * 1000) - 30_000
    order_no = f"{((accepted_ms - ORDERNO_EPOCH_MS) << 22) | (node << 12) | 4095}-{sale.activity_id}"
    lost = ids()
    before = int(time.time() * 1000)
    execute_script(redis, conf, sale.activity_id, lost, order_no, accepted_ms)

    poll_until(lambda: failed_record(mysql, order_no) is not None, 30,
               "the expired order recorded FAILED in MySQL")
    rec = failed_record(mysql, order_no)
    assert rec["user"] == lost and rec["activity"] == sale.activity_id
    assert rec["reason"] == "EXPIRED"
    assert rec["accepted_ms"] == accepted_ms
    assert before <= rec["failed_ms"] <= int(time.time() * 1000)
    # Recorded means taken off the stream, and never into seckill_order.
    poll_until(lambda: redis("XLEN", conf.key("failed", sale.activity_id)) == 0, 10,
               "the failed stream drained")
    assert mysql.count(f"SELECT COUNT(*) FROM seckill_order WHERE order_no = '{order_no}'") == 0

    shown = order_show(ctl, order_no)
    assert shown["status"] == "FAILED" and shown["reason"] == "EXPIRED", shown
    assert shown["redisStatus"] == "FAILED" and shown["userId"] == lost
    events = [e["event"] for e in shown["history"]]
    assert events[0].startswith("accepted") and "FAILED: EXPIRED" in events, events

    # The real order: SUCCESS, with the user coupon it issued in its history.
    wait_for_consumer(mysql, redis, conf, sale.activity_id, expected_rows=1)
    shown = order_show(ctl, real["orderNo"])
    assert shown["status"] == "SUCCESS" and shown["redisStatus"] == "SUCCESS", shown
    events = [e["event"] for e in shown["history"]]
    assert events[0].startswith("accepted"), events
    assert "SUCCESS: persisted in MySQL" in events
    assert any(e.startswith("user coupon") and "issued" in e for e in events), events
    ctl.run_ok("verify", sale.activity_id)


def test_rolled_back_order_is_recorded_failed(ctl, consumer, gateway_with, redis, mysql, conf, ids):
    """A gateway whose topic does not exist (the broker creates none): every delivery fails,
    the order is rolled back, answered 503, and recorded ROLLED_BACK."""
    gw = gateway_with({"kafka.topic": f"test.seckill.missing.{ids()}",
                       "kafka.producer.message.timeout.ms": "1500"})
    sale = ctl.create_sale(3)
    user = ids()
    r = Api(gw.base_url).post("/seckill/execute", json={"userId": user, "activityId": sale.activity_id})
    assert r.code == 503, repr(r)

    def recorded():
        rows = mysql.rows("SELECT order_no, reason FROM seckill_order_failed "
                          f"WHERE user_id = {user} AND activity_id = {sale.activity_id}")
        return rows[0] if rows else None

    poll_until(lambda: recorded() is not None, 30, "the rolled-back order recorded FAILED")
    order_no, reason = recorded()
    assert reason == "ROLLED_BACK"
    assert redis("HGET", conf.key("orders", sale.activity_id), order_no) == "FAILED"
    assert int(redis("GET", conf.key("stock", sale.activity_id))) == 3


def test_failed_record_survives_a_consumer_that_took_it_and_died(ctl, redis, mysql, conf, ids, consumer):
    """An entry read by a consumer that died before recording it stays pending in the
    group; a live consumer claims it once it has been idle long enough."""
    sale = ctl.create_sale(2)
    key = conf.key("failed", sale.activity_id)
    order_no = f"{(int(time.time() * 1000) - ORDERNO_EPOCH_MS) << 22 | 4094}-{sale.activity_id}"
    user = ids()
    redis("XADD", key, "*", "o", order_no, "u", str(user), "r", "REJECTED",
          "t", str(int(time.time() * 1000)))
    # Taken by a consumer that is gone, 61 s ago (XCLAIM sets the idle time).
    redis("XGROUP", "CREATE", key, "seckill-outcomes", "0")
    entry = redis("XREADGROUP", "GROUP", "seckill-outcomes", "dead:1", "COUNT", "10",
                  "STREAMS", key, ">")[0][1][0][0]
    redis("XCLAIM", key, "seckill-outcomes", "dead:1", "0", entry, "IDLE", "61000")
    redis("SADD", "seckill:activities", str(sale.activity_id))
    poll_until(lambda: failed_record(mysql, order_no) is not None, 30,
               "the dead consumer's entry recorded by a live one")
    assert failed_record(mysql, order_no)["reason"] == "REJECTED"
    poll_until(lambda: redis("XLEN", key) == 0, 10, "the entry deleted")


def test_malformed_entry_is_dropped_not_retried(ctl, redis, mysql, conf, ids, consumer):
    sale = ctl.create_sale(2)
    key = conf.key("failed", sale.activity_id)
    good = f"{(int(time.time() * 1000) - ORDERNO_EPOCH_MS) << 22 | 4093}-{sale.activity_id}"
    redis("XADD", key, "*", "o", "not-an-order", "u", "1", "r", "EXPIRED", "t", "1")
    redis("XADD", key, "*", "o", good, "u", str(ids()), "r", "EXPIRED",
          "t", str(int(time.time() * 1000)))
    redis("SADD", "seckill:activities", str(sale.activity_id))
    poll_until(lambda: failed_record(mysql, good) is not None, 30, "the good entry recorded")
    poll_until(lambda: redis("XLEN", key) == 0, 10, "both entries gone")
    assert mysql.count("SELECT COUNT(*) FROM seckill_order_failed WHERE order_no = 'not-an-order'") == 0


@pytest.mark.parametrize("arg, rc, words", [
    ("abc", 2, "expected <digits>-<activityId>"),
    ("12-", 2, "expected"),
    ("999999-999999999", 1, "unknown to MySQL and Redis"),
])
def test_order_show_bad_input(ctl, arg, rc, words):
    r = ctl("order", "show", arg)
    assert r.rc == rc and words in r.stderr, repr(r)
