"""Editing a sale (`seckillctl activity update`, `PATCH /admin/activities/{id}`): the window
moves while it can, stock comes and goes, every gateway sees the edit within its refresh,
MySQL and Redis agree (verify passes) after every edit, under load too; an edit that
cannot hold is refused and changes nothing; an edit cut off between Redis and MySQL is
finished by running it again."""

import threading
import time

import pytest

from adminhttp import Admin
from gatewayhttp import Attempt, run_load
from luabody import lua_body
from sales import wait_for_consumer
from stack import free_port, poll_until

TOKEN = "t0k3n-for-the-activity-update-tests-0123"
CONF_OVERRIDES = {"admin.port": free_port(), "admin.token": TOKEN}


@pytest.fixture(scope="module")
def admin(admin_server):
    return Admin(f"http://127.0.0.1:{admin_server.port}", TOKEN)


def coupon(ctl, total=1000, valid_until="+1d"):
    return ctl.create_id("coupon", "create", "--name", "edits", "--type", "CASH", "--amount", "5.00",
                         "--total", total, "--start", "-1m", "--end", valid_until)


def sale(ctl, stock, start="now", end="+1h", total=1000, valid_until="+1d"):
    return ctl.create_id("activity", "create", "--coupon", coupon(ctl, total, valid_until), "--stock", stock,
                         "--start", start, "--end", end)


def row(mysql, a):
    return mysql.rows(f"SELECT name, stock, start_time, end_time, status, sold_count FROM seckill_activity "
                      f"WHERE id = {a}")[0]


def redis_side(redis, conf, a):
    flat = redis("HGETALL", conf.key("activity", a))
    return dict(zip(flat[0::2], flat[1::2])), redis("GET", conf.key("stock", a))


def verified(ctl, a):
    r = ctl("verify", a)
    assert r.rc == 0, repr(r)


def test_a_pending_sale_moves_renames_and_restocks_on_every_gateway(ctl, api, mysql, gateway):
    a = sale(ctl, 10, start="+20m", end="+50m")
    poll_until(lambda: api.get(f"/seckill/activities/{a}").code == 200, 20, "the sale on the gateway")
    r = ctl.run_ok("activity", "update", a, "--name", "Evening sale", "--start", "+30m", "--end", "+55m",
                   "--stock", "+5")
    assert "5 more on sale now" in r.stdout, repr(r)
    name, stock, start, end, status, _ = row(mysql, a)
    assert (name, stock, status) == ("Evening sale", "15", "PENDING"), row(mysql, a)

    def shown():
        s = api.get(f"/seckill/activities/{a}")
        return s if s["name"] == "Evening sale" and s["stock"] == 15 and s["stockLeft"] == 15 else None
    s = poll_until(shown, 20, "the gateway to show the edit")
    moved = time.time() + 30 * 60
    assert abs(time.mktime(time.strptime(s["startTime"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone - moved) < 120, s
    verified(ctl, a)

    ctl.run_ok("activity", "update", a, "--stock", "-4")
    ctl.run_ok("activity", "update", a, "--stock", "11")  # absolute: the same again changes nothing
    assert row(mysql, a)[1] == "11"
    poll_until(lambda: api.get(f"/seckill/activities/{a}")["stockLeft"] == 11, 20, "11 left on the gateway")
    verified(ctl, a)


def test_a_running_sale_gets_more_stock_and_a_later_end(ctl, api, mysql, redis, conf, gateway, consumer, ids):
    a = sale(ctl, 2, end="+20m")
    buyers = [ids() for _ in range(4)]
    assert [api.execute(u, a).code for u in buyers[:2]] == [200, 200]
    poll_until(lambda: api.execute(buyers[2], a)["status"] == "OUT_OF_STOCK", 20, "sold out")
    ctl.run_ok("activity", "update", a, "--stock", "+2", "--end", "+40m")
    # Every gateway answers from Redis again within its refresh: the sold-out answer lifts.
    poll_until(lambda: api.execute(buyers[2], a).code == 200, 20, "the added units on sale")
    assert api.execute(buyers[3], a).code == 200
    assert api.execute(ids(), a)["status"] == "OUT_OF_STOCK"
    wait_for_consumer(mysql, redis, conf, a, expected_rows=4, consumer=consumer)
    assert row(mysql, a)[1] == "4" and row(mysql, a)[5] == "4", row(mysql, a)
    verified(ctl, a)


def test_an_end_brought_forward_closes_the_sale_then(ctl, api, gateway, ids):
    a = sale(ctl, 5, end="+30m")
    ctl.run_ok("activity", "update", a, "--end", "+3s")
    poll_until(lambda: api.execute(ids(), a)["status"] == "ENDED", 30, "the sale to end at its new end")


def test_what_cannot_hold_is_refused_and_changes_nothing(ctl, api, mysql, redis, conf, gateway, consumer, ids):
    running = sale(ctl, 3, total=3)
    pending = sale(ctl, 3, start="+10m", end="+20m", valid_until="+25m")
    assert api.execute(ids(), running).code == 200
    wait_for_consumer(mysql, redis, conf, running, expected_rows=1, consumer=consumer)
    cases = [
        (running, ["--start", "+5m"], 1, "started"),                  # a running sale's start
        (pending, ["--start", "-1m"], 2, "in the past"),              # a start into the past
        (pending, ["--end", "-1m"], 2, "in the past"),
        (pending, ["--end", "+5m"], 2, "after the start"),           # before its own start
        (pending, ["--end", "+3h"], 2, "max-seckill-duration"),
        (pending, ["--end", "+30m"], 1, "validity"),                 # past the coupon's end
        (running, ["--stock", "0"], 1, "below the 1 already sold"),
        (running, ["--stock", "+1"], 1, "coupon"),                    # the coupon has nothing left
        (pending, ["--stock", "+abc"], 2, "--stock"),
        (pending, ["--stock", "+0"], 2, "--stock"),
        (pending, ["--name", " "], 2, "--name"),
        (pending, [], 2, "nothing to change"),
        (999999999, ["--stock", "+1"], 1, "does not exist"),
    ]
    for a, args, rc, words in cases:
        before = [(row(mysql, x), redis_side(redis, conf, x)) for x in (running, pending)]
        r = ctl("activity", "update", a, *args)
        assert r.rc == rc and words in r.stderr, repr(r)
        after = [(row(mysql, x), redis_side(redis, conf, x)) for x in (running, pending)]
        assert after == before, f"{args} changed something"
    # Taking back more than is unsold: refused by Redis, which alone knows what is reserved.
    r = ctl("activity", "update", running, "--stock", "-3")
    assert r.rc == 1 and "below the 1 already sold" in r.stderr, repr(r)
    assert api.execute(ids(), running).code == 200  # a reservation Redis holds, MySQL not yet
    r = ctl("activity", "update", running, "--stock", "-2")
    assert r.rc == 1 and "only 1 unit(s)" in r.stderr, repr(r)  # 3 - 1 sold - 1 reserved
    assert row(mysql, running)[1] == "3"
    ctl.run_ok("activity", "cancel", pending)
    r = ctl("activity", "update", pending, "--name", "again")
    assert r.rc == 1 and "cancelled" in r.stderr, repr(r)
    verified(ctl, running)


def test_an_edit_cut_off_after_redis_is_finished_by_running_it_again(ctl, mysql, redis, conf, gateway):
    a = sale(ctl, 10, start="+10m", end="+20m")
    # As if seckillctl died between update.lua and the COMMIT: Redis has the edit, MySQL not.
    keys = [conf.key("activity", a), conf.key("stock", a)]
    assert redis("EVAL", lua_body("update"), 2, *keys, "", "", "", "14", "carry")[0] == "OK"
    assert redis("GET", conf.key("stock", a)) == "14" and row(mysql, a)[1] == "10"
    r = ctl("verify", a)
    assert r.rc != 0, repr(r)  # the two stores disagree, and verify says so
    # A warmup meanwhile refreshes the description but leaves the stock with its key: were
    # the hash's 'stock' set back to MySQL's 10, the repeat below would add 4 units again.
    ctl.run_ok("activity", "warmup", a)
    assert redis("HGET", conf.key("activity", a), "stock") == "14"
    r = ctl.run_ok("activity", "update", a, "--stock", "14")
    assert row(mysql, a)[1] == "14" and redis("GET", conf.key("stock", a)) == "14", repr(r)
    verified(ctl, a)


def test_stock_added_and_taken_back_under_load_never_oversells(ctl, api, mysql, redis, conf, gateway, consumer,
                                                                ids):
    a = sale(ctl, 100)
    attempts = [Attempt(ids(), a) for _ in range(40000)]
    stop = threading.Event()
    done = {}
    loader = threading.Thread(target=lambda: done.setdefault(
        "a", run_load(conf.http_port, attempts, 8, stop=stop, timeout=120)))
    loader.start()
    try:
        poll_until(lambda: int(redis("GET", conf.key("stock", a))) < 80, 30, "the sale under way")
        ctl.run_ok("activity", "update", a, "--stock", "+150")
        took = ctl("activity", "update", a, "--stock", "-20")
        assert took.rc == 0 or "unsold and unreserved" in took.stderr, repr(took)
        final = 230 if took.rc == 0 else 250
        # The buyers go on until every gateway has sold the added units too.
        poll_until(lambda: int(redis("GET", conf.key("stock", a))) == 0, 60, "the added stock sold")
    finally:
        stop.set()
        loader.join(180)
    assert not loader.is_alive()
    accepted = [x for x in done["a"] if x.reply is not None and x.reply.code == 200]
    rows = wait_for_consumer(mysql, redis, conf, a, expected_rows=len(accepted), consumer=consumer)
    assert row(mysql, a)[1] == str(final)
    # Demand exceeded the stock: everything is sold, and no unit twice.
    assert rows == final == int(row(mysql, a)[5]), (rows, final)
    verified(ctl, a)


def test_the_admin_api_edits_as_the_cli_does(admin, ctl, mysql):
    a = sale(ctl, 4, start="+10m", end="+20m")
    r = admin.request("PATCH", f"/admin/activities/{a}", json={"stock": "+3", "name": "via api"})
    assert r.code == 200 and r["success"] and r["stock"] == 7 and r["added"] == 3, repr(r)
    assert row(mysql, a)[:2] == ["via api", "7"]
    r = admin.request("PATCH", f"/admin/activities/{a}", json={"start": "-1h"})
    assert r.code == 400 and not r["success"], repr(r)
    r = admin.request("PATCH", f"/admin/activities/{a}", json={"stock": 2})
    assert r.code == 200 and r["stock"] == 2 and r["added"] == -5, repr(r)
    r = admin.request("PATCH", f"/admin/activities/{a}", json={"colour": "red"})
    assert r.code == 400, repr(r)
    assert row(mysql, a)[:2] == ["via api", "2"]


def test_a_bucketed_sale_takes_the_edit_on_every_bucket(ctl, api, mysql, redis, conf, gateway):
    a = ctl.create_id("activity", "create", "--coupon", coupon(ctl), "--stock", 6, "--start", "+10m",
                      "--end", "+20m", "--buckets", 2)
    tags = redis("HGET", conf.key("activity", a), "tags").split(",")
    assert len(tags) == 2, tags
    ctl.run_ok("activity", "update", a, "--stock", "+4", "--name", "two buckets")
    for tag in tags:
        assert redis("HMGET", f"seckill:activity:{{{tag}}}", "stock", "name") == ["10", "two buckets"], tag
    poll_until(lambda: api.get(f"/seckill/activities/{a}")["stockLeft"] == 10, 20, "10 left on the gateway")
    verified(ctl, a)


def test_a_bucketed_sale_gives_back_units_of_every_bucket(ctl, api, mysql, redis, conf, gateway):
    """Units are taken back from bucket 0's stock key; what it lacks is moved there from the
    other buckets first, so a bucketed sale gives back all its unsold units, not only
    bucket 0's."""
    a = ctl.create_id("activity", "create", "--coupon", coupon(ctl), "--stock", 10, "--start", "+10m",
                      "--end", "+20m", "--buckets", 2)
    tags = redis("HGET", conf.key("activity", a), "tags").split(",")
    stocks = [int(redis("GET", conf.key("stock", tag))) for tag in tags]
    assert sum(stocks) == 10 and stocks[0] < 9, stocks
    r = ctl("activity", "update", a, "--stock", "-9")
    assert r.rc == 0, repr(r)
    assert [int(redis("GET", conf.key("stock", tag))) for tag in tags] in ([1, 0], [0, 1])
    for tag in tags:
        assert redis("HGET", f"seckill:activity:{{{tag}}}", "stock") == "1", tag
        assert redis("HLEN", f"seckill:xfer:out:{{{tag}}}") == 0, tag
    assert row(mysql, a)[1] == "1"
    poll_until(lambda: api.get(f"/seckill/activities/{a}")["stockLeft"] == 1, 20, "1 left on the gateway")
    verified(ctl, a)
    # The last unit, wherever it is.
    ctl.run_ok("activity", "update", a, "--stock", "0")
    assert [int(redis("GET", conf.key("stock", tag))) for tag in tags] == [0, 0]
    assert row(mysql, a)[1] == "0"
    verified(ctl, a)
