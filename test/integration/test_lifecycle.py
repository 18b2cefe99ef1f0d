"""Coupons and activities over time (issue 15 items 1-2): activity status in MySQL follows
the clock, a coupon past its validity is EXPIRED in MySQL with its unused user coupons, and
a deactivated coupon can be neither granted, sold (on every gateway, whatever their caches
or a warmup say) nor redeemed, until it is activated again."""

import json
import subprocess
import threading
import time

import pytest

from mariadb import RowLock

from sales import wait_for_consumer

from stack import ROOT, child_env, conf_of, poll_until
from gatewayhttp import Api
from stallproxy import StallProxy

# The consumer's lifecycle pass runs often here, so that windows of seconds play out.
CONF_OVERRIDES = {"consumer.lifecycle-interval-ms": "200"}


def status_of(mysql, table, row_id):
    return mysql.scalar(f"SELECT status FROM {table} WHERE id = {row_id}")


def coupon(ctl, end="+1d", total=20):
    return ctl.create_id("coupon", "create", "--name", "life", "--type", "CASH",
                         "--amount", "5.00", "--min-order", "10.00", "--total", total,
                         "--start", "-1m", "--end", end)


def grant(ctl, coupon_id, user):
    return ctl.create_id("coupon", "grant", "--coupon", coupon_id, "--user", user)


def use(api, uc_id, user, ref, amount="50.00"):
    return api.post(f"/coupons/{uc_id}/use",
                    json={"userId": user, "orderAmount": amount, "orderRef": ref})


def buy(api, activity_id, user):
    return api.post("/seckill/execute", json={"userId": user, "activityId": activity_id})


def listed_status(api, user, uc_id):
    r = api.get("/coupons", params={"userId": user})
    assert r.code == 200, repr(r)
    return next(c["status"] for c in r["coupons"] if c["userCouponId"] == uc_id)


def stock_left(redis, conf, activity_id):
    return int(redis("GET", conf.key("stock", activity_id)) or 0)


# ---- activity status ---------------------------------------------------------------------


def test_activity_status_follows_the_clock(ctl, mysql, consumer):
    c = coupon(ctl)
    a = ctl.create_id("activity", "create", "--coupon", c, "--stock", 3,
                      "--start", "+2s", "--end", "+4s")
    assert status_of(mysql, "seckill_activity", a) == "PENDING"
    poll_until(lambda: status_of(mysql, "seckill_activity", a) == "ACTIVE", 10,
               "the activity ACTIVE in MySQL once its window opened")
    poll_until(lambda: status_of(mysql, "seckill_activity", a) == "ENDED", 10,
               "the activity ENDED in MySQL once its window closed")


def test_a_locked_activity_row_holds_back_no_other_sale(ctl, mysql, api, consumer, ids):
    """An operator's transaction holds one sale's row (SELECT ... FOR UPDATE) while another
    sale, whose row comes before it, sells. The lifecycle pass must not wait on the locked
    row while holding the other's: an UPDATE over the table did, and the other sale's
    persistence then waited behind it (MySQL's lock wait, 50 s)."""
    before = ctl.create_sale(stock=10)
    locked = ctl.create_sale(stock=10)
    assert locked.activity_id > before.activity_id
    lock = RowLock(mysql, f"SELECT id FROM seckill_activity WHERE id = {locked.activity_id}")
    try:
        # Lifecycle passes (every 200 ms here) meet the lock before the order arrives.
        time.sleep(0.5)
        user = ids()
        r = buy(api, before.activity_id, user)
        assert r.code == 200, repr(r)
        order = r["orderNo"]
        poll_until(lambda: api.order_status(order) == "SUCCESS", 10,
                   "the other sale's order persisted while the row is locked")
    finally:
        lock.release()
    assert mysql.scalar(f"SELECT COUNT(*) FROM seckill_order WHERE order_no = '{order}'") == "1"


def test_cancelled_activity_stays_cancelled_past_its_end(ctl, mysql, consumer):
    c = coupon(ctl)
    a = ctl.create_id("activity", "create", "--coupon", c, "--stock", 3,
                      "--start", "now", "--end", "+2s")
    ctl.run_ok("activity", "cancel", a)
    later = ctl.create_id("activity", "create", "--coupon", c, "--stock", 1,
                          "--start", "now", "--end", "+2s")
    # The second sale ending proves a pass ran after the first one's end.
    poll_until(lambda: status_of(mysql, "seckill_activity", later) == "ENDED", 10,
               "the other sale ENDED")
    assert status_of(mysql, "seckill_activity", a) == "CANCELLED"


# ---- coupon expiry -----------------------------------------------------------------------


def test_coupon_expires_with_its_unused_user_coupons(ctl, mysql, api, consumer, ids):
    c = coupon(ctl, end="+4s")
    unused_user, used_user = ids(), ids()
    unused_uc, used_uc = grant(ctl, c, unused_user), grant(ctl, c, used_user)
    r = use(api, used_uc, used_user, f"CHK-{used_user}")
    assert r.code == 200, repr(r)
    poll_until(lambda: status_of(mysql, "user_coupon", used_uc) == "USED", 30,
               "the redemption in MySQL")
    assert status_of(mysql, "coupon", c) == "ACTIVE"
    assert status_of(mysql, "user_coupon", unused_uc) == "UNUSED"

    poll_until(lambda: status_of(mysql, "coupon", c) == "EXPIRED", 15,
               "the coupon EXPIRED in MySQL after its validity")
    assert status_of(mysql, "user_coupon", unused_uc) == "EXPIRED"
    assert status_of(mysql, "user_coupon", used_uc) == "USED"
    # The API and the CLI say what MySQL says.
    assert listed_status(api, unused_user, unused_uc) == "EXPIRED"
    assert listed_status(api, used_user, used_uc) == "USED"
    shown = json.loads(ctl.run_ok("coupon", "show", c, "--json").stdout)
    assert shown["status"] == "EXPIRED"
    # Past its validity it can be neither deactivated nor granted, and nothing changes.
    r = ctl("coupon", "deactivate", c)
    assert r.rc == 1 and "expired" in r.stderr, repr(r)
    assert status_of(mysql, "coupon", c) == "EXPIRED"
    assert ctl("coupon", "grant", "--coupon", c, "--user", ids()).rc == 1
    assert use(api, unused_uc, unused_user, f"CHK-{unused_user}").code == 409


# ---- deactivate / activate ---------------------------------------------------------------


def test_deactivated_coupon_is_neither_sold_granted_nor_redeemed(
        ctl, mysql, redis, conf, api, consumer, gateway_with, ids):
    c = coupon(ctl)
    a = ctl.create_id("activity", "create", "--coupon", c, "--stock", 5,
                      "--start", "now", "--end", "+1h")
    other = Api(gateway_with({}).base_url)  # a second gateway, with a cache of its own
    first = ids()
    assert buy(api, a, first).code == 200
    holder = ids()
    uc = grant(ctl, c, holder)
    before = stock_left(redis, conf, a)

    out = json.loads(ctl.run_ok("coupon", "deactivate", c, "--json").stdout)
    assert out == {"id": c, "status": "INACTIVE", "already": False, "sales": 1, "notWarmed": 0}
    assert status_of(mysql, "coupon", c) == "INACTIVE"

    for gw in (api, other):
        r = buy(gw, a, ids())
        assert r.code == 409 and r["status"] == "INACTIVE", repr(r)
    r = use(api, uc, holder, f"CHK-{holder}")
    assert r.code == 409 and r["status"] == "INACTIVE", repr(r)
    assert status_of(mysql, "user_coupon", uc) == "UNUSED"
    r = ctl("coupon", "grant", "--coupon", c, "--user", ids())
    assert r.rc == 1 and "INACTIVE" in r.stderr, repr(r)
    r = ctl("activity", "create", "--coupon", c, "--stock", 1, "--start", "now", "--end", "+1h")
    assert r.rc == 1 and "INACTIVE" in r.stderr, repr(r)
    # A warmup rebuilds the sale from MySQL: it must not reopen it.
    ctl.run_ok("activity", "warmup", a)
    r = buy(api, a, ids())
    assert r.code == 409 and r["status"] == "INACTIVE", repr(r)
    # The unsold stock stayed with the sale, and the earlier order is honoured.
    assert stock_left(redis, conf, a) == before
    wait_for_consumer(mysql, redis, conf, a, expected_rows=1)

    again = json.loads(ctl.run_ok("coupon", "deactivate", c, "--json").stdout)
    assert again["already"] is True and status_of(mysql, "coupon", c) == "INACTIVE"

    ctl.run_ok("coupon", "activate", c)
    assert status_of(mysql, "coupon", c) == "ACTIVE"
    for gw in (api, other):
        r = buy(gw, a, ids())
        assert r.code == 200, repr(r)
    r = use(api, uc, holder, f"CHK-{holder}")
    assert r.code == 200, repr(r)
    assert stock_left(redis, conf, a) == before - 2


@pytest.mark.parametrize("args, rc, words", [
    (["coupon", "deactivate", "999999999"], 1, "does not exist"),
    (["coupon", "activate", "999999999"], 1, "does not exist"),
    (["coupon", "deactivate", "abc"], 2, "coupon id"),
    (["coupon", "deactivate"], 2, "missing argument"),
])
def test_deactivate_bad_input_changes_nothing(ctl, mysql, args, rc, words):
    before = mysql.rows("SELECT id, status FROM coupon ORDER BY id")
    r = ctl(*args)
    assert r.rc == rc and words in r.stderr, repr(r)
    assert mysql.rows("SELECT id, status FROM coupon ORDER BY id") == before


WARMUP_LAG_S = 0.8


def test_a_warmup_racing_a_deactivate_leaves_the_sale_paused(ctl, conf, redis, api, tmp_path, ids):
    """`activity warmup` reads the sale (and its coupon's status) from MySQL, then writes
    the activity hash under WATCH. A `coupon deactivate` that lands in between pauses the
    sale in Redis, which aborts the warmup's transaction; the warmup's next attempt must
    not write the status it read before: the sale stays paused. The warmup's Redis answers
    come WARMUP_LAG_S late through a proxy, so the deactivate always lands in between."""
    c = coupon(ctl)
    a = ctl.create_id("activity", "create", "--coupon", c, "--stock", 5, "--start", "now", "--end", "+1h")
    proxy = StallProxy(conf.get("redis.host"), conf.get("redis.port"))
    proxy.delay = WARMUP_LAG_S
    slow = tmp_path / "slow-redis.conf"
    slow.write_text(conf.path.read_text(encoding="utf-8") + f"\nredis.port = {proxy.port}\n"
                    f"redis.timeout-ms = {int(WARMUP_LAG_S * 2000)}\n", encoding="utf-8")
    slow_ctl = [str(ctl.binary), "-c", str(conf_of(slow).path), "activity", "warmup", str(a)]
    result = {}
    warmup = threading.Thread(target=lambda: result.setdefault("p", subprocess.run(
        slow_ctl, cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=60)))
    try:
        warmup.start()
        time.sleep(WARMUP_LAG_S / 3)
        ctl.run_ok("coupon", "deactivate", c)
        warmup.join(60)
    finally:
        proxy.close()
    p = result["p"]
    assert p.returncode == 0, p.stdout + p.stderr
    assert redis("HGET", conf.key("activity", a), "paused") == "1"
    r = buy(api, a, ids())
    assert r.code == 409 and r["status"] == "INACTIVE", repr(r)
