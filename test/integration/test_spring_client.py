"""The clients of the Spring service Seckill replaces (docs/design.md, "The Spring service it
replaces") run unchanged against the compatibility profile, conf/spring-compat.conf, whose
keys this module's gateway gets as they are in the file (README.md, "Running for the Spring
service's clients").

What such a client does: POST /seckill/execute with `userId` and `activityId` (Java longs)
in the query string, an urlencoded form or a multipart/form-data body, as Spring's
@RequestParam read them; it reads every answer as HTTP 200 with `{success, message,
orderNo, status}` and compares the messages with the service's words; a failure of Redis
or the broker is 200 `FAILED` with "秒杀失败: " + the reason; GET /seckill/stock/{id} of a
sale it does not know is stock 0, a failure 500 "获取库存失败: ..."."""

import re
import uuid

import requests

from gatewayhttp import Api, gateway_metrics
from sales import order_rows, wait_for_consumer
from stack import ROOT, poll_until
from stallproxy import StallProxy

PROFILE = ROOT / "conf" / "spring-compat.conf"


def profile_keys(path=PROFILE):
    """The profile's `key = value` lines, read as the loader reads them: `#` starts a
    comment at the start of a line or after a blank."""
    keys = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = re.split(r"(?:^|\s)#", line, maxsplit=1)[0].strip()
        if line:
            key, value = (part.strip() for part in line.split("=", 1))
            keys[key] = value
    return keys


CONF_OVERRIDES = profile_keys()

# The Spring service's words (its SeckillController and SeckillService).
ACCEPTED = "秒杀成功，订单处理中"
OUT_OF_STOCK = "库存不足"
RATE_LIMITED = "请求过于频繁，请稍后再试"
FAILED_PREFIX = "秒杀失败: "
STOCK_FAILED_PREFIX = "获取库存失败: "
# Java's long: a snowflake-sized user id, distinct per run.
LONG_BASE = 9_000_000_000_000_000_000


def long_user(ids):
    return LONG_BASE + ids()


def spring_answer(reply):
    """The answer as the Spring service's clients read it: HTTP 200 and its four fields."""
    assert reply.code == 200, repr(reply)
    for field in ("success", "message", "orderNo", "status"):
        assert field in reply.json, f"{field} missing: {reply!r}"
    return reply


def accepted(reply, user, activity):
    spring_answer(reply)
    assert reply["success"] is True and reply["status"] == "PROCESSING", repr(reply)
    assert reply["message"] == ACCEPTED, repr(reply)
    assert reply["userId"] == user and reply["activityId"] == activity, repr(reply)
    assert isinstance(reply["orderNo"], str), repr(reply)
    return reply["orderNo"]


def multipart_by_hand(fields, boundary=None, part_headers=()):
    """A multipart/form-data body as Spring's own RestTemplate (FormHttpMessageConverter)
    writes one: each part with its Content-Type and Content-Length."""
    boundary = boundary or uuid.uuid4().hex
    body = b""
    for name, value in fields.items():
        value = str(value).encode()
        body += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n"
                 f"Content-Type: text/plain;charset=UTF-8\r\nContent-Length: {len(value)}\r\n").encode()
        body += "".join(f"{h}\r\n" for h in part_headers).encode() + b"\r\n" + value + b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    return body, {"Content-Type": f"multipart/form-data;boundary={boundary}"}


def test_the_profile_holds_the_spring_settings():
    assert CONF_OVERRIDES == {
        "http.refusal-status": "200",
        "http.unavailable-status": "200",
        "http.long-ids": "true",
        "http.language": "zh",
        "http.stock-answers": "spring",
    }, CONF_OVERRIDES


def test_a_client_buys_with_query_form_and_multipart(api, ctl, mysql, redis, consumer, ids):
    sale = ctl.create_sale(5)
    a = sale.activity_id
    users = [long_user(ids) for _ in range(5)]
    orders = {}
    # The query string, as @RequestParam's most common caller sends it.
    r = api.post(f"/seckill/execute?userId={users[0]}&activityId={a}")
    orders[accepted(r, users[0], a)] = users[0]
    # An urlencoded form.
    r = api.post("/seckill/execute", data={"userId": str(users[1]), "activityId": str(a)})
    orders[accepted(r, users[1], a)] = users[1]
    # multipart/form-data written by hand, with the part headers Spring's RestTemplate adds.
    body, headers = multipart_by_hand({"userId": users[2], "activityId": a})
    r = api.post("/seckill/execute", data=body, headers=headers)
    orders[accepted(r, users[2], a)] = users[2]
    # requests' files= with no filename: the multipart a Python client writes.
    r = api.post("/seckill/execute", files={"userId": (None, str(users[3])), "activityId": (None, str(a))})
    orders[accepted(r, users[3], a)] = users[3]
    # The activity in the query, the user in the body: Spring read both alike.
    r = api.post(f"/seckill/execute?activityId={a}", files={"userId": (None, str(users[4]))})
    orders[accepted(r, users[4], a)] = users[4]

    wait_for_consumer(mysql, redis, ctl.conf, a, expected_rows=len(orders), consumer=consumer)
    assert order_rows(mysql, a) == orders


def test_refusals_are_200_with_the_spring_fields_and_words(api, ctl, ids):
    sale = ctl.create_sale(1)
    a = sale.activity_id
    winner, loser = long_user(ids), long_user(ids)
    won = accepted(api.post(f"/seckill/execute?userId={winner}&activityId={a}"), winner, a)

    sold = spring_answer(api.post("/seckill/execute", data={"userId": str(loser), "activityId": str(a)}))
    assert (sold["success"], sold["status"], sold["message"], sold["orderNo"]) == (
        False, "OUT_OF_STOCK", OUT_OF_STOCK, None), repr(sold)
    assert sold["userId"] == loser, repr(sold)

    body, headers = multipart_by_hand({"userId": winner, "activityId": a})
    dup = spring_answer(api.post("/seckill/execute", data=body, headers=headers))
    assert (dup["success"], dup["status"], dup["orderNo"]) == (False, "DUPLICATE", won), repr(dup)
    assert dup["message"] == "您已抢购过该活动，请勿重复提交", repr(dup)

    early = ctl.create_sale(1, start="+1h", end="+2h")
    pending = spring_answer(api.post(f"/seckill/execute?userId={loser}&activityId={early.activity_id}"))
    assert (pending["status"], pending["message"], pending["orderNo"]) == (
        "NOT_STARTED", "秒杀活动尚未开始", None), repr(pending)

    # Beyond Java's long: the Chinese message, and the detail that says what to fix.
    bad = spring_answer(api.post("/seckill/execute", params={"userId": "9223372036854775808", "activityId": a}))
    assert bad["status"] == "INVALID" and bad["success"] is False, repr(bad)
    assert bad["message"] == "请求参数无效: userId must be a positive integer below 2^63", repr(bad)


def test_a_client_over_the_limit_is_told_in_the_services_words(gateway_with, ctl, ids):
    g = gateway_with(dict(CONF_OVERRIDES, **{"seckill.max-requests-per-user": "3"}))
    api = Api(g.base_url)
    sale = ctl.create_sale(20)
    buyer = long_user(ids)
    seen = [spring_answer(api.post(f"/seckill/execute?userId={buyer}&activityId={sale.activity_id}"))
            for _ in range(4)]
    assert [a["status"] for a in seen] == ["PROCESSING", "DUPLICATE", "DUPLICATE", "RATE_LIMITED"], seen
    limited = seen[-1]
    assert limited["message"] == RATE_LIMITED and limited["orderNo"] is None, repr(limited)
    assert limited["success"] is False and int(limited.headers["Retry-After"]) >= 1, repr(limited)


def test_malformed_multipart_is_refused_and_sells_nothing(api, ctl, redis, ids, conf):
    sale = ctl.create_sale(3)
    a = sale.activity_id
    user = long_user(ids)
    invalid = "请求参数无效: "
    # A part with a filename is a file, not a parameter; requests gives a bare value one.
    r = spring_answer(api.post("/seckill/execute", files={"userId": str(user), "activityId": (None, str(a))}))
    assert r["status"] == "INVALID", repr(r)
    assert r["message"] == invalid + "multipart body: a part with a filename (files are not parameters)", repr(r)
    boundary = "b0undary"
    cases = {
        "multipart/form-data needs a boundary parameter":
            (multipart_by_hand({"userId": user, "activityId": a}, boundary)[0],
             {"Content-Type": "multipart/form-data"}),
        "multipart/form-data: malformed boundary (1 to 70 of RFC 2046's characters)":
            (b"--" + b"x" * 71 + b"--\r\n", {"Content-Type": "multipart/form-data; boundary=" + "x" * 71}),
        "multipart body: ends before its closing boundary":
            (multipart_by_hand({"userId": user, "activityId": a}, boundary)[0][:-len(f"--{boundary}--\r\n")],
             {"Content-Type": f"multipart/form-data; boundary={boundary}"}),
        "userId: given twice with different values":
            (multipart_by_hand({"userId": user, "activityId": a, "USERID": user + 1}, boundary)[0],
             {"Content-Type": f"multipart/form-data; boundary={boundary}"}),
    }
    for message, (body, headers) in cases.items():
        r = spring_answer(api.post("/seckill/execute", data=body, headers=headers))
        assert (r["status"], r["message"]) == ("INVALID", invalid + message), repr(r)
    # http.max-body-size bounds it as every body: the HTTP layer's 413, whatever the profile.
    size = int(conf.get("http.max-body-size"))
    body, headers = multipart_by_hand({"userId": user, "activityId": a, "pad": "p" * size})
    r = api.post("/seckill/execute", data=body, headers=headers)
    assert r.code == 413 and r["status"] == "TOO_LARGE", repr(r)
    assert int(redis("GET", conf.key("stock", a))) == 3


def test_stock_of_a_sale_it_does_not_know_is_zero(api, ctl):
    sale = ctl.create_sale(7)
    r = api.get(f"/seckill/stock/{sale.activity_id}")
    assert r.code == 200 and r.json == {"success": True, "activityId": sale.activity_id, "stock": 7}, repr(r)
    unknown = 9_223_372_036_854_775_000
    r = api.get(f"/seckill/stock/{unknown}")
    assert r.code == 200 and r.json == {"success": True, "activityId": unknown, "stock": 0}, repr(r)


def test_a_backend_failure_is_200_failed_and_sells_nothing(gateway_with, ctl, conf, redis, ids):
    """The gateway's Redis goes away (this gateway's only: it reaches Redis through a proxy
    that is then closed). Every execute is answered as the Spring service answered an
    exception of Redis or the broker, and the stock read as its controller's catch did."""
    sale = ctl.create_sale(4)
    a = sale.activity_id
    proxy = StallProxy(conf.get("redis.host"), conf.get("redis.port"))
    try:
        g = gateway_with(dict(CONF_OVERRIDES, **{"redis.port": proxy.port, "redis.reconnect-max-ms": "200"}))
        api = Api(g.base_url)
        assert api.get(f"/seckill/stock/{a}")["stock"] == 4
        proxy.close()

        user = long_user(ids)

        def failed():
            r = spring_answer(api.post(f"/seckill/execute?userId={user}&activityId={a}"))
            return r if r["status"] == "FAILED" else None

        r = poll_until(failed, 20, "a FAILED answer once Redis is gone")
        assert r["success"] is False and r["orderNo"] is None, repr(r)
        assert r["message"] == FAILED_PREFIX + "stock service unavailable, please retry", repr(r)
        assert r["userId"] == user and r["activityId"] == a and "seckillTime" in r.json, repr(r)
        body, headers = multipart_by_hand({"userId": user, "activityId": a})
        again = spring_answer(api.post("/seckill/execute", data=body, headers=headers))
        assert (again["status"], again["message"]) == ("FAILED", r["message"]), repr(again)

        stock = requests.get(f"{g.base_url}/seckill/stock/{a}", timeout=30)
        assert stock.status_code == 500, stock.text
        assert stock.json() == {"success": False, "status": "UNAVAILABLE",
                                "message": STOCK_FAILED_PREFIX + "stock service unavailable, please retry"}
        # Counted as what it is, UNAVAILABLE, with the code it went out with.
        samples = gateway_metrics(g.conf.http_port)
        assert samples.get('seckill_http_responses_total{status="UNAVAILABLE",code="200"}', 0) >= 2, samples
        assert samples.get('seckill_http_responses_total{status="UNAVAILABLE",code="500"}', 0) == 1, samples
    finally:
        proxy.close()
    # Nothing was sold: the stock and the buyers are as they were.
    assert int(redis("GET", conf.key("stock", a))) == 4
    assert redis("HLEN", conf.key("users", a)) == 0
