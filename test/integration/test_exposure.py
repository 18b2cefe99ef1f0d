"""Exposure (issue 11 item 11): what a deployment shows to whoever reaches it.

- GET /seckill/orders/{orderNo} in auth.mode=jwt answers only the order's owner; for
  anyone else the order does not exist (order numbers are guessable, so even existence
  must not leak). auth.mode=none keeps answering by number alone.
- Start-up says once, as a WARN line, when the gateway trusts any userId (auth.mode=none)
  on an address other than loopback, and when a process that uses MySQL (the consumer)
  runs with the MySQL password the project ships."""

import time

import pytest

from stack import Consumer, free_port, poll_until, write_conf
from gatewayhttp import Api, http_bytes, jwt_sign, raw_http

JWT_SECRET = "integration-jwt-secret-0123456789-abcdefghij"
OPEN_GATEWAY = "auth.mode=none trusts any userId"
SHIPPED_PASSWORD = "mysql.password is the one the project ships"


def token(user):
    return jwt_sign({"sub": str(user), "exp": int(time.time()) + 600}, JWT_SECRET)


def get(gw, target, user=None, headers=None):
    h = dict(headers or {})
    if user is not None:
        h["Authorization"] = f"Bearer {token(user)}"
    data = http_bytes("GET", target, headers=h)
    return raw_http(gw.conf.http_port, data).reply(target)


def warnings(service, text):
    return [line for line in service.log_text().splitlines() if text in line]


# ---- item 11a: an order is its owner's ---------------------------------------------------


def test_order_by_number_answers_only_its_owner(gateway_with, gateway, consumer, ctl, ids):
    gw = gateway_with({"auth.mode": "jwt", "auth.jwt-secret": JWT_SECRET})
    sale = ctl.create_sale(3)
    owner, other = ids(), ids()
    data = http_bytes("POST", f"/seckill/execute?activityId={sale.activity_id}",
                      headers={"Authorization": f"Bearer {token(owner)}"})
    r = raw_http(gw.conf.http_port, data).reply("execute")
    assert r.code == 200, repr(r)
    order_no = r["orderNo"]
    path = f"/seckill/orders/{order_no}"

    mine = get(gw, path, owner)
    assert mine.code == 200 and mine["orderNo"] == order_no, repr(mine)
    assert mine["status"] in ("PROCESSING", "SUCCESS"), repr(mine)
    poll_until(lambda: get(gw, path, owner)["status"] == "SUCCESS", 20, f"order {order_no} to be SUCCESS")

    # Another user gets exactly what a number that was never issued gets.
    theirs = get(gw, path, other)
    missing = get(gw, f"/seckill/orders/1-{sale.activity_id}", other)
    assert missing.code == 404 and missing.status == "NOT_FOUND", repr(missing)
    assert (theirs.code, theirs.text) == (missing.code, missing.text), (
        f"another user's view of order {order_no}: {theirs!r}, of a missing one: {missing!r}")
    assert (get(gw, f"/seckill/orders/1-{sale.activity_id}", owner).code) == 404

    # No token, or a userId naming the owner with someone else's token: refused.
    assert get(gw, path).code == 401
    assert get(gw, f"{path}?userId={owner}", other).code == 401
    assert get(gw, f"{path}?userId={owner}", owner).code == 200

    # auth.mode=none answers by number alone, as it always did.
    r = Api(gateway.base_url).get(path)
    assert r.code == 200 and r["status"] == "SUCCESS", repr(r)


# ---- item 11b: start-up warnings ---------------------------------------------------------


def test_open_gateway_warns_once(gateway_with):
    gw = gateway_with({"auth.mode": "none", "http.host": "0.0.0.0"})
    lines = warnings(gw, OPEN_GATEWAY)
    assert len(lines) == 1, f"{gw.log}:\n{gw.log_tail()}"
    assert " warn " in lines[0] and "0.0.0.0" in lines[0], lines
    # It is said at start-up, not per request.
    Api(gw.base_url).get("/healthz")
    assert len(warnings(gw, OPEN_GATEWAY)) == 1


def test_loopback_or_jwt_gateway_does_not_warn(gateway_with):
    local = gateway_with({"auth.mode": "none", "http.host": "127.0.0.1"})
    jwt = gateway_with({"auth.mode": "jwt", "auth.jwt-secret": JWT_SECRET, "http.host": "0.0.0.0"})
    for gw in (local, jwt):
        assert warnings(gw, OPEN_GATEWAY) == [], f"{gw.log}:\n{gw.log_tail()}"
        # The gateway uses no MySQL: it says nothing about its password.
        assert warnings(gw, SHIPPED_PASSWORD) == []


@pytest.fixture
def idle_consumer(tmp_path, services):
    """Consumers whose Kafka is an address nobody listens on: they start, connect to
    MySQL and Redis, and take no order from the suite's topic."""
    started = []

    def start(overrides):
        d = tmp_path / f"consumer{len(started)}"
        d.mkdir()
        settings = {"kafka.brokers": f"127.0.0.1:{free_port()}"}
        settings.update(overrides)
        c = Consumer(write_conf(d / "seckill.conf", settings), d)
        started.append(c)
        return c.start()

    yield start
    for c in started:
        c.finish()


def test_consumer_warns_once_about_the_shipped_mysql_password(idle_consumer, base_conf):
    assert base_conf.get("mysql.password") == "seckill", "the suite runs with the shipped password"
    c = idle_consumer({})
    lines = warnings(c, SHIPPED_PASSWORD)
    assert len(lines) == 1 and " warn " in lines[0], f"{c.log}:\n{c.log_tail()}"


def test_consumer_with_another_password_does_not_warn(idle_consumer):
    c = idle_consumer({"mysql.password": "not-the-shipped-one"})
    assert warnings(c, SHIPPED_PASSWORD) == [], f"{c.log}:\n{c.log_tail()}"
