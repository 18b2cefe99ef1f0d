"""A limit per user above one, the operator's side (issue 27 item 3): `activity create
--per-user N` and the admin API's perUser (1..100, nothing created otherwise), the limit
in MySQL and in every bucket's activity hash, shown by show and list, raised any time and
lowered only while the sale has no order, the users hash rebuilt by holder
("<userId>#<slot>") from MySQL's user_slot, and verify's I2 counting a user's orders
against the limit. The orders are written straight into MySQL and Redis: what the gateway
and the consumer do with the limit is theirs to test."""

import json
import time

import pytest

from adminhttp import Admin
from bulkfill import order_no
from luabody import lua_body
from stack import free_port

TOKEN = "t0k3n-for-the-per-user-admin-tests-0123"
CONF_OVERRIDES = {"admin.port": free_port(), "admin.token": TOKEN}
BAD = ["0", "101", "-1", "x", "2.5"]
RANGE = "must be a whole number from 1 to 100"


@pytest.fixture(scope="module")
def admin(admin_server):
    return Admin(f"http://127.0.0.1:{admin_server.port}", TOKEN)


def coupon(ctl):
    return ctl.create_id("coupon", "create", "--name", "per user", "--type", "CASH", "--amount", "5.00",
                         "--total", 1000, "--start", "-1m", "--end", "+1d")


def sale(ctl, per_user=None, start="now", end="+1h", stock=10, buckets=None):
    args = ["activity", "create", "--coupon", coupon(ctl), "--stock", stock, "--start", start, "--end", end]
    if per_user is not None:
        args += ["--per-user", per_user]
    if buckets:
        args += ["--buckets", buckets]
    return ctl.create_id(*args)


def per_user_of(mysql, a):
    return int(mysql.rows(f"SELECT per_user FROM seckill_activity WHERE id = {a}")[0][0])


def activities_of(mysql, c):
    return int(mysql.rows(f"SELECT COUNT(*) FROM seckill_activity WHERE coupon_id = {c}")[0][0])


def show(ctl, a):
    return json.loads(ctl.run_ok("--json", "activity", "show", a).stdout)


_seq = iter(range(1, 4096))


def persist(mysql, a, user, slot):
    """A SUCCESS order of user in slot, as the consumer leaves it in MySQL: its row, its
    user coupon and the sale's sold_count. Returns its number."""
    no = f"{order_no(int(time.time() * 1000), next(_seq))}-{a}"
    c = mysql.rows(f"SELECT coupon_id FROM seckill_activity WHERE id = {a}")[0][0]
    mysql.rows("INSERT INTO seckill_order (order_no, user_id, activity_id, user_slot, coupon_id, accepted_at) "
               f"VALUES ('{no}', {user}, {a}, {slot}, {c}, UTC_TIMESTAMP(3))")
    mysql.rows(f"INSERT INTO user_coupon (user_id, coupon_id, source_ref) VALUES ({user}, {c}, '{no}')")
    mysql.rows(f"UPDATE seckill_activity SET sold_count = sold_count + 1 WHERE id = {a}")
    return no


def rebuilt(ctl, redis, conf, a):
    """Redis rebuilt from MySQL, as after a Redis that lost the sale's stock key."""
    redis("DEL", conf.key("stock", a))
    r = ctl.run_ok("activity", "warmup", a)
    assert "orders rebuilt from MySQL" in r.stdout, repr(r)


def checks(ctl, a):
    r = ctl("--json", "verify", a)
    return r.rc, {c["id"]: c for c in json.loads(r.stdout)["checks"]}


def test_create_refuses_a_limit_outside_1_to_100_and_creates_nothing(ctl, mysql):
    c = coupon(ctl)
    for bad in BAD:
        r = ctl("activity", "create", "--coupon", c, "--stock", 5, "--start", "now", "--end", "+1h",
                f"--per-user={bad}")
        assert r.rc != 0 and f"--per-user '{bad}': {RANGE}" in r.stderr, repr(r)
    assert activities_of(mysql, c) == 0


def test_the_admin_api_refuses_the_same_perUser_with_the_same_message(admin, ctl, mysql):
    c = coupon(ctl)
    for bad in [0, 101, -1, "x", 2.5, "2.5"]:
        r = admin.post("/admin/activities", {"couponId": c, "stock": 5, "start": "now", "end": "+1h",
                                             "perUser": bad})
        assert r.code == 400 and not r["success"], repr(r)
        assert f"perUser '{bad}': {RANGE}" in r["message"], repr(r)
    assert activities_of(mysql, c) == 0
    r = admin.post("/admin/activities", {"couponId": c, "stock": 5, "start": "now", "end": "+1h", "perUser": 3})
    assert r.code == 201 and r["success"] and r["perUser"] == 3, repr(r)
    assert per_user_of(mysql, r["id"]) == 3
    got = admin.get(f"/admin/activities/{r['id']}")
    assert got.code == 200 and got["perUser"] == 3, repr(got)


def test_the_limit_is_stored_warmed_shown_and_listed(ctl, mysql, redis, conf):
    a, one = sale(ctl, per_user=3), sale(ctl)
    assert (per_user_of(mysql, a), per_user_of(mysql, one)) == (3, 1)
    assert redis("HGET", conf.key("activity", a), "perUser") == "3"
    assert redis("HGET", conf.key("activity", one), "perUser") == "1"
    text = ctl.run_ok("activity", "show", a).stdout
    assert "per user   3 orders" in text, text
    assert "per user   1 order\n" in ctl.run_ok("activity", "show", one).stdout
    assert show(ctl, a)["perUser"] == 3 and show(ctl, one)["perUser"] == 1
    c = mysql.rows(f"SELECT coupon_id FROM seckill_activity WHERE id = {a}")[0][0]
    items = json.loads(ctl.run_ok("--json", "activity", "list", "--coupon", c).stdout)["items"]
    assert [(i["id"], i["perUser"]) for i in items] == [(a, 3)], items
    table = ctl.run_ok("activity", "list", "--coupon", c).stdout.splitlines()
    assert "per user" in table[0], table
    csv = ctl.run_ok("activity", "list", "--coupon", c, "--format", "csv").stdout.splitlines()
    assert "perUser" in csv[0].split(","), csv


def test_a_warmup_writes_the_limit_of_mysql_into_every_bucket(ctl, mysql, redis, conf):
    a = sale(ctl, per_user=4, start="+10m", end="+20m", buckets=2)
    tags = redis("HGET", conf.key("activity", a), "tags").split(",")
    assert len(tags) == 2, tags
    assert [redis("HGET", f"seckill:activity:{{{t}}}", "perUser") for t in tags] == ["4", "4"]
    for t in tags:
        redis("HDEL", f"seckill:activity:{{{t}}}", "perUser")
    ctl.run_ok("activity", "warmup", a)
    assert [redis("HGET", f"seckill:activity:{{{t}}}", "perUser") for t in tags] == ["4", "4"]
    ctl.run_ok("activity", "update", a, "--per-user", 6)
    assert per_user_of(mysql, a) == 6
    assert [redis("HGET", f"seckill:activity:{{{t}}}", "perUser") for t in tags] == ["6", "6"]
    assert ctl("verify", a).rc == 0


def test_the_limit_is_raised_any_time_and_lowered_only_before_any_order(ctl, mysql, redis, conf, ids):
    a = sale(ctl, per_user=3)
    key = conf.key("activity", a)
    r = ctl.run_ok("activity", "update", a, "--per-user", 5)
    assert "per user 5" in r.stdout, repr(r)
    assert (per_user_of(mysql, a), redis("HGET", key, "perUser")) == (5, "5")
    ctl.run_ok("activity", "update", a, "--per-user", 4)  # no order yet: lowered
    assert (per_user_of(mysql, a), redis("HGET", key, "perUser")) == (4, "4")
    for bad in BAD:
        r = ctl("activity", "update", a, f"--per-user={bad}")
        assert r.rc != 0 and f"--per-user '{bad}': {RANGE}" in r.stderr, repr(r)
    assert (per_user_of(mysql, a), redis("HGET", key, "perUser")) == (4, "4")

    # An order Redis holds, not yet in MySQL.
    user = ids()
    redis("HSET", conf.key("users", a), str(user), f"1-{a}")
    r = ctl("activity", "update", a, "--per-user", 2, "--name", "lowered")
    assert r.rc == 1 and "--per-user 2 is below" in r.stderr and "in Redis" in r.stderr, repr(r)
    assert (per_user_of(mysql, a), redis("HGET", key, "perUser")) == (4, "4")
    assert redis("HGET", key, "name") != "lowered"
    redis("HDEL", conf.key("users", a), str(user))

    # The same order in MySQL as well.
    persist(mysql, a, user, 1)
    rebuilt(ctl, redis, conf, a)
    r = ctl("activity", "update", a, "--per-user", 2)
    assert r.rc == 1 and "--per-user 2 is below" in r.stderr and "in MySQL" in r.stderr, repr(r)
    assert (per_user_of(mysql, a), redis("HGET", key, "perUser")) == (4, "4")
    ctl.run_ok("activity", "update", a, "--per-user", 7)
    assert (per_user_of(mysql, a), redis("HGET", key, "perUser")) == (7, "7")
    assert ctl("verify", a).rc == 0


def test_update_lua_itself_refuses_a_lower_limit_on_a_bucket_with_orders(ctl, redis, conf, ids):
    """seckillctl looks before it writes; the script looks again, atomically with the write,
    so that an order accepted in between refuses the edit."""
    a = sale(ctl, per_user=3)
    keys = [conf.key(k, a) for k in ("activity", "stock", "users", "orders")]
    redis("HSET", keys[3], f"2-{a}", "PROCESSING")
    assert redis("EVAL", lua_body("update"), 4, *keys, "", "", "", "", "carry", "2") == ["ORDERED"]
    assert redis("HGET", keys[0], "perUser") == "3"
    assert redis("EVAL", lua_body("update"), 4, *keys, "", "", "", "", "carry", "8")[0] == "OK"
    assert redis("HGET", keys[0], "perUser") == "8"
    redis("HDEL", keys[3], f"2-{a}")
    assert redis("EVAL", lua_body("update"), 4, *keys, "", "", "", "", "carry", "2")[0] == "OK"
    assert redis("HGET", keys[0], "perUser") == "2"


def test_the_admin_api_raises_and_refuses_to_lower_as_the_cli_does(admin, ctl, mysql, redis, conf, ids):
    a = sale(ctl, per_user=2)
    r = admin.request("PATCH", f"/admin/activities/{a}", json={"perUser": 4})
    assert r.code == 200 and r["success"] and r["perUser"] == 4, repr(r)
    r = admin.request("PATCH", f"/admin/activities/{a}", json={"perUser": 101})
    assert r.code == 400 and f"perUser '101': {RANGE}" in r["message"], repr(r)
    persist(mysql, a, ids(), 1)
    rebuilt(ctl, redis, conf, a)
    r = admin.request("PATCH", f"/admin/activities/{a}", json={"perUser": 3})
    assert r.code != 200 and not r["success"] and "perUser 3 is below" in r["message"], repr(r)
    assert per_user_of(mysql, a) == 4 and redis("HGET", conf.key("activity", a), "perUser") == "4"


def test_a_warmup_rebuilds_the_users_hash_by_holder(ctl, mysql, redis, conf, ids):
    a = sale(ctl, per_user=3)
    u, v = ids(), ids()
    nos = {f"{u}": persist(mysql, a, u, 1), f"{u}#2": persist(mysql, a, u, 2), f"{u}#3": persist(mysql, a, u, 3),
           f"{v}": persist(mysql, a, v, 1)}
    rebuilt(ctl, redis, conf, a)
    flat = redis("HGETALL", conf.key("users", a))
    assert dict(zip(flat[0::2], flat[1::2])) == nos
    assert redis("GET", conf.key("stock", a)) == "6"
    r = ctl("verify", a)
    assert r.rc == 0, repr(r)
    assert "PASS  I2 at most 3 per user: users with 4+ MySQL rows 0;" in r.stdout, repr(r)
    assert "distinct user slots 4" in r.stdout, repr(r)

    # order show names the slot from 2 on; order list --user lists all of the user's orders.
    shown = ctl.run_ok("order", "show", nos[f"{u}#2"]).stdout
    assert f"user {u} (slot 2)" in shown, shown
    assert json.loads(ctl.run_ok("--json", "order", "show", nos[f"{u}#3"]).stdout)["userSlot"] == 3
    assert "userSlot" not in json.loads(ctl.run_ok("--json", "order", "show", nos[f"{u}"]).stdout)
    assert "(slot" not in ctl.run_ok("order", "show", nos[f"{u}"]).stdout
    listed = json.loads(ctl.run_ok("--json", "order", "list", "--activity", a, "--user", u).stdout)["items"]
    assert sorted(i["orderNo"] for i in listed) == sorted(nos[k] for k in nos if k.startswith(f"{u}"))


def test_verify_fails_i2_on_a_row_in_a_slot_above_the_limit(ctl, mysql, redis, conf, ids):
    a = sale(ctl, per_user=3)
    u = ids()
    for slot in (1, 2, 3):
        persist(mysql, a, u, slot)
    rebuilt(ctl, redis, conf, a)
    assert checks(ctl, a)[0] == 0
    persist(mysql, a, u, 4)
    rebuilt(ctl, redis, conf, a)
    rc, got = checks(ctl, a)
    assert rc == 1 and not got["I2"]["ok"], got
    assert "users with 4+ MySQL rows 1, rows in a slot outside 1..3 1" in got["I2"]["detail"], got["I2"]
    assert f"fields in a slot above 3 (e.g. {u}#4)" in got["I2"]["detail"], got["I2"]
    assert all(got[i]["ok"] for i in ("I1", "I3", "I4", "I5")), got


def test_verify_fails_i2_on_a_redis_holder_above_the_limit(ctl, mysql, redis, conf, ids):
    a = sale(ctl, per_user=3)
    u = ids()
    persist(mysql, a, u, 1)
    rebuilt(ctl, redis, conf, a)
    assert checks(ctl, a)[0] == 0
    redis("HSET", conf.key("users", a), f"{u}#9", f"{order_no(int(time.time() * 1000), 4095)}-{a}")
    rc, got = checks(ctl, a)
    assert rc == 1 and not got["I2"]["ok"], got
    assert f"1 fields in a slot above 3 (e.g. {u}#9)" in got["I2"]["detail"], got["I2"]
    assert all(got[i]["ok"] for i in ("I1", "I3", "I4", "I5")), got
    redis("HDEL", conf.key("users", a), f"{u}#9")
    redis("HSET", conf.key("users", a), f"{u}#x", f"3-{a}")
    rc, got = checks(ctl, a)
    assert rc == 1 and "1 fields not a holder" in got["I2"]["detail"], got["I2"]
    redis("HDEL", conf.key("users", a), f"{u}#x")
    assert checks(ctl, a)[0] == 0
    # The gateway reads the limit from the activity hash: it must be MySQL's.
    redis("HSET", conf.key("activity", a), "perUser", "2")
    rc, got = checks(ctl, a)
    assert rc == 1 and "activity hash perUser 2 in 1 bucket(s), MySQL per_user 3" in got["I2"]["detail"], got


def test_verify_reads_as_before_on_a_sale_of_one_per_user(ctl, mysql, redis, conf, ids):
    a = sale(ctl)
    u, v = ids(), ids()
    persist(mysql, a, u, 1)
    persist(mysql, a, v, 1)
    rebuilt(ctl, redis, conf, a)
    r = ctl("verify", a)
    assert r.rc == 0, repr(r)
    assert ("PASS  I2 one per user: users with 2+ MySQL rows 0; users hash 2 entries, orders shared by two "
            "users 0; MySQL rows matching the users hash 2/2 (0 missing, 0 other order)\n") in r.stdout, r.stdout
    assert "rows 2 == distinct order_no 2 == distinct users 2;" in r.stdout, r.stdout
    # A second slot is beyond a limit of one, in Redis as in MySQL.
    redis("HSET", conf.key("users", a), f"{u}#2", f"5-{a}")
    rc, got = checks(ctl, a)
    assert rc == 1 and "1 fields in a slot above 1" in got["I2"]["detail"], got["I2"]
    redis("HDEL", conf.key("users", a), f"{u}#2")
    persist(mysql, a, u, 2)
    rebuilt(ctl, redis, conf, a)
    rc, got = checks(ctl, a)
    assert rc == 1 and "users with 2+ MySQL rows 1, rows in a slot outside 1..1 1" in got["I2"]["detail"], got
