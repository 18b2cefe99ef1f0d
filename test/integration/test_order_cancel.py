"""Cancelling a SUCCESS order (issue 27 item 2 c; docs/administration.md): `seckillctl order
cancel` and POST /admin/orders/{orderNo}/cancel take the order to CANCELLED, revoke the user
coupon it issued, and give its unit back: to the sale's stock while it runs, to the coupon
once it has ended. Redis first, then MySQL, each step idempotent: a repeat answers the same,
a cancel cut short is finished by running it again, a replay of the order from Kafka never
brings it back, and `verify` passes after each."""

import json
import threading

import pytest

from adminhttp import Admin
from gatewayhttp import Attempt, run_load
from kafkaproduce import produce
from kafkaread import outcome_events
from luabody import lua_body
from sales import wait_for_consumer
from stack import free_port, poll_until

TOKEN = "order-cancel-admin-token-of-32-chars-at-least"
CONF_OVERRIDES = {"admin.port": free_port(), "admin.token": TOKEN}


@pytest.fixture(scope="module")
def admin(admin_server):
    return Admin(f"http://127.0.0.1:{admin_server.port}", TOKEN)


def bought(api, mysql, redis, conf, sale, users):
    """{user: orderNo} of users who each bought one unit, SUCCESS everywhere."""
    orders = {}
    for u in users:
        r = api.execute(u, sale.activity_id)
        assert r.code == 200, repr(r)
        orders[u] = r["orderNo"]
    wait_for_consumer(mysql, redis, conf, sale.activity_id, expected_rows=len(users))
    for no in orders.values():
        poll_until(lambda: api.order_status(no) == "SUCCESS", 20, f"order {no} SUCCESS")
    return orders


def order_row(mysql, order_no):
    return mysql.rows(f"SELECT status, cancel_reason, cancelled_at IS NOT NULL FROM seckill_order "
                      f"WHERE order_no = '{order_no}'")[0]


def coupon_of(mysql, order_no):
    return mysql.rows(f"SELECT id, status FROM user_coupon WHERE source_ref = '{order_no}'")[0]


def counts(mysql, sale):
    sold = mysql.count(f"SELECT sold_count FROM seckill_activity WHERE id = {sale.activity_id}")
    issued = mysql.count(f"SELECT issued_count FROM coupon WHERE id = {sale.coupon_id}")
    return sold, issued


def verified(ctl, a):
    r = ctl("verify", a)
    assert r.rc == 0, repr(r)
    return r.stdout


def test_a_running_sale_gets_the_unit_back(ctl, api, gateway, consumer, mysql, redis, conf, ids):
    sale = ctl.create_sale(3)
    a = sale.activity_id
    users = [ids() for _ in range(3)]
    orders = bought(api, mysql, redis, conf, sale, users)
    assert api.execute(ids(), a)["status"] == "OUT_OF_STOCK"
    victim = orders[users[0]]
    uc_id, _ = coupon_of(mysql, victim)
    sold, issued = counts(mysql, sale)

    r = ctl("--json", "order", "cancel", victim, "--reason", 'fraud "ring" 7')
    assert r.rc == 0, repr(r)
    out = json.loads(r.stdout)
    assert out == {"orderNo": victim, "activityId": a, "userId": users[0], "status": "CANCELLED",
                   "cancelled": True, "userCouponId": int(uc_id)}, out
    assert order_row(mysql, victim) == ["CANCELLED", 'fraud "ring" 7', "1"]
    assert coupon_of(mysql, victim) == [uc_id, "REVOKED"]
    assert counts(mysql, sale) == (sold - 1, issued - 1)
    assert redis("HGET", conf.key("orders", a), victim) == "CANCELLED"
    assert api.order_status(victim) == "CANCELLED"
    # The holder can no longer redeem it.
    r = api.post(f"/coupons/{uc_id}/use", json={"userId": users[0], "orderAmount": "100.00",
                                               "orderRef": "CHK-after-cancel"})
    assert r.code == 409 and r["status"] == "REVOKED", repr(r)
    verified(ctl, a)

    # The unit is on sale again; the cancelled user keeps their one order of the sale.
    assert api.execute(users[0], a)["status"] == "DUPLICATE"
    newcomer = ids()
    r = api.execute(newcomer, a)
    assert r.code == 200, repr(r)
    wait_for_consumer(mysql, redis, conf, a, expected_rows=4)
    assert counts(mysql, sale) == (sold, issued)
    out = verified(ctl, a)
    assert "3 <= stock 3 (and 1 cancelled)" in out, out

    # Again: the same answer, nothing changed.
    r = ctl("--json", "order", "cancel", victim)
    assert r.rc == 0 and json.loads(r.stdout)["cancelled"] is False, repr(r)
    assert counts(mysql, sale) == (sold, issued)
    shown = json.loads(ctl.run_ok("order", "show", victim, "--json").stdout)
    assert shown["status"] == "CANCELLED" and shown["redisStatus"] == "CANCELLED", shown
    assert any(e["event"] == 'CANCELLED by the shop: fraud "ring" 7' for e in shown["history"]), shown


def test_an_ended_sale_gives_the_unit_to_the_coupon(ctl, api, gateway, consumer, mysql, redis, conf, ids):
    sale = ctl.create_sale(3)
    a = sale.activity_id
    orders = bought(api, mysql, redis, conf, sale, [ids(), ids()])

    def remaining():
        return json.loads(ctl.run_ok("--json", "coupon", "show", sale.coupon_id).stdout)["remaining"]

    live = remaining()
    ctl.run_ok("activity", "update", a, "--end", "+1s")
    # Past its end and the allotment's grace: the unsold unit is back with the coupon.
    before = poll_until(lambda: (lambda n: n if n == live + 1 else None)(remaining()), 30,
                        "the ended sale's unsold unit back with the coupon")
    ctl.run_ok("order", "cancel", list(orders.values())[0])
    assert remaining() == before + 1
    assert api.execute(ids(), a)["status"] == "ENDED"
    verified(ctl, a)


def test_a_used_coupon_is_refused_and_nothing_changes(ctl, api, gateway, consumer, mysql, redis, conf, ids):
    sale = ctl.create_sale(1)
    user = ids()
    [order] = bought(api, mysql, redis, conf, sale, [user]).values()
    uc_id, _ = coupon_of(mysql, order)
    poll_until(lambda: redis("HEXISTS", f"seckill:ucoupon:{{u{user}}}", uc_id) == 1, 20, "the coupon record")
    r = api.post(f"/coupons/{uc_id}/use", json={"userId": user, "orderAmount": "100.00", "orderRef": "CHK-1"})
    assert r.code == 200, repr(r)
    poll_until(lambda: coupon_of(mysql, order)[1] == "USED", 20, "the use in MySQL")
    sold, issued = counts(mysql, sale)
    r = ctl("order", "cancel", order)
    assert r.rc == 1 and "refund it first" in r.stderr, repr(r)
    assert order_row(mysql, order)[0] == "SUCCESS"
    assert redis("HGET", conf.key("orders", sale.activity_id), order) == "SUCCESS"
    assert counts(mysql, sale) == (sold, issued)
    verified(ctl, sale.activity_id)


def test_bad_and_unknown_orders(ctl, gateway):
    r = ctl("order", "cancel", "not-an-order")
    assert r.rc == 2, repr(r)
    r = ctl("order", "cancel", "123456789-999999")
    assert r.rc == 1 and "no row in MySQL" in r.stderr, repr(r)


def test_over_the_admin_api_and_recorded(admin, ctl, api, gateway, consumer, mysql, redis, conf, ids):
    sale = ctl.create_sale(1)
    [order] = bought(api, mysql, redis, conf, sale, [ids()]).values()
    r = admin.post(f"/admin/orders/{order}/cancel", {"reason": "customer asked"})
    assert r.code == 200 and r["status"] == "CANCELLED" and r["cancelled"] is True, repr(r)
    r = admin.post(f"/admin/orders/{order}/cancel", {})
    assert r.code == 200 and r["cancelled"] is False, repr(r)
    r = admin.post("/admin/orders/123456789-999999/cancel", {})
    assert r.code == 404, repr(r)
    args = mysql.rows(f"SELECT args FROM admin_audit WHERE command = 'order cancel' AND args LIKE '%{order}%' "
                      "ORDER BY id")
    assert len(args) == 2 and "customer asked" in args[0][0], args


def test_a_replay_of_the_order_never_brings_it_back(ctl, api, gateway, consumer, mysql, redis, conf, ids):
    sale = ctl.create_sale(2)
    a = sale.activity_id
    user = ids()
    [order] = bought(api, mysql, redis, conf, sale, [user]).values()
    ctl.run_ok("order", "cancel", order)
    sold, issued = counts(mysql, sale)
    # The order.created event again, as a redelivery would bring it.
    produce(conf.get("kafka.brokers"), conf.get("kafka.topic"), [json.dumps(
        {"orderNo": order, "userId": user, "activityId": a, "couponId": sale.coupon_id,
         "createdAt": int(order.split("-")[0]) >> 22})])
    other = ids()
    assert api.execute(other, a).code == 200
    wait_for_consumer(mysql, redis, conf, a, expected_rows=2)   # the newcomer's row, after the replay's
    assert redis("HGET", conf.key("orders", a), order) == "CANCELLED"
    assert order_row(mysql, order)[0] == "CANCELLED"
    assert counts(mysql, sale) == (sold + 1, issued + 1)
    verified(ctl, a)


def test_a_cancel_cut_short_is_finished_by_running_it_again(ctl, api, gateway, consumer, mysql, redis, conf,
                                                            ids):
    sale = ctl.create_sale(2)
    a = sale.activity_id
    user = ids()
    [order] = bought(api, mysql, redis, conf, sale, [user]).values()
    uc_id, _ = coupon_of(mysql, order)
    # What a run killed after its Redis steps leaves: both marks there, MySQL untouched.
    redis("EVAL", lua_body("revoke"), 1, f"seckill:ucoupon:{{u{user}}}", uc_id, "1")
    redis("EVAL", lua_body("ordercancel"), 3, conf.key("activity", a), conf.key("stock", a),
          conf.key("orders", a), order)
    r = ctl("verify", a)
    assert r.rc == 1 and f"{order} is CANCELLED, SUCCESS in MySQL" in r.stdout, repr(r)
    ctl.run_ok("order", "cancel", order)
    assert order_row(mysql, order)[0] == "CANCELLED"
    assert coupon_of(mysql, order) == [uc_id, "REVOKED"]
    assert int(redis("GET", conf.key("stock", a))) == 2
    verified(ctl, a)


def test_cancel_and_revoke_are_outcome_events(ctl, api, gateway, consumer, mysql, redis, conf, ids):
    sale = ctl.create_sale(1)
    user = ids()
    [order] = bought(api, mysql, redis, conf, sale, [user]).values()
    uc_id, _ = coupon_of(mysql, order)
    ctl.run_ok("order", "cancel", order, "--reason", "chargeback")

    def published():
        got = {ev["eventId"]: ev for _, ev in outcome_events(conf, lambda ev: ev.get("userId") == user)}
        return got if len(got) == 3 else None

    got = poll_until(published, 30, "order.succeeded, coupon.revoked and order.cancelled of the user")
    assert got[f"order.cancelled:{order}"] == {
        "eventId": f"order.cancelled:{order}", "type": "order.cancelled",
        "at": got[f"order.cancelled:{order}"]["at"], "orderNo": order, "userId": user,
        "activityId": sale.activity_id, "couponId": sale.coupon_id, "userCouponId": int(uc_id),
        "reason": "chargeback"}
    revoked = got[f"coupon.revoked:{uc_id}"]
    assert revoked["userCouponId"] == int(uc_id) and revoked["reason"] == "chargeback", revoked


def test_cancels_during_a_sale_with_the_consumer_killed(ctl, api, gateway, consumer, mysql, redis, conf, ids):
    """Orders cancelled while the sale's orders stream in and the consumer is killed once
    (its batches replayed, cancelled orders among them): every unit is sold exactly once in
    the end (the cancelled ones to other users), no cancelled order comes back, and verify
    passes."""
    stock, cancels = 300, 20
    sale = ctl.create_sale(stock)
    a = sale.activity_id
    attempts = [Attempt(ids(), a) for _ in range(stock)]
    result = {}
    load = threading.Thread(target=lambda: result.setdefault("done", run_load(conf.http_port, attempts, 4)),
                            daemon=True)
    load.start()
    cancelled = []
    killed = False
    while len(cancelled) < cancels:
        rows = mysql.rows(f"SELECT order_no FROM seckill_order WHERE activity_id = {a} AND status = 'SUCCESS' "
                          f"ORDER BY id LIMIT {cancels}")
        for (no,) in rows:
            if len(cancelled) == cancels:
                break
            if no in cancelled or redis("HGET", conf.key("orders", a), no) != "SUCCESS":
                continue
            ctl.run_ok("order", "cancel", no, "--reason", "load test")
            cancelled.append(no)
            if len(cancelled) == cancels // 2 and not killed:
                consumer.kill9()
                killed = True
                consumer.start()
    load.join(120)
    assert not load.is_alive(), "the load did not finish within 120 s"
    done = result["done"]
    assert all(x.error is None and x.reply.code in (200, 409) for x in done)
    accepted = sum(1 for x in done if x.reply.code == 200)
    # What is left (the cancelled units, and any a user found sold out before they came
    # back), bought by newcomers.
    for _ in range(stock + cancels - accepted):
        assert api.execute(ids(), a).code == 200
    assert api.execute(ids(), a)["status"] == "OUT_OF_STOCK"
    wait_for_consumer(mysql, redis, conf, a, expected_rows=stock + cancels, timeout=120)
    statuses = dict(mysql.rows(f"SELECT status, COUNT(*) FROM seckill_order WHERE activity_id = {a} "
                               "GROUP BY status"))
    assert statuses == {"SUCCESS": str(stock), "CANCELLED": str(cancels)}, statuses
    assert counts(mysql, sale)[0] == stock
    assert all(redis("HGET", conf.key("orders", a), no) == "CANCELLED" for no in cancelled)
    revoked = mysql.count(f"SELECT COUNT(*) FROM user_coupon WHERE coupon_id = {sale.coupon_id} "
                          "AND status = 'REVOKED'")
    assert revoked == cancels
    assert counts(mysql, sale)[1] == stock
    verified(ctl, a)
