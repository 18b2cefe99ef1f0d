"""The sale window: before it opens and after it closes every attempt is refused with
409 and no stock moves; a cancelled sale refuses every attempt too."""

import time

import pytest

from stack import poll_until

STOCK = 5


@pytest.fixture(scope="module")
def user():
    return int(time.time() * 1000) % 10**12 * 1000 + 1


def test_not_started(api, ctl, redis, conf, user):
    sale = ctl.create_sale(STOCK, start="+1h", end="+2h")
    a = sale.activity_id
    act = api.get(f"/seckill/activities/{a}")
    assert act.code == 200 and act["status"] == "PENDING", repr(act)
    for attempt in range(3):
        r = api.execute(user + attempt, a)
        assert r.code == 409 and r.status == "NOT_STARTED", repr(r)
    assert api.stock(a) == STOCK
    assert redis("HLEN", conf.key("users", a)) == 0


def test_ended(api, ctl, redis, conf, user):
    # seckillctl refuses a window that is already over, so the sale lasts 3 seconds and
    # nobody buys during it.
    sale = ctl.create_sale(STOCK, start="now", end="+3s")
    a = sale.activity_id
    poll_until(lambda: api.get(f"/seckill/activities/{a}")["status"] == "ENDED", 15,
               f"activity {a} to end", interval=0.2)
    for attempt in range(3):
        r = api.execute(user + attempt, a)
        assert r.code == 409 and r.status == "ENDED", repr(r)
    assert api.stock(a) == STOCK
    assert redis("HLEN", conf.key("users", a)) == 0


def test_cancelled(api, ctl, redis, conf, user):
    sale = ctl.create_sale(STOCK)
    a = sale.activity_id
    ctl.run_ok("activity", "cancel", a)
    for attempt in range(3):
        r = api.execute(user + attempt, a)
        assert r.code == 409 and r.status == "CANCELLED", repr(r)
    act = api.get(f"/seckill/activities/{a}")
    assert act.code == 200 and act["status"] == "CANCELLED", repr(act)
    assert redis("HLEN", conf.key("users", a)) == 0
