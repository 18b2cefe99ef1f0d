"""The HTTP API one request at a time: an order from accept to SUCCESS in MySQL, the read
endpoints, and every kind of bad input answered with a JSON error and no side effect."""

import re
import time

import pytest
import requests

from sales import order_rows

from stack import poll_until
from gatewayhttp import gateway_metrics

STOCK = 10
ACCEPTED = "seckill_orders_accepted_total"
# The gateway's counters (include/gateway/metrics.h).
COUNTERS = (ACCEPTED, "seckill_orders_rolled_back_total", "seckill_reservations_expired_total",
            "seckill_kafka_delivery_failures_total", "seckill_redis_timeouts_total",
            "seckill_local_answers_total", "seckill_coupons_redeemed_total",
            "seckill_http_accept_pauses_total")


@pytest.fixture(scope="module")
def sale(ctl, gateway, consumer):
    return ctl.create_sale(STOCK)


@pytest.fixture(scope="module")
def user_base():
    # Distinct users per run, so a rerun against the same services is a fresh sale.
    return int(time.time() * 1000) % 10**12 * 1000


def test_health(api):
    r = api.get("/healthz")
    assert r.code == 200, repr(r)
    assert r["success"] is True
    assert r["redis"] == "up" and r["kafka"] == "up", repr(r)


def test_metrics(gateway):
    r = requests.get(gateway.base_url + "/metrics", timeout=30)
    assert r.status_code == 200, r.text[:300]
    assert r.headers.get("Content-Type", "").startswith("text/plain"), r.headers
    samples = [line for line in r.text.splitlines() if line and not line.startswith("#")]
    for line in samples:
        name, _, value = line.rpartition(" ")
        assert name, line
        float(value)  # a sample ends in a number (NaN and +Inf included)
    names = {line.rpartition(" ")[0] for line in samples}
    missing = [c for c in COUNTERS if c not in names]
    assert not missing, f"counters missing from /metrics: {missing}"


def test_order_from_accept_to_success(api, sale, mysql, redis, conf, consumer, user_base):
    a = sale.activity_id
    user = user_base + 1
    assert api.stock(a) == STOCK
    accepted = gateway_metrics(conf.http_port)[ACCEPTED]

    r = api.execute(user, a)
    assert r.code == 200, repr(r)
    assert r["success"] is True and r["status"] == "PROCESSING", repr(r)
    order_no = r["orderNo"]
    assert re.fullmatch(rf"[1-9][0-9]*-{a}", order_no), repr(r)
    assert gateway_metrics(conf.http_port)[ACCEPTED] == accepted + 1

    poll_until(lambda: api.order_status(order_no) == "SUCCESS", 20, f"order {order_no} to be SUCCESS")

    res = api.get("/seckill/result", params={"userId": user, "activityId": a})
    assert res.code == 200, repr(res)
    assert res["orderNo"] == order_no and res["status"] == "SUCCESS", repr(res)

    # I6: SUCCESS is shown only once the row is committed.
    rows = mysql.rows(f"SELECT user_id, activity_id, coupon_id, status FROM seckill_order "
                      f"WHERE order_no = '{order_no}'")
    assert rows == [[str(user), str(a), str(sale.coupon_id), "SUCCESS"]], rows
    coupons = mysql.rows(f"SELECT user_id, coupon_id, status FROM user_coupon "
                         f"WHERE source_ref = '{order_no}'")
    assert coupons == [[str(user), str(sale.coupon_id), "UNUSED"]], coupons

    assert api.stock(a) == STOCK - 1

    act = api.get(f"/seckill/activities/{a}")
    assert act.code == 200, repr(act)
    assert act["name"] == "t seckill", repr(act)   # the coupon's name: create_sale names none
    assert act["couponId"] == sale.coupon_id
    assert act["stock"] == STOCK
    assert act["stockLeft"] == STOCK - 1
    assert act["status"] == "ACTIVE"
    assert act["startTime"] and act["endTime"] and act["startTime"] < act["endTime"], repr(act)

    # A second try of the same user is refused with the order it already holds.
    again = api.execute(user, a)
    assert again.code == 409 and again.status == "DUPLICATE", repr(again)
    assert again["orderNo"] == order_no
    assert api.stock(a) == STOCK - 1
    assert gateway_metrics(conf.http_port)[ACCEPTED] == accepted + 1


def test_json_and_form_bodies(api, sale, mysql, redis, conf, consumer, user_base):
    a = sale.activity_id
    before = api.stock(a)
    accepted = gateway_metrics(conf.http_port)[ACCEPTED]
    j = api.post("/seckill/execute", json={"userId": user_base + 2, "activityId": a})
    assert j.code == 200 and j["status"] == "PROCESSING", repr(j)
    js = api.post("/seckill/execute", json={"userId": str(user_base + 3), "activityId": str(a)})
    assert js.code == 200 and js["status"] == "PROCESSING", repr(js)
    f = api.post("/seckill/execute", data={"userId": user_base + 4, "activityId": a})
    assert f.code == 200 and f["status"] == "PROCESSING", repr(f)
    assert api.stock(a) == before - 3
    assert gateway_metrics(conf.http_port)[ACCEPTED] == accepted + 3
    for r, user in ((j, user_base + 2), (js, user_base + 3), (f, user_base + 4)):
        res = api.get("/seckill/result", params={"userId": user, "activityId": a})
        assert res.code == 200 and res["orderNo"] == r["orderNo"], repr(res)
    for r in (j, js, f):
        order_no = r["orderNo"]
        poll_until(lambda: api.order_status(order_no) == "SUCCESS", 20, f"order {order_no} to be SUCCESS")
    rows = order_rows(mysql, a)
    assert rows.get(j["orderNo"]) == user_base + 2
    assert rows.get(js["orderNo"]) == user_base + 3
    assert rows.get(f["orderNo"]) == user_base + 4


BAD_EXECUTES = [
    ("missing userId", dict(params={"activityId": "{a}"})),
    ("missing activityId", dict(params={"userId": "7"})),
    ("userId=0", dict(params={"userId": "0", "activityId": "{a}"})),
    ("userId=-1", dict(params={"userId": "-1", "activityId": "{a}"})),
    ("userId=abc", dict(params={"userId": "abc", "activityId": "{a}"})),
    ("userId=1.5", dict(params={"userId": "1.5", "activityId": "{a}"})),
    ("userId too big", dict(params={"userId": "99999999999999999999", "activityId": "{a}"})),
    ("userId empty", dict(params={"userId": "", "activityId": "{a}"})),
    ("userId leading +", dict(params={"userId": "+5", "activityId": "{a}"})),
    ("activityId trailing junk", dict(params={"userId": "7", "activityId": "{a}x"})),
    ("activityId trailing space", dict(params={"userId": "7", "activityId": "{a} "})),
    ("malformed JSON", dict(data='{"userId": 7, "activityId": {a}', headers={"Content-Type": "application/json"})),
    ("JSON array", dict(data='[7, {a}]', headers={"Content-Type": "application/json"})),
    ("JSON userId bool", dict(data='{"userId": true, "activityId": {a}}', headers={"Content-Type": "application/json"})),
    ("JSON userId fraction", dict(data='{"userId": 7.5, "activityId": {a}}', headers={"Content-Type": "application/json"})),
    ("JSON userId negative", dict(data='{"userId": -7, "activityId": {a}}', headers={"Content-Type": "application/json"})),
    ("unsupported content type", dict(data='userId=7&activityId={a}', headers={"Content-Type": "text/plain"})),
    ("body without content type", dict(data='userId=7&activityId={a}', headers={"Content-Type": ""})),
    ("query and body disagree", dict(params={"userId": "7", "activityId": "{a}"},
                                     data='userId=8&activityId={a}',
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})),
]


def _fill(value, a):
    if isinstance(value, str):
        return value.replace("{a}", str(a))
    if isinstance(value, dict):
        return {k: _fill(v, a) for k, v in value.items()}
    return value


@pytest.mark.parametrize("case", BAD_EXECUTES, ids=[c[0] for c in BAD_EXECUTES])
def test_bad_execute_is_400(api, sale, redis, conf, case):
    a = sale.activity_id
    _, kw = case
    kw = _fill(kw, a)
    if kw.get("headers", {}).get("Content-Type") == "":
        kw["headers"] = {"Content-Type": None}   # requests drops a None header
    users = redis("HLEN", conf.key("users", a))
    before = api.stock(a)
    r = api.post("/seckill/execute", **kw)
    assert r.code == 400, repr(r)
    assert r["success"] is False and r.status == "INVALID", repr(r)
    assert api.stock(a) == before
    assert redis("HLEN", conf.key("users", a)) == users


def test_too_large_body_is_413(api, sale):
    a = sale.activity_id
    before = api.stock(a)
    body = '{"userId": 7, "activityId": %d, "pad": "%s"}' % (a, "x" * 20000)
    r = api.post("/seckill/execute", data=body, headers={"Content-Type": "application/json"})
    assert r.code == 413 and r.status == "TOO_LARGE", repr(r)
    assert r["success"] is False
    assert api.stock(a) == before


def test_unknown_activity_is_404(api, sale):
    r = api.execute(7, 9_007_199_254_740_000)
    assert r.code == 404 and r.status == "NOT_FOUND", repr(r)
    r = api.get("/seckill/stock/9007199254740000")
    assert r.code == 404 and r.status == "NOT_FOUND", repr(r)
    r = api.get("/seckill/activities/9007199254740000")
    assert r.code == 404 and r.status == "NOT_FOUND", repr(r)


def test_wrong_method_is_405(api, sale):
    a = sale.activity_id
    before = api.stock(a)
    r = api.get("/seckill/execute", params={"userId": 7, "activityId": a})
    assert r.code == 405 and r.status == "METHOD_NOT_ALLOWED", repr(r)
    assert r["success"] is False
    assert r.headers.get("Allow") == "POST", r.headers
    r = api.post(f"/seckill/stock/{a}")
    assert r.code == 405 and r.status == "METHOD_NOT_ALLOWED", repr(r)
    assert r.headers.get("Allow") == "GET, HEAD", r.headers
    assert api.stock(a) == before


def test_unknown_path_is_404(api):
    for path in ("/", "/nope", "/seckill", "/seckill/executes", "/seckill/stock/"):
        r = api.get(path)
        assert r.code == 404 and r.status == "NOT_FOUND", f"{path}: {r!r}"
        assert r["success"] is False


def test_bad_ids_in_paths_are_400(api):
    for path in ("/seckill/orders/garbage", "/seckill/orders/12-", "/seckill/orders/-5",
                 "/seckill/orders/0-1", "/seckill/stock/abc", "/seckill/stock/0",
                 "/seckill/stock/-1", "/seckill/activities/1x"):
        r = api.get(path)
        assert r.code == 400 and r.status == "INVALID", f"{path}: {r!r}"


def test_unknown_order_and_result_are_404(api, sale, user_base):
    a = sale.activity_id
    r = api.get(f"/seckill/orders/123456-{a}")
    assert r.code == 404 and r.status == "NOT_FOUND", repr(r)
    r = api.get("/seckill/result", params={"userId": user_base + 999, "activityId": a})
    assert r.code == 404 and r.status == "NOT_FOUND", repr(r)
    r = api.get("/seckill/result", params={"userId": "x", "activityId": a})
    assert r.code == 400 and r.status == "INVALID", repr(r)
