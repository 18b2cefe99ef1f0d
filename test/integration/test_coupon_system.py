"""The coupon system (issue 3) end to end: templates that seckillctl refuses when they make
no sense, the lifecycle of docs/coupons.md (coupon -> activity -> sale -> user coupon -> redeemed at
checkout -> USED in MySQL), DISCOUNT arithmetic, a redemption race, a sale cancelled while
it sells, grants racing a sale for the last units, and activity statuses that follow the
clock."""

import http.client
import json
import subprocess
import threading
import time

import pytest

from sales import wait_for_consumer

from stack import BIN, ROOT, child_env, poll_until
from gatewayhttp import Attempt, run_load


def coupon_count(mysql):
    return mysql.count("SELECT COUNT(*) FROM coupon")


def listed(api, user):
    r = api.get("/coupons", params={"userId": user})
    assert r.code == 200, repr(r)
    return r["coupons"]


def use(api, uc_id, user, amount, ref):
    return api.post(f"/coupons/{uc_id}/use",
                    json={"userId": user, "orderAmount": amount, "orderRef": ref})


def ctl_json(ctl, *args):
    r = ctl.run_ok(*args, "--json")
    return json.loads(r.stdout)


def stats_of(ctl, coupon_id=None, activity_id=None):
    """The coupon's and the activity's entries of `seckillctl stats --json`."""
    s = ctl_json(ctl, "stats")
    c = next((x for x in s["coupons"] if x["id"] == coupon_id), None)
    a = next((x for x in s["activities"] if x["id"] == activity_id), None)
    return c, a


def coupon_row(mysql, coupon_id):
    total, issued, used = mysql.rows(
        f"SELECT total_count, issued_count, used_count FROM coupon WHERE id = {coupon_id}")[0]
    return int(total), int(issued), int(used)


def grant(ctl, coupon_id, user):
    """seckillctl coupon grant: the new user coupon's id."""
    return ctl.create_id("coupon", "grant", "--coupon", coupon_id, "--user", user)


# ---- coupon create refuses nonsense ------------------------------------------------------

VALID = {"--name": "ok", "--type": "CASH", "--amount": "10.00", "--min-order": "100.00",
         "--total": "10", "--start": "now", "--end": "+7d"}

NONSENSE = [
    # (id, changes to VALID (None drops the option), words the message must contain)
    ("negative amount", {"--amount": "-5.00"}, ["--amount", "-5.00"]),
    ("amount with 3 decimals", {"--amount": "1.234"}, ["--amount"]),
    ("negative min order", {"--min-order": "-1"}, ["--min-order"]),
    ("rate 0", {"--type": "DISCOUNT", "--amount": None, "--rate": "0"}, ["--rate", "(0, 1]"]),
    ("rate 1.5", {"--type": "DISCOUNT", "--amount": None, "--rate": "1.5"}, ["--rate", "(0, 1]"]),
    ("rate 0.12345", {"--type": "DISCOUNT", "--amount": None, "--rate": "0.12345"}, ["--rate", "4 decimals"]),
    ("rate -0.5", {"--type": "DISCOUNT", "--amount": None, "--rate": "-0.5"}, ["--rate"]),
    ("DISCOUNT without rate", {"--type": "DISCOUNT", "--amount": None}, ["--rate"]),
    ("end before start", {"--start": "+2h", "--end": "+1h"}, ["--end", "after", "--start"]),
    ("end equals start", {"--start": "2030-01-01T00:00:00", "--end": "2030-01-01T00:00:00"}, ["--end"]),
    ("end in the past", {"--start": "-2d", "--end": "-1d"}, ["--end", "past"]),
    ("CASH without amount", {"--amount": None}, ["CASH", "--amount"]),
    ("CASH amount 0", {"--amount": "0.00"}, ["CASH", "--amount"]),
    ("GIFT with amount", {"--type": "GIFT", "--min-order": None}, ["GIFT", "--amount"]),
    ("GIFT with rate", {"--type": "GIFT", "--amount": None, "--rate": "0.9"}, ["GIFT"]),
    ("CASH with rate", {"--rate": "0.9"}, ["--rate", "DISCOUNT"]),
    ("total 0", {"--total": "0"}, ["--total"]),
    ("unknown type", {"--type": "FREEBIE"}, ["--type", "FREEBIE"]),
    ("bad time", {"--start": "tomorrow"}, ["--start"]),
]


@pytest.mark.parametrize("case", NONSENSE, ids=[c[0] for c in NONSENSE])
def test_coupon_create_refuses_nonsense(ctl, mysql, case):
    _, changes, words = case
    opts = dict(VALID)
    opts.update(changes)
    args = ["coupon", "create"]
    for k, v in opts.items():
        if v is not None:
            args += [k, v]
    before = coupon_count(mysql)
    r = ctl(*args)
    assert r.rc != 0, repr(r)
    assert r.stdout.strip() == "", f"a refused create printed an id: {r!r}"
    msg = r.stderr.strip()
    assert msg and len(msg.splitlines()) <= 3, repr(r)
    for w in words:
        assert w in msg, f"message does not mention {w!r}: {r!r}"
    assert coupon_count(mysql) == before, f"a refused create wrote a coupon row: {r!r}"


def test_valid_variants_are_accepted(ctl, mysql):
    """The refusals above are refusals of the nonsense, not of the type: the sensible
    neighbours of each are created."""
    before = coupon_count(mysql)
    ctl.create_id("coupon", "create", "--name", "g", "--type", "GIFT", "--total", "1",
                  "--start", "now", "--end", "+1d")
    ctl.create_id("coupon", "create", "--name", "d", "--type", "DISCOUNT", "--rate", "0.1234",
                  "--total", "1", "--start", "now", "--end", "+1d")
    ctl.create_id("coupon", "create", "--name", "d1", "--type", "DISCOUNT", "--rate", "1",
                  "--total", "1", "--start", "now", "--end", "+1d")
    assert coupon_count(mysql) == before + 3


def test_activity_create_refuses_what_the_coupon_cannot_cover(ctl, mysql):
    coupon = ctl.create_id("coupon", "create", "--name", "small", "--type", "CASH", "--amount", "1.00",
                           "--total", "5", "--start", "now", "--end", "+2h")
    count = lambda: mysql.count(f"SELECT COUNT(*) FROM seckill_activity WHERE coupon_id = {coupon}")
    for args, words in (
            (["--stock", "6", "--start", "now", "--end", "+1h"], ["--stock", "exceeds"]),
            (["--stock", "1", "--start", "+90m", "--end", "+150m"], ["validity"]),
            (["--stock", "1", "--start", "now", "--end", "+61m"], ["max-seckill-duration"])):
        r = ctl("activity", "create", "--coupon", coupon, *args)
        assert r.rc != 0 and r.stdout.strip() == "", repr(r)
        for w in words:
            assert w in r.stderr, f"message does not mention {w!r}: {r!r}"
    assert count() == 0
    # Two sales may split the coupon, not exceed it together.
    ctl.create_id("activity", "create", "--coupon", coupon, "--stock", "3", "--start", "now", "--end", "+1h")
    r = ctl("activity", "create", "--coupon", coupon, "--stock", "3", "--start", "now", "--end", "+1h")
    assert r.rc != 0 and "exceeds" in r.stderr, repr(r)
    ctl.create_id("activity", "create", "--coupon", coupon, "--stock", "2", "--start", "now", "--end", "+1h")
    assert count() == 2


# ---- the lifecycle -----------------------------------------------------------------------


def test_cash_coupon_lifecycle(ctl, api, mysql, consumer, ids):
    """docs/coupons.md: create the coupon and the sale, win it, see it, use it at checkout."""
    coupon = ctl.create_id("coupon", "create", "--name", "10 off 100", "--type", "CASH",
                           "--amount", "10.00", "--min-order", "100.00", "--total", "10",
                           "--start", "now", "--end", "+7d")
    activity = ctl.create_id("activity", "create", "--coupon", coupon, "--stock", "5",
                             "--start", "now", "--end", "+1h", "--name", "Double 12")
    user, stranger = ids(), ids()
    r = api.execute(user, activity)
    assert r.code == 200 and r["status"] == "PROCESSING", repr(r)
    order_no = r["orderNo"]
    poll_until(lambda: api.order_status(order_no) == "SUCCESS", 30, f"order {order_no} to be SUCCESS")

    uc_id = int(mysql.scalar(f"SELECT id FROM user_coupon WHERE source_ref = '{order_no}'"))
    coupons = poll_until(lambda: listed(api, user), 20, f"user {user}'s coupon to be listed")
    assert len(coupons) == 1, coupons
    c = coupons[0]
    assert (c["userCouponId"], c["couponId"], c["type"], c["status"]) == (uc_id, coupon, "CASH", "UNUSED"), c
    assert (c["amount"], c["minOrder"]) == ("10.00", "100.00"), c
    assert c["validFrom"] < c["validUntil"], c
    assert listed(api, stranger) == []

    # Only the owner can use it.
    r = use(api, uc_id, stranger, "100.00", f"order-{stranger}")
    assert r.code == 404 and r.status == "NOT_FOUND", repr(r)

    # One cent below the minimum order amount.
    r = use(api, uc_id, user, "99.99", f"order-{user}-a")
    assert r.code == 409 and r.status == "BELOW_MIN_ORDER", repr(r)
    assert r["minOrder"] == "100.00", repr(r)
    assert listed(api, user)[0]["status"] == "UNUSED"

    ref = f"order-{user}-b"
    r = use(api, uc_id, user, "100.00", ref)
    assert r.code == 200 and r["success"] is True, repr(r)
    assert (r["discount"], r["payable"], r["orderRef"], r["orderAmount"]) == ("10.00", "90.00", ref, "100.00"), repr(r)

    # The same checkout asking again gets the same answer (even with another amount).
    for amount in ("100.00", "250.00"):
        again = use(api, uc_id, user, amount, ref)
        assert again.code == 200, repr(again)
        assert (again["discount"], again["payable"], again["orderRef"]) == ("10.00", "90.00", ref), repr(again)
    other = use(api, uc_id, user, "100.00", f"order-{user}-c")
    assert other.code == 409 and other.status == "USED", repr(other)
    # The stranger still learns nothing about it.
    r = use(api, uc_id, stranger, "100.00", ref)
    assert r.code == 404 and r.status == "NOT_FOUND", repr(r)

    c = listed(api, user)[0]
    assert (c["status"], c["orderRef"], c["discount"], c["payable"]) == ("USED", ref, "10.00", "90.00"), c
    assert c["usedAt"], c

    # The consumer records it in MySQL.
    sql = f"SELECT status, order_ref, discount, used_at IS NOT NULL, payable FROM user_coupon WHERE id = {uc_id}"
    poll_until(lambda: mysql.rows(sql)[0][0] == "USED", 30, f"user coupon {uc_id} to be USED in MySQL")
    # payable too: a `coupon warmup` after Redis lost the record answers a repeat from it.
    assert mysql.rows(sql) == [["USED", ref, "10.00", "1", "90.00"]]
    poll_until(lambda: coupon_row(mysql, coupon)[2] == 1, 30, f"coupon {coupon}'s used_count to be 1")
    assert coupon_row(mysql, coupon) == (10, 1, 1)

    cs, acts = stats_of(ctl, coupon, activity)
    assert (cs["total"], cs["issued"], cs["used"]) == (10, 1, 1), cs
    # 4 unsold units are held by the live sale; the rest can be granted or sold again.
    assert (cs["heldBySales"], cs["remaining"]) == (4, 5), cs
    assert (acts["sold"], acts["stockLeft"], acts["status"]) == (1, 4, "ACTIVE"), acts


def test_discount_coupon_rate_and_cap(ctl, api, mysql, consumer, ids):
    coupon = ctl.create_id("coupon", "create", "--name", "15% off, at most 20", "--type", "DISCOUNT",
                           "--rate", "0.85", "--max-discount", "20.00", "--total", "5",
                           "--start", "now", "--end", "+7d")
    user = ids()
    granted = [grant(ctl, coupon, user) for _ in range(3)]
    coupons = listed(api, user)
    assert [c["userCouponId"] for c in coupons] == sorted(granted), coupons
    for c in coupons:
        assert (c["type"], c["status"], c["rate"], c["maxDiscount"]) == ("DISCOUNT", "UNUSED", "0.8500", "20.00"), c

    cases = [("100.00", "15.00", "85.00"),      # pay 85%
             ("1000.00", "20.00", "980.00"),    # 150.00 off capped at 20.00
             ("10.01", "1.50", "8.51")]         # 8.5085 payable rounds half up to 8.51
    for uc_id, (amount, discount, payable) in zip(sorted(granted), cases):
        r = use(api, uc_id, user, amount, f"d-{uc_id}")
        assert r.code == 200, repr(r)
        assert (r["discount"], r["payable"]) == (discount, payable), f"{amount}: {r!r}"
    poll_until(lambda: coupon_row(mysql, coupon)[2] == 3, 30, f"coupon {coupon}'s used_count to be 3")
    rows = mysql.rows(f"SELECT id, status, discount, payable FROM user_coupon WHERE coupon_id = {coupon} "
                      f"ORDER BY id")
    assert [(int(i), st, d, pay) for i, st, d, pay in rows] == [
        (uc, "USED", d, pay) for uc, (_, d, pay) in zip(sorted(granted), cases)], rows


def test_fifty_concurrent_uses_one_wins(ctl, api, gateway, mysql, consumer, ids):
    coupon = ctl.create_id("coupon", "create", "--name", "race", "--type", "CASH", "--amount", "5.00",
                           "--min-order", "10.00", "--total", "3", "--start", "now", "--end", "+1d")
    user = ids()
    uc_id = grant(ctl, coupon, user)
    n = 50
    barrier = threading.Barrier(n)
    results = [None] * n

    def one(i):
        conn = http.client.HTTPConnection("127.0.0.1", gateway.conf.http_port, timeout=30)
        try:
            conn.connect()
            body = json.dumps({"userId": user, "orderAmount": "50.00", "orderRef": f"race-{i}"})
            barrier.wait(timeout=30)
            conn.request("POST", f"/coupons/{uc_id}/use", body=body,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            results[i] = (resp.status, json.loads(resp.read()))
        except Exception as e:  # noqa: BLE001 - reported below
            results[i] = ("error", repr(e))
        finally:
            conn.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    ok = [(i, body) for i, (code, body) in enumerate(results) if code == 200]
    used = [i for i, (code, body) in enumerate(results) if code == 409 and body.get("status") == "USED"]
    assert len(ok) == 1, f"{len(ok)} uses succeeded: {results}"
    assert len(used) == n - 1, f"expected {n - 1} x 409 USED: {results}"
    winner, body = ok[0]
    assert (body["discount"], body["payable"], body["orderRef"]) == ("5.00", "45.00", f"race-{winner}"), body

    sql = f"SELECT status, order_ref, discount FROM user_coupon WHERE id = {uc_id}"
    poll_until(lambda: mysql.rows(sql)[0][0] == "USED", 30, f"user coupon {uc_id} to be USED in MySQL")
    assert mysql.rows(sql) == [["USED", f"race-{winner}", "5.00"]]
    poll_until(lambda: coupon_row(mysql, coupon)[2] >= 1, 30, "used_count to move")
    assert coupon_row(mysql, coupon) == (3, 1, 1)
    # Listed once, used by the winner.
    c = listed(api, user)
    assert len(c) == 1 and c[0]["status"] == "USED" and c[0]["orderRef"] == f"race-{winner}", c


# ---- cancel mid-sale ---------------------------------------------------------------------


def test_cancel_mid_sale(ctl, api, gateway, mysql, redis, conf, consumer, ids):
    stock = 3000
    # The coupon's whole count is on sale: nothing is left to grant until the cancel
    # gives the unsold stock back.
    coupon = ctl.create_id("coupon", "create", "--name", "cancel me", "--type", "CASH", "--amount", "5.00",
                           "--total", stock, "--start", "-1m", "--end", "+1d")
    activity = ctl.create_id("activity", "create", "--coupon", coupon, "--stock", stock,
                             "--start", "now", "--end", "+1h")
    r = ctl("coupon", "grant", "--coupon", coupon, "--user", ids())
    assert r.rc != 0 and "nothing left to grant" in r.stderr, repr(r)

    attempts = [Attempt(ids(), activity) for _ in range(20000)]
    stop = threading.Event()
    loader = threading.Thread(target=run_load, args=(gateway.conf.http_port, attempts, 8),
                              kwargs={"stop": stop}, daemon=True)
    loader.start()
    try:
        poll_until(lambda: sum(1 for a in attempts if a.reply is not None and a.reply.code == 200) >= 50,
                   30, "the sale to sell 50 units")
        cancel = ctl("activity", "cancel", activity, "--json")
        cancelled_at = time.monotonic()
        assert cancel.rc == 0, repr(cancel)
        # Go on buying for a while after the cancel returned.
        poll_until(lambda: sum(1 for a in attempts if a.sent is not None and a.sent > cancelled_at
                               and a.done is not None) >= 200, 30, "200 attempts after the cancel")
    finally:
        stop.set()
        loader.join(60)
    assert not loader.is_alive()
    answered = [a for a in attempts if a.sent is not None]
    errors = [a for a in answered if a.reply is None]
    assert not errors, errors[:5]
    after = [a for a in answered if a.sent > cancelled_at]
    wrong = [a for a in after if (a.reply.code, a.reply.status) != (409, "CANCELLED")]
    assert not wrong, f"{len(wrong)} attempts sent after the cancel returned were not 409 CANCELLED: {wrong[:5]}"
    sold_http = sum(1 for a in answered if a.reply.code == 200)
    other = [a for a in answered if a.reply.code != 200 and a.reply.status != "CANCELLED"]
    assert not other, other[:5]
    assert 50 <= sold_http < stock, sold_http

    rows = wait_for_consumer(mysql, redis, conf, activity, consumer=consumer)
    assert rows == sold_http, f"{sold_http} accepted, {rows} rows in MySQL"
    assert api.stock(activity) == 0
    act = api.get(f"/seckill/activities/{activity}")
    assert act.code == 200 and act["status"] == "CANCELLED", repr(act)
    assert ctl_json(ctl, "activity", "show", activity)["status"] == "CANCELLED"

    # The unsold units went back to the coupon.
    unsold = stock - rows
    cs, acts = stats_of(ctl, coupon, activity)
    assert (acts["status"], acts["sold"], acts["returned"], acts["live"], acts["holds"]) == \
        ("CANCELLED", rows, unsold, 0, 0), acts
    assert (cs["issued"], cs["heldBySales"], cs["remaining"]) == (rows, 0, unsold), cs
    shown = ctl_json(ctl, "coupon", "show", coupon)
    assert (shown["issued"], shown["heldBySales"], shown["remaining"]) == (rows, 0, unsold), shown
    # ... and can be granted again.
    user = ids()
    uc_id = grant(ctl, coupon, user)
    assert [c["userCouponId"] for c in listed(api, user)] == [uc_id]
    assert coupon_row(mysql, coupon) == (stock, rows + 1, 0)

    v = ctl("verify", activity)
    assert v.rc == 0, repr(v)
    # A cancelled sale stays closed.
    r = api.execute(ids(), activity)
    assert r.code == 409 and r.status == "CANCELLED", repr(r)


# ---- grants racing a sale ----------------------------------------------------------------


def test_grants_race_a_sale_for_the_last_units(ctl, conf, api, gateway, mysql, redis, consumer, ids):
    total, stock, grants = 30, 20, 16
    coupon = ctl.create_id("coupon", "create", "--name", "last units", "--type", "CASH", "--amount", "5.00",
                           "--total", total, "--start", "-1m", "--end", "+1d")
    activity = ctl.create_id("activity", "create", "--coupon", coupon, "--stock", stock,
                             "--start", "now", "--end", "+1h")

    samples = []
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            samples.append(coupon_row(mysql, coupon))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    buyers = [Attempt(ids(), activity) for _ in range(2 * stock)]
    sale = threading.Thread(target=run_load, args=(gateway.conf.http_port, buyers, 8), daemon=True)
    grantees = [ids() for _ in range(grants)]
    try:
        sale.start()
        procs = [subprocess.Popen([str(BIN / "seckillctl"), "-c", str(conf.path), "coupon", "grant",
                                   "--coupon", str(coupon), "--user", str(u)],
                                  cwd=ROOT, env=child_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for u in grantees]
        outcomes = [(p.wait(timeout=120), *p.communicate()) for p in procs]
        sale.join(60)
        assert not sale.is_alive()
        wait_for_consumer(mysql, redis, conf, activity, expected_rows=stock, consumer=consumer)
    finally:
        stop.set()
        sampler.join(60)

    granted = [o for o in outcomes if o[0] == 0]
    refused = [o for o in outcomes if o[0] != 0]
    assert len(granted) == total - stock, f"{len(granted)} grants went through: {outcomes}"
    for rc, out, err in refused:
        assert "nothing left to grant" in err, f"unclear refusal (rc {rc}): {err!r}"
    sold = [a for a in buyers if a.reply is not None and a.reply.code == 200]
    assert len(sold) == stock, [a for a in buyers if a.reply is None or a.reply.code != 200][:5]
    assert all(a.reply.status == "OUT_OF_STOCK" for a in buyers if a.reply.code != 200)

    over = [s for s in samples if s[1] > s[0]]
    assert samples and not over, f"issued_count exceeded total_count: {over[:5]}"
    assert coupon_row(mysql, coupon) == (total, total, 0)
    assert mysql.count(f"SELECT COUNT(*) FROM user_coupon WHERE coupon_id = {coupon}") == total
    # One more grant is refused, clearly, and changes nothing.
    r = ctl("coupon", "grant", "--coupon", coupon, "--user", ids())
    assert r.rc != 0 and "nothing left to grant" in r.stderr, repr(r)
    assert coupon_row(mysql, coupon) == (total, total, 0)
    v = ctl("verify", activity)
    assert v.rc == 0, repr(v)


# ---- statuses follow the clock -----------------------------------------------------------


def test_activity_status_follows_the_clock(ctl, api, ids):
    coupon = ctl.create_id("coupon", "create", "--name", "clock", "--type", "GIFT", "--total", "10",
                           "--start", "-1m", "--end", "+1d")
    activity = ctl.create_id("activity", "create", "--coupon", coupon, "--stock", "3",
                             "--start", "+3s", "--end", "+5s")

    def http_status():
        r = api.get(f"/seckill/activities/{activity}")
        assert r.code == 200, repr(r)
        return r["status"]

    def ctl_status():
        return ctl_json(ctl, "activity", "show", activity)["status"]

    assert http_status() == "PENDING" and ctl_status() == "PENDING"
    r = api.execute(ids(), activity)
    assert r.code == 409 and r.status == "NOT_STARTED", repr(r)

    poll_until(lambda: http_status() == "ACTIVE", 10, f"activity {activity} to start")
    assert ctl_status() == "ACTIVE"
    r = api.execute(ids(), activity)
    assert r.code == 200, repr(r)

    poll_until(lambda: http_status() == "ENDED", 10, f"activity {activity} to end")
    assert ctl_status() == "ENDED"
    r = api.execute(ids(), activity)
    assert r.code == 409 and r.status == "ENDED", repr(r)
    # An ended sale has nothing to cancel.
    r = ctl("activity", "cancel", activity)
    assert r.rc != 0 and "ended" in r.stderr, repr(r)
    assert http_status() == "ENDED"

    live = ctl.create_id("activity", "create", "--coupon", coupon, "--stock", "3",
                         "--start", "now", "--end", "+1h")
    assert api.get(f"/seckill/activities/{live}")["status"] == "ACTIVE"
    ctl.run_ok("activity", "cancel", live)
    assert api.get(f"/seckill/activities/{live}")["status"] == "CANCELLED"
    assert ctl_json(ctl, "activity", "show", live)["status"] == "CANCELLED"
    r = api.execute(ids(), live)
    assert r.code == 409 and r.status == "CANCELLED", repr(r)
    # Cancelling twice is harmless.
    again = ctl_json(ctl, "activity", "cancel", live)
    assert again["alreadyCancelled"] is True and again["returned"] == 3, again
