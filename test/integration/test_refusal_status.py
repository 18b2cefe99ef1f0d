"""http.refusal-status (issue 15 item 5): the clients of the Spring service Seckill
replaces (docs/design.md, "The Spring service it replaces") read every answer of
POST /seckill/execute as HTTP 200 and look at `success`. With `200` every refusal comes so,
`{"success": false, "status", "message", "orderNo": null}`; with the default `4xx` the codes
stay what they are. Either way accepted and refused answers carry that service's
`userId`, `activityId` and `seckillTime`."""

import datetime

import requests

from sales import order_rows, wait_for_consumer
from gatewayhttp import Api

SPRING_FIELDS = ("userId", "activityId", "seckillTime")


def seckill_time(reply):
    """The answer's seckillTime as an aware datetime (ISO-8601 in UTC)."""
    text = reply["seckillTime"]
    assert text.endswith("Z"), repr(reply)
    return datetime.datetime.fromisoformat(text[:-1] + "+00:00")


def assert_about(reply, user, activity, before, after):
    for f in SPRING_FIELDS:
        assert f in reply.json, f"{f} missing: {reply!r}"
    assert reply["userId"] == user, repr(reply)
    assert reply["activityId"] == activity, repr(reply)
    # Millisecond precision: the window is widened by one ms either side.
    slack = datetime.timedelta(milliseconds=1)
    assert before - slack <= seckill_time(reply) <= after + slack, repr(reply)


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def test_default_keeps_the_4xx_codes_and_adds_the_spring_fields(ctl, api, gateway, consumer, ids):
    sale = ctl.create_sale(1)
    winner, loser = ids(), ids()
    t0 = now()
    won = api.execute(winner, sale.activity_id)
    t1 = now()
    assert won.code == 200 and won["success"] is True, repr(won)
    assert_about(won, winner, sale.activity_id, t0, t1)

    dup = api.execute(winner, sale.activity_id)
    assert dup.code == 409 and dup.status == "DUPLICATE", repr(dup)
    assert dup["orderNo"] == won["orderNo"], repr(dup)
    t2 = now()
    sold = api.execute(loser, sale.activity_id)
    t3 = now()
    assert sold.code == 409 and sold.status == "OUT_OF_STOCK", repr(sold)
    assert sold["orderNo"] is None, repr(sold)
    assert_about(sold, loser, sale.activity_id, t2, t3)

    bad = api.post("/seckill/execute", params={"userId": "x", "activityId": sale.activity_id})
    assert bad.code == 400 and bad.status == "INVALID", repr(bad)
    assert bad["userId"] is None and bad["activityId"] == sale.activity_id, repr(bad)


def test_200_answers_every_refusal_with_200_and_sells_the_same(gateway_with, ctl, consumer, mysql, redis, ids):
    g = gateway_with({"http.refusal-status": "200", "seckill.max-requests-per-user": "3"})
    api = Api(g.base_url)
    sale = ctl.create_sale(2)
    users = [ids() for _ in range(4)]
    answers = [api.execute(u, sale.activity_id) for u in users]
    assert all(a.code == 200 for a in answers), answers
    won = [a for a in answers if a["success"]]
    refused = [a for a in answers if not a["success"]]
    assert len(won) == 2 and all(a["status"] == "PROCESSING" for a in won), answers
    assert [a.status for a in refused] == ["OUT_OF_STOCK", "OUT_OF_STOCK"], answers
    for u, a in zip(users, answers):
        assert a["userId"] == u and a["activityId"] == sale.activity_id, repr(a)
        assert "seckillTime" in a.json, repr(a)
    assert all(a["orderNo"] is None for a in refused), refused
    # What was sold is what a 4xx gateway would have sold: one order per winner.
    wait_for_consumer(mysql, redis, ctl.conf, sale.activity_id, expected_rows=2, consumer=consumer)
    assert set(order_rows(mysql, sale.activity_id)) == {a["orderNo"] for a in won}

    dup = api.execute(users[0], sale.activity_id)
    assert dup.code == 200 and dup.status == "DUPLICATE", repr(dup)
    assert dup["orderNo"] == answers[0]["orderNo"], repr(dup)

    early = ctl.create_sale(1, start="+1h", end="+2h")
    pending = api.execute(users[0], early.activity_id)
    assert pending.code == 200 and pending.status == "NOT_STARTED", repr(pending)
    assert pending["orderNo"] is None, repr(pending)

    bad = api.post("/seckill/execute", params={"userId": users[0]})
    assert bad.code == 200 and bad.status == "INVALID", repr(bad)
    assert bad["activityId"] is None and bad["userId"] is None, repr(bad)

    missing = api.execute(users[0], 10**12 + 12345)
    assert missing.code == 200 and missing.status == "NOT_FOUND", repr(missing)

    # A buyer's fourth attempt within the minute is over max-requests-per-user (3).
    live = ctl.create_sale(20)
    buyer = ids()
    seen = [api.execute(buyer, live.activity_id) for _ in range(4)]
    assert [(a.code, a.status) for a in seen] == [(200, "PROCESSING"), (200, "DUPLICATE"),
                                                  (200, "DUPLICATE"), (200, "RATE_LIMITED")], seen
    limited = seen[-1]
    assert int(limited.headers["Retry-After"]) >= 1 and limited["retryAfter"] >= 1, repr(limited)

    # /metrics tells a refusal answered 200 from an order accepted.
    page = requests.get(g.base_url + "/metrics", timeout=10).text
    assert 'seckill_http_responses_total{status="OUT_OF_STOCK",code="200"} 2' in page, page
    assert 'seckill_http_responses_total{status="RATE_LIMITED",code="200"} 1' in page, page


def test_other_endpoints_keep_their_codes_under_200(gateway_with):
    g = gateway_with({"http.refusal-status": "200"})
    r = requests.get(g.base_url + "/seckill/orders/nope", timeout=10)
    assert r.status_code == 400, r.text
    r = requests.get(g.base_url + "/no/such/path", timeout=10)
    assert r.status_code == 404, r.text


def test_a_bad_refusal_status_stops_start_up(ctl):
    r = ctl("--set", "http.refusal-status=201", "config", "check")
    assert r.rc != 0 and "http.refusal-status" in r.stderr, repr(r)
