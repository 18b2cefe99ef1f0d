"""A table of malformed requests against the module's gateway (relaxed limits,
auth.mode=none): each is answered with the expected code and JSON status (or evhttp's own
page) and changes nothing in Redis, Kafka or MySQL; the gateway survives them all, and
the sale and the coupon they aimed at still work."""

import pytest

from sales import wait_for_consumer
from gatewayhttp import gateway_metrics, http_bytes, raw_http


# ---- malformed requests ------------------------------------------------------------------

JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
HTML = None   # evhttp answers these itself: an HTML page, not the API's JSON

# (id, method, target, headers, body, expected code, expected JSON status or HTML)
# {a} is the sale's activity, {other} another id, {u} a user, {uc} a user coupon of user {cu}.
MALFORMED = [
    # ids in the query string: positive 64-bit, below 2^53, no junk
    ("userId 0", "POST", "/seckill/execute?userId=0&activityId={a}", {}, "", 400, "INVALID"),
    ("userId -1", "POST", "/seckill/execute?userId=-1&activityId={a}", {}, "", 400, "INVALID"),
    ("userId 01", "POST", "/seckill/execute?userId=01&activityId={a}", {}, "", 400, "INVALID"),
    ("userId 1.5", "POST", "/seckill/execute?userId=1.5&activityId={a}", {}, "", 400, "INVALID"),
    ("userId 2^53", "POST", "/seckill/execute?userId=9007199254740992&activityId={a}", {}, "", 400, "INVALID"),
    ("userId 20 digits", "POST", "/seckill/execute?userId=99999999999999999999&activityId={a}", {}, "", 400, "INVALID"),
    ("userId 1x", "POST", "/seckill/execute?userId=1x&activityId={a}", {}, "", 400, "INVALID"),
    ("userId empty", "POST", "/seckill/execute?userId=&activityId={a}", {}, "", 400, "INVALID"),
    ("userId +5", "POST", "/seckill/execute?userId=%2B5&activityId={a}", {}, "", 400, "INVALID"),
    ("userId with NUL", "POST", "/seckill/execute?userId={u}%00junk&activityId={a}", {}, "", 400, "INVALID"),
    ("activityId 0", "POST", "/seckill/execute?userId={u}&activityId=0", {}, "", 400, "INVALID"),
    ("activityId 0{a}", "POST", "/seckill/execute?userId={u}&activityId=0{a}", {}, "", 400, "INVALID"),
    ("activityId {a} and space", "POST", "/seckill/execute?userId={u}&activityId={a}%20", {}, "", 400, "INVALID"),
    # missing fields
    ("no parameters", "POST", "/seckill/execute", {}, "", 400, "INVALID"),
    ("missing userId", "POST", "/seckill/execute?activityId={a}", {}, "", 400, "INVALID"),
    ("missing activityId", "POST", "/seckill/execute?userId={u}", {}, "", 400, "INVALID"),
    ("JSON without userId", "POST", "/seckill/execute", JSON, '{"activityId": {a}}', 400, "INVALID"),
    # sizes
    ("header over max-header-size", "POST", "/seckill/execute?userId={u}&activityId={a}",
     {"X-Padding": "p" * 9000}, "", 400, HTML),
    ("body over max-body-size", "POST", "/seckill/execute", JSON,
     '{"userId": {u}, "activityId": {a}, "pad": "' + "x" * 20000 + '"}', 413, "TOO_LARGE"),
    # evhttp's own limit is max(4 x max-body-size, 64 KiB)
    ("body over evhttp's limit", "POST", "/seckill/execute", JSON,
     '{"userId": {u}, "activityId": {a}, "pad": "' + "x" * 100000 + '"}', 413, HTML),
    # methods
    ("PUT execute", "PUT", "/seckill/execute?userId={u}&activityId={a}", {}, "", 405, "METHOD_NOT_ALLOWED"),
    ("DELETE execute", "DELETE", "/seckill/execute?userId={u}&activityId={a}", {}, "", 405, "METHOD_NOT_ALLOWED"),
    ("GET execute", "GET", "/seckill/execute?userId={u}&activityId={a}", {}, "", 405, "METHOD_NOT_ALLOWED"),
    ("PATCH execute", "PATCH", "/seckill/execute?userId={u}&activityId={a}", {}, "", 405, "METHOD_NOT_ALLOWED"),
    ("POST stock", "POST", "/seckill/stock/{a}", {}, "", 405, "METHOD_NOT_ALLOWED"),
    # methods evhttp does not serve itself: the API's 405 too, not its 501 page
    ("TRACE execute", "TRACE", "/seckill/execute?userId={u}&activityId={a}", {}, "", 405, "METHOD_NOT_ALLOWED"),
    ("unknown method", "BREW", "/seckill/execute?userId={u}&activityId={a}", {}, "", 405, "METHOD_NOT_ALLOWED"),
    ("QUERY stock", "QUERY", "/seckill/stock/{a}", {}, "", 405, "METHOD_NOT_ALLOWED"),
    # bad JSON
    ("JSON truncated", "POST", "/seckill/execute", JSON, '{"userId": {u}, "activityId": {a}', 400, "INVALID"),
    ("JSON array", "POST", "/seckill/execute", JSON, '[{u}, {a}]', 400, "INVALID"),
    ("JSON trailing junk", "POST", "/seckill/execute", JSON, '{"userId": {u}, "activityId": {a}} x', 400, "INVALID"),
    ("JSON two objects", "POST", "/seckill/execute", JSON, '{"userId": {u}}{"activityId": {a}}', 400, "INVALID"),
    ("JSON userId object", "POST", "/seckill/execute", JSON, '{"userId": {"id": {u}}, "activityId": {a}}', 400, "INVALID"),
    ("JSON userId array", "POST", "/seckill/execute", JSON, '{"userId": [{u}], "activityId": {a}}', 400, "INVALID"),
    ("JSON userId true", "POST", "/seckill/execute", JSON, '{"userId": true, "activityId": {a}}', 400, "INVALID"),
    ("JSON userId null", "POST", "/seckill/execute", JSON, '{"userId": null, "activityId": {a}}', 400, "INVALID"),
    ("JSON userId 1e300", "POST", "/seckill/execute", JSON, '{"userId": 1e300, "activityId": {a}}', 400, "INVALID"),
    ("JSON userId -{u}", "POST", "/seckill/execute", JSON, '{"userId": -{u}, "activityId": {a}}', 400, "INVALID"),
    ("JSON activityId string junk", "POST", "/seckill/execute", JSON, '{"userId": {u}, "activityId": "{a}x"}', 400, "INVALID"),
    ("JSON not UTF-8 text", "POST", "/seckill/execute", JSON, b'\xff\xfe{}', 400, "INVALID"),
    # content types
    ("text/plain body", "POST", "/seckill/execute", {"Content-Type": "text/plain"}, "userId={u}&activityId={a}", 400, "INVALID"),
    ("XML body", "POST", "/seckill/execute", {"Content-Type": "application/xml"}, "<x/>", 400, "INVALID"),
    ("body without Content-Type", "POST", "/seckill/execute", {}, "userId={u}&activityId={a}", 400, "INVALID"),
    ("JSON sent as a form", "POST", "/seckill/execute", FORM, '{"userId": {u}, "activityId": {a}}', 400, "INVALID"),
    ("form with a NUL byte", "POST", "/seckill/execute", FORM, b"userId=1\x00&activityId=1", 400, "INVALID"),
    ("chunked broken form", "POST", "/seckill/execute", dict(FORM, **{"Transfer-Encoding": "chunked", "Content-Length": None}),
     "5\r\nuserI\r\n0\r\n\r\n", 400, "INVALID"),
    ("Content-Length not a number", "POST", "/seckill/execute?userId={u}&activityId={a}", {"Content-Length": "abc"}, "", 400, HTML),
    # conflicting values
    ("query and form disagree", "POST", "/seckill/execute?userId={u}&activityId={a}", FORM,
     "userId=1&activityId={a}", 400, "INVALID"),
    ("query and JSON disagree", "POST", "/seckill/execute?userId={u}&activityId={a}", JSON,
     '{"userId": {u}, "activityId": {other}}', 400, "INVALID"),
    # redeeming: amounts, references, ids
    ("orderAmount 1.234", "POST", "/coupons/{uc}/use", FORM, "userId={cu}&orderAmount=1.234&orderRef=r1", 400, "INVALID"),
    ("orderAmount -1", "POST", "/coupons/{uc}/use", FORM, "userId={cu}&orderAmount=-1&orderRef=r1", 400, "INVALID"),
    ("orderAmount 1e3", "POST", "/coupons/{uc}/use", FORM, "userId={cu}&orderAmount=1e3&orderRef=r1", 400, "INVALID"),
    ("orderAmount abc", "POST", "/coupons/{uc}/use", FORM, "userId={cu}&orderAmount=abc&orderRef=r1", 400, "INVALID"),
    ("orderAmount 1.", "POST", "/coupons/{uc}/use", FORM, "userId={cu}&orderAmount=1.&orderRef=r1", 400, "INVALID"),
    ("orderAmount overflow", "POST", "/coupons/{uc}/use", FORM,
     "userId={cu}&orderAmount=92233720368547758.08&orderRef=r1", 400, "INVALID"),
    ("orderAmount JSON string 1e3", "POST", "/coupons/{uc}/use", JSON,
     '{"userId": {cu}, "orderAmount": "1e3", "orderRef": "r1"}', 400, "INVALID"),
    ("orderRef with spaces", "POST", "/coupons/{uc}/use", FORM, "userId={cu}&orderAmount=50.00&orderRef=a+b", 400, "INVALID"),
    ("orderRef 65 chars", "POST", "/coupons/{uc}/use", FORM, "userId={cu}&orderAmount=50.00&orderRef=" + "r" * 65, 400, "INVALID"),
    ("orderRef with NUL", "POST", "/coupons/{uc}/use", FORM,
     "userId={cu}&orderAmount=50.00&orderRef=r1%00%20junk", 400, "INVALID"),
    ("orderRef empty", "POST", "/coupons/{uc}/use", FORM, "userId={cu}&orderAmount=50.00&orderRef=", 400, "INVALID"),
    ("missing orderRef", "POST", "/coupons/{uc}/use", FORM, "userId={cu}&orderAmount=50.00", 400, "INVALID"),
    ("missing orderAmount", "POST", "/coupons/{uc}/use", FORM, "userId={cu}&orderRef=r1", 400, "INVALID"),
    ("missing userId on use", "POST", "/coupons/{uc}/use", FORM, "orderAmount=50.00&orderRef=r1", 400, "INVALID"),
    ("userCouponId 0", "POST", "/coupons/0/use", FORM, "userId={cu}&orderAmount=50.00&orderRef=r1", 400, "INVALID"),
    ("userCouponId 1x", "POST", "/coupons/1x/use", FORM, "userId={cu}&orderAmount=50.00&orderRef=r1", 400, "INVALID"),
    ("GET use", "GET", "/coupons/{uc}/use?userId={cu}&orderAmount=50.00&orderRef=r1", {}, "", 405, "METHOD_NOT_ALLOWED"),
    ("use path junk", "POST", "/coupons/{uc}/usex", FORM, "userId={cu}&orderAmount=50.00&orderRef=r1", 404, "NOT_FOUND"),
    ("GET coupons userId 01", "GET", "/coupons?userId=01", {}, "", 400, "INVALID"),
    # paths
    ("unknown path", "POST", "/seckill/executex?userId={u}&activityId={a}", {}, "", 404, "NOT_FOUND"),
    ("unknown root", "GET", "/admin", {}, "", 404, "NOT_FOUND"),
    ("stock id 01", "GET", "/seckill/stock/0{a}", {}, "", 400, "INVALID"),
    ("order number junk", "GET", "/seckill/orders/../../etc/passwd", {}, "", 400, "INVALID"),
]


@pytest.fixture(scope="module")
def target(ctl, gateway, consumer, ids):
    """The sale and the user coupon the malformed requests aim at."""
    sale = ctl.create_sale(10)
    coupon_user = ids()
    uc = ctl.create_id("coupon", "grant", "--coupon", sale.coupon_id, "--user", coupon_user)
    return {"sale": sale, "user": ids(), "coupon_user": coupon_user, "uc": uc}


def trace(gw, redis, mysql, conf, target):
    """Everything a request could have changed: Redis stock, users, orders and
    reservations of the sale, the user coupon's redemption record, what the gateway
    produced to Kafka (its delivery counters), and the MySQL rows."""
    a = target["sale"].activity_id
    uc, cu = target["uc"], target["coupon_user"]
    metrics = gateway_metrics(gw.conf.http_port)
    return {
        "stock": redis("GET", conf.key("stock", a)),
        "users": redis("HLEN", conf.key("users", a)),
        "orders": redis("HLEN", conf.key("orders", a)),
        "resv": redis("ZCARD", conf.key("resv", a)),
        "coupon used": redis("HGET", f"seckill:ucoupon:{{u{cu}}}", f"{uc}:used"),
        "kafka orders": metrics["seckill_orders_accepted_total"],
        "kafka uses": metrics["seckill_coupons_redeemed_total"],
        "mysql": mysql.rows(f"SELECT (SELECT COUNT(*) FROM seckill_order WHERE activity_id = {a}), "
                            f"(SELECT status FROM user_coupon WHERE id = {uc})"),
    }


def fill(value, target):
    subs = {"{a}": target["sale"].activity_id, "{u}": target["user"], "{uc}": target["uc"],
            "{cu}": target["coupon_user"], "{other}": target["sale"].activity_id + 1}
    if isinstance(value, bytes):
        return value
    for k, v in subs.items():
        value = value.replace(k, str(v))
    return value


def test_malformed_table_has_enough_cases():
    assert len(MALFORMED) >= 30
    assert len({c[0] for c in MALFORMED}) == len(MALFORMED)


@pytest.mark.parametrize("case", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_request(case, gateway, redis, mysql, conf, target):
    _, method, path, headers, body, code, status = case
    data = http_bytes(method, fill(path, target), headers, fill(body, target))
    before = trace(gateway, redis, mysql, conf, target)
    r = raw_http(gateway.conf.http_port, data)
    assert trace(gateway, redis, mysql, conf, target) == before
    # The gateway survived it.
    assert gateway.running and raw_http(gateway.conf.http_port, http_bytes("GET", "/healthz")).code == 200
    assert r.code == code, f"{case[0]}: {r!r}"
    if status is HTML:
        assert not r.is_json, f"{case[0]}: expected evhttp's own page: {r!r}"
    else:
        reply = r.reply(case[0])
        assert reply["success"] is False and reply.status == status and reply["message"], repr(reply)
        if code == 405:
            # Every route takes POST, or GET (and HEAD with it).
            allow = "POST" if path.startswith(("/seckill/execute", "/coupons/")) else "GET, HEAD"
            assert r.headers.get("Allow") == allow, dict(r.headers)


def test_malformed_requests_reached_nobody(gateway, api, redis, mysql, conf, consumer, target):
    """After the table: nothing of it reached MySQL. A sentinel order proves the consumer
    is caught up: exactly one row for the sale, the sentinel's."""
    a = target["sale"].activity_id
    uc = target["uc"]
    assert api.stock(a) == 10
    sentinel = target["user"] + 500000
    r = api.execute(sentinel, a)
    assert r.code == 200, repr(r)
    wait_for_consumer(mysql, redis, conf, a, expected_rows=1, consumer=consumer)
    assert mysql.rows(f"SELECT user_id FROM seckill_order WHERE activity_id = {a}") == [[str(sentinel)]]
    assert mysql.rows(f"SELECT status, order_ref FROM user_coupon WHERE id = {uc}") == [["UNUSED", "NULL"]]
    # The coupon still works after all that.
    r = api.post(f"/coupons/{uc}/use", data={"userId": target["coupon_user"], "orderAmount": "50.00",
                                               "orderRef": "after-the-table"})
    assert r.code == 200 and (r["discount"], r["payable"]) == ("5.00", "45.00"), repr(r)
