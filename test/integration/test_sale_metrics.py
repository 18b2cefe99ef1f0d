"""The gateway's per-sale gauges (src/gateway/salestats.c, schema/lua/salestats.lua) show
the true state of a real sale: the units of its stock by state add up to the initial stock
(conservation, I3) and match Redis and MySQL; a reservation that never reached Kafka shows
its real, growing age, and goes when it is released; conservation broken by hand in Redis
turns the imbalance gauge at once, in both directions, and mending it turns it back."""

import time

import pytest

from sales import execute_script, wait_for_consumer

from stack import poll_until
from gatewayhttp import gateway_metrics
from luabody import lua_body

CONF_OVERRIDES = {"seckill.sale-stats-interval-ms": "100"}
STATES = ("left", "reserved", "queued", "claimed", "sold", "returned")
ORDERNO_EPOCH_MS = 1704067200000
# No gateway leases this node id, so our gateway leaves its reservations alone for the
# whole grace (reaper.h): the test releases it itself.
DEAD_NODE = 1023


def sale_view(port, activity_id):
    """{"stock", "imbalance", "oldest", and each state: value} of one sale on /metrics,
    or None while the page does not show it."""
    m = gateway_metrics(port)
    a = f'activity="{activity_id}"'
    if f"seckill_sale_stock{{{a}}}" not in m:
        return None
    view = {s: m[f'seckill_sale_units{{{a},state="{s}"}}'] for s in STATES}
    view["stock"] = m[f"seckill_sale_stock{{{a}}}"]
    view["imbalance"] = m[f"seckill_sale_imbalance{{{a}}}"]
    view["oldest"] = m[f"seckill_sale_oldest_reservation_seconds{{{a}}}"]
    return view


def wait_view(port, activity_id, what, predicate, timeout=20):
    state = {}

    def ok():
        state["view"] = sale_view(port, activity_id)
        return state["view"] is not None and predicate(state["view"])

    try:
        poll_until(ok, timeout, what)
    except pytest.fail.Exception:  # poll_until names only `what`
        pytest.fail(f"activity {activity_id}: {what}; last seen {state.get('view')}")
    return state["view"]


def test_a_sale_warmed_before_the_counter_shows_no_sold(ctl, gateway, consumer, api, redis, mysql, conf, ids):
    """No 'sold' counter (warmed by a version that kept none): the gauges leave out sold and
    the imbalance rather than show a count that misses every order before the upgrade, and
    finalizing an order does not start a counter."""
    sale = ctl.create_sale(5)
    redis("HDEL", conf.key("activity", sale.activity_id), "sold")
    assert api.execute(ids(), sale.activity_id).code == 200
    wait_for_consumer(mysql, redis, conf, sale.activity_id, expected_rows=1, consumer=consumer)
    port = gateway.conf.http_port

    def units_without_sold():
        m = gateway_metrics(port)
        a = f'activity="{sale.activity_id}"'
        return (m.get(f'seckill_sale_units{{{a},state="left"}}') == 4
                and f'seckill_sale_units{{{a},state="sold"}}' not in m
                and f"seckill_sale_imbalance{{{a}}}" not in m)

    poll_until(units_without_sold, 20, "left 4, no sold and no imbalance on /metrics")
    assert redis("HEXISTS", conf.key("activity", sale.activity_id), "sold") == 0


def release_order(redis, conf, activity_id, user, order_no):
    keys = [conf.key(k, activity_id) for k in ("stock", "users", "orders", "resv", "failed", "activity",
                                                "failedusers")]
    assert redis("EVAL", lua_body("release"), len(keys), *keys, "order", order_no, str(user)) == 1


def test_a_sale_shows_its_true_accounting(ctl, gateway, consumer, api, redis, mysql, conf, ids):
    sale = ctl.create_sale(30)
    buyers = [ids() for _ in range(12)]
    for user in buyers:
        r = api.execute(user, sale.activity_id)
        assert r.code == 200, repr(r)
    rows = wait_for_consumer(mysql, redis, conf, sale.activity_id, expected_rows=12, consumer=consumer)
    view = wait_view(gateway.conf.http_port, sale.activity_id, "12 sold and 18 left",
                     lambda v: v["sold"] == 12 and v["left"] == 18)
    assert rows == 12
    assert view == {"left": 18, "reserved": 0, "queued": 0, "claimed": 0, "sold": 12, "returned": 0,
                    "stock": 30, "imbalance": 0, "oldest": 0}
    assert int(redis("GET", conf.key("stock", sale.activity_id))) == 18


def test_a_cancelled_sale_counts_its_returned_stock(ctl, gateway, consumer, api, redis, mysql, conf, ids):
    sale = ctl.create_sale(10)
    for _ in range(3):
        assert api.execute(ids(), sale.activity_id).code == 200
    wait_for_consumer(mysql, redis, conf, sale.activity_id, expected_rows=3, consumer=consumer)
    ctl.run_ok("activity", "cancel", sale.activity_id)
    view = wait_view(gateway.conf.http_port, sale.activity_id, "7 returned by the cancel", lambda v: v["returned"] == 7)
    assert (view["left"], view["sold"], view["imbalance"]) == (0, 3, 0)


def test_a_reservation_left_unconfirmed_shows_its_age(ctl, gateway, redis, conf, ids):
    sale = ctl.create_sale(5, start="-1m", end="+30m")
    user = ids()
    accepted_ms = int(time.time() * 1000) - 3000
    seq_id = ((accepted_ms - ORDERNO_EPOCH_MS) << 22) | (DEAD_NODE << 12) | 1
    order_no = f"{seq_id}-{sale.activity_id}"
    execute_script(redis, conf, sale.activity_id, user, order_no, accepted_ms)

    view = wait_view(gateway.conf.http_port, sale.activity_id, "the reservation", lambda v: v["reserved"] == 1)
    age_now = time.time() - accepted_ms / 1000
    assert 3.0 <= view["oldest"] <= age_now + 0.01, (view, age_now)
    assert (view["left"], view["imbalance"]) == (4, 0)
    # The age is the reservation's, not the read's: it keeps growing between reads.
    later = wait_view(gateway.conf.http_port, sale.activity_id, "the age to pass 4 s", lambda v: v["oldest"] >= 4.0)
    assert later["oldest"] <= time.time() - accepted_ms / 1000 + 0.01

    release_order(redis, conf, sale.activity_id, user, order_no)
    view = wait_view(gateway.conf.http_port, sale.activity_id, "the reservation released",
                     lambda v: v["reserved"] == 0)
    assert (view["left"], view["oldest"], view["imbalance"]) == (5, 0, 0)


def test_conservation_broken_by_hand_turns_the_gauge(ctl, gateway, consumer, api, redis, mysql, conf, ids):
    sale = ctl.create_sale(8)
    orders = []
    for _ in range(2):
        r = api.execute(ids(), sale.activity_id)
        assert r.code == 200, repr(r)
        orders.append(r["orderNo"])
    wait_for_consumer(mysql, redis, conf, sale.activity_id, expected_rows=2, consumer=consumer)
    wait_view(gateway.conf.http_port, sale.activity_id, "a balanced sale", lambda v: v["sold"] == 2 and v["imbalance"] == 0)
    stock_key = conf.key("stock", sale.activity_id)
    activity_key = conf.key("activity", sale.activity_id)
    try:
        redis("INCRBY", stock_key, 3)  # stock out of thin air: an oversell waiting to happen
        wait_view(gateway.conf.http_port, sale.activity_id, "imbalance +3", lambda v: v["imbalance"] == 3)
        redis("DECRBY", stock_key, 3)
        wait_view(gateway.conf.http_port, sale.activity_id, "imbalance back to 0", lambda v: v["imbalance"] == 0)
        # A sold unit lost without its stock back (the gauge reads the 'sold' counter the
        # scripts keep, not the orders hash).
        redis("HINCRBY", activity_key, "sold", -1)
        view = wait_view(gateway.conf.http_port, sale.activity_id, "imbalance -1", lambda v: v["imbalance"] == -1)
        assert view["sold"] == 1
    finally:
        redis("HINCRBY", activity_key, "sold", 1)
    wait_view(gateway.conf.http_port, sale.activity_id, "imbalance mended", lambda v: v["imbalance"] == 0)
