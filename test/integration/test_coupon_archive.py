"""The end of a coupon's life in Redis (`seckillctl coupon archive`, the consumer's lifecycle
pass): once a coupon's validity is over, the records of its user coupons leave the users'
hashes in Redis; MySQL keeps every one; nothing writes them back.

Refused, changing nothing: a coupon still valid. Archived: no field of the coupon's user
coupons is left in any user's hash, the user's other coupons stay, GET /coupons lists only
those, redeeming an archived one is 404, MySQL keeps the rows with their statuses, `coupon
show` says so, `coupon warmup` refuses it. The lifecycle pass archives by itself, and after
it neither a late order nor a redelivered redemption writes a record back. A coupon of a
million user coupons is walked without a Redis command over 10 ms, and Redis gives the
memory back.
"""

import json
import time

import pytest

from sales import execute_script, wait_for_consumer

from stack import Consumer, poll_until, write_conf
from kafkaproduce import produce

# The module archives by hand; the schedule's own test starts a consumer of its own.
CONF_OVERRIDES = {"consumer.coupon-archive-after-ms": "0", "consumer.lifecycle-interval-ms": "200"}

VALID_S = 8        # the short coupon's validity from the module's start
SALE_S = 6         # its sale's window


def user_key(user):
    return f"seckill:ucoupon:{{u{user}}}"


def listed(api, user):
    r = api.get("/coupons", params={"userId": user})
    assert r.code == 200, repr(r)
    return r["coupons"]


def fields_of(redis, user, uc_ids):
    """The fields of the user's hash that belong to the given user coupons."""
    names = set(redis("HKEYS", user_key(user)) or [])
    return {n for n in names if n.split(":")[0] in {str(i) for i in uc_ids}}


def short_coupon(ctl, valid_s, sale_s, stock):
    coupon = ctl.create_id("coupon", "create", "--name", "short", "--type", "CASH", "--amount", "5.00",
                           "--total", stock, "--start", "-1m", "--end", f"+{valid_s}s")
    aid = ctl.create_id("activity", "create", "--coupon", coupon, "--stock", stock, "--start", "now",
                        "--end", f"+{sale_s}s")
    return coupon, aid


def won(api, mysql, redis, conf, consumer, aid, users):
    """Each user buys in sale aid; returns {user: userCouponId} once each record is in Redis."""
    for u in users:
        r = api.execute(u, aid)
        assert r.code == 200, repr(r)
    wait_for_consumer(mysql, redis, conf, aid, expected_rows=len(users), consumer=consumer)
    rows = mysql.rows(f"SELECT u.user_id, u.id FROM user_coupon u JOIN seckill_order o ON o.order_no = u.source_ref "
                      f"WHERE o.activity_id = {aid}")
    out = {int(u): int(i) for u, i in rows}
    assert len(out) == len(users), rows
    for u, i in out.items():
        poll_until(lambda: redis("HEXISTS", user_key(u), str(i)) == 1, 20, f"user coupon {i} in Redis")
    return out


def redeem(api, mysql, user, uc_id, ref):
    r = api.post(f"/coupons/{uc_id}/use", json={"userId": user, "orderAmount": "100.00", "orderRef": ref})
    assert r.code == 200, repr(r)
    poll_until(lambda: mysql.scalar(f"SELECT status FROM user_coupon WHERE id = {uc_id}") == "USED", 30,
               f"user coupon {uc_id} USED in MySQL")


@pytest.fixture(scope="module")
def expired(ctl, api, mysql, redis, conf, ids, consumer, gateway):
    """Four users who won a coupon valid a few seconds (one of them redeemed it) and also
    hold a coupon valid a day; returned once the short one's validity is over."""
    short, short_sale = short_coupon(ctl, VALID_S, SALE_S, 10)
    users = [ids() for _ in range(4)]
    short_ucs = won(api, mysql, redis, conf, consumer, short_sale, users)
    used_user = users[0]
    redeem(api, mysql, used_user, short_ucs[used_user], f"chk-{used_user}")
    assert redis("HEXISTS", user_key(used_user), f"{short_ucs[used_user]}:used") == 1
    long_sale = ctl.create_sale(10)
    long_ucs = won(api, mysql, redis, conf, consumer, long_sale.activity_id, users)
    end_ms = int(mysql.scalar(f"SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01', end_time) DIV 1000 FROM coupon "
                              f"WHERE id = {short}"))
    poll_until(lambda: time.time() * 1000 > end_ms + 100, VALID_S + 30, f"coupon {short} past its end")
    return {"short": short, "short_sale": short_sale, "short_ucs": short_ucs, "long": long_sale.coupon_id,
            "long_ucs": long_ucs, "used_user": used_user}


def test_a_valid_coupon_is_not_archived(ctl, redis, expired):
    user = expired["used_user"]
    before = sorted(redis("HGETALL", user_key(user)))
    r = ctl("coupon", "archive", expired["long"])
    assert r.rc == 1 and "is valid until" in r.stderr and "nothing was changed" in r.stderr, repr(r)
    assert sorted(redis("HGETALL", user_key(user))) == before
    assert ctl.run_ok("--json", "coupon", "show", expired["long"]).stdout.count('"archivedAt":null') == 1


def test_archive_removes_the_records_and_mysql_keeps_them(ctl, api, mysql, redis, expired):
    short, short_ucs, long_ucs = expired["short"], expired["short_ucs"], expired["long_ucs"]
    for u, i in short_ucs.items():
        shown = {c["userCouponId"]: c["status"] for c in listed(api, u)}
        assert shown[i] == ("USED" if u == expired["used_user"] else "EXPIRED"), shown
    out = json.loads(ctl.run_ok("--json", "coupon", "archive", short).stdout)
    assert out["archived"] is True and out["alreadyArchived"] is False, out
    assert out["userCoupons"] == len(short_ucs), out
    # one field a user coupon, and the used mark and the event number of the redeemed one
    assert out["fieldsRemoved"] == len(short_ucs) + 2, out

    for u, i in short_ucs.items():
        assert fields_of(redis, u, [i]) == set(), f"user {u} still holds fields of user coupon {i}"
        assert redis("HEXISTS", user_key(u), str(long_ucs[u])) == 1, "the user's other coupon stays"
        assert [c["userCouponId"] for c in listed(api, u)] == [long_ucs[u]]
    user = expired["used_user"]
    again = api.post(f"/coupons/{short_ucs[user]}/use",
                     json={"userId": user, "orderAmount": "100.00", "orderRef": f"chk-{user}"})
    assert again.code == 404 and again.status == "NOT_FOUND", repr(again)

    statuses = dict(mysql.rows(f"SELECT id, status FROM user_coupon WHERE coupon_id = {short}"))
    assert {int(k): v for k, v in statuses.items()} == {
        i: "USED" if u == user else "EXPIRED" for u, i in short_ucs.items()}
    show = json.loads(ctl.run_ok("--json", "coupon", "show", short).stdout)
    assert show["archivedAt"] == out["archivedAt"] and show["issued"] == len(short_ucs), show
    assert "its user coupons are in MySQL only" in ctl.run_ok("coupon", "show", short).stdout

    # Run again: nothing left, exit 0, the first walk's time kept.
    twice = json.loads(ctl.run_ok("--json", "coupon", "archive", short).stdout)
    assert twice["alreadyArchived"] is True and twice["fieldsRemoved"] == 0, twice
    assert twice["archivedAt"] == out["archivedAt"], twice


def test_warmup_writes_nothing_of_an_archived_coupon(ctl, redis, expired):
    short = expired["short"]
    if not json.loads(ctl.run_ok("--json", "coupon", "show", short).stdout)["archivedAt"]:
        ctl.run_ok("coupon", "archive", short)
    r = ctl("coupon", "warmup", short)
    assert r.rc == 1 and "is archived" in r.stderr and "nothing was changed" in r.stderr, repr(r)
    for u, i in expired["short_ucs"].items():
        assert fields_of(redis, u, [i]) == set()


def test_bad_ids_are_refused(ctl):
    for bad in ("0", "-3", "abc", "9999999999999"):
        r = ctl("coupon", "archive", bad)
        assert r.rc != 0 and r.stdout == "", repr(r)
        assert "coupon" in r.stderr, repr(r)


# ---- sizes -------------------------------------------------------------------------------

BIG = 1_000_000
SLACK = 3 * 1024 * 1024
# HSETs one chunk of user coupon records, ARGV: user, id, user, id, ...
FILL = """
for i = 1, #ARGV, 2 do
  redis.call('HSET', 'seckill:ucoupon:{u' .. ARGV[i] .. '}', ARGV[i + 1], '{"couponId":0}')
end
return #ARGV / 2
"""


def used_memory(redis):
    info = redis("INFO", "memory")
    return int(next(line.split(":")[1] for line in info.splitlines() if line.startswith("used_memory:")))


def hdel_stats(redis):
    """HDEL's calls and µs spent in them since Redis started (INFO commandstats)."""
    line = next((l for l in redis("INFO", "commandstats").splitlines() if l.startswith("cmdstat_hdel:")),
                "cmdstat_hdel:calls=0,usec=0")
    fields = dict(kv.split("=") for kv in line.split(":", 1)[1].split(","))
    return int(fields["calls"]), int(fields["usec"])


def test_a_coupon_of_a_million_user_coupons_leaves_redis(ctl, mysql, redis, ids, slowlog):
    """A million user coupons of one expired coupon, in all three statuses, written straight
    into MySQL and Redis: the archive walks them all in commands bounded by a user's own fields, and
    Redis memory comes back to within a few MB of where it started."""
    coupon = ctl.create_id("coupon", "create", "--name", "big", "--type", "CASH", "--amount", "1.00",
                           "--total", BIG, "--start", "-1m", "--end", "+1s")
    first_user = ids() + 10**8   # beyond any id the module's ids() hands out
    first_id = int(mysql.scalar("SELECT COALESCE(MAX(id), 0) FROM user_coupon")) + 1_000_000
    start = used_memory(redis)
    try:
        mysql.rows("INSERT INTO user_coupon (id, user_id, coupon_id, source_ref, status) "
                   f"SELECT {first_id} + seq, {first_user} + seq, {coupon}, CONCAT('bulk-{coupon}-', seq), "
                   f"ELT(1 + seq MOD 3, 'EXPIRED', 'USED', 'UNUSED') FROM seq_1_to_{BIG}")
        for chunk in range(0, BIG, 5000):
            args = []
            for seq in range(chunk + 1, min(BIG, chunk + 5000) + 1):
                args += [str(first_user + seq), str(first_id + seq)]
            redis("EVAL", FILL, 0, *args)
        filled = used_memory(redis)
        assert filled - start > 50 * 1024 * 1024, (start, filled)
        redis("SLOWLOG", "RESET")
        calls_before, usec_before = hdel_stats(redis)
        began = time.monotonic()
        out = json.loads(ctl.run_ok("--json", "coupon", "archive", coupon).stdout)
        took = time.monotonic() - began
        assert out["userCoupons"] == BIG and out["fieldsRemoved"] == BIG, out
        # An HDEL whose cost grew with the coupon would make the average climb and every HDEL
        # slow, or would name more fields than SLOWLOG keeps (32 arguments, the rest summed up
        # in a last one). A few slow HDELs of a user's own few fields among a million are the
        # kernel not running Redis for a while (two cores, the other lane busy), so they are
        # named, not counted against the archive, up to a bound no per-coupon cost stays under.
        calls, usec = (a - b for a, b in zip(hdel_stats(redis), (calls_before, usec_before)))
        assert calls >= BIG, (calls, usec)
        slow = [e for e in redis("SLOWLOG", "GET", "1024") if str(e[3][0]).upper() == "HDEL"]
        wide = [e for e in slow if len(e[3]) >= 32 or "more arguments" in str(e[3][-1])]
        assert not wide, f"HDEL of a coupon's many fields in one command: {wide[:3]}"
        assert usec / calls < 50, f"{usec / calls:.1f} µs per HDEL over {calls}; slow ones: {slow[:3]}"
        assert len(slow) < 100, f"{len(slow)} HDELs over 10 ms: {slow[:3]}"
        assert redis("EXISTS", user_key(first_user + 1), user_key(first_user + BIG)) == 0
        assert used_memory(redis) - start < SLACK, (start, filled, used_memory(redis))
        print(f"archived {BIG} user coupons in {took:.1f} s; Redis {start} -> {filled} -> {used_memory(redis)} B")
    finally:
        ctl("coupon", "archive", coupon, timeout=600)
        mysql.rows(f"DELETE FROM user_coupon WHERE coupon_id = {coupon}")


# ---- the schedule ------------------------------------------------------------------------

def test_the_lifecycle_pass_archives_and_nothing_writes_back(ctl, api, mysql, redis, conf, ids, consumer,
                                                            gateway, tmp_path):
    coupon, aid = short_coupon(ctl, VALID_S, SALE_S, 10)
    users = [ids() for _ in range(3)]
    ucs = won(api, mysql, redis, conf, consumer, aid, users)
    redeem(api, mysql, users[0], ucs[users[0]], f"late-{users[0]}")
    # A reservation accepted just before the sale's end whose order reaches Kafka only after
    # the coupon is archived (a gateway's delivery held up): it is persisted late.
    end_ms = int(redis("HGET", conf.key("activity", aid), "end"))
    late_user = ids()
    late_no = f"{(end_ms - 1 - 1704067200000) << 22 | 1018 << 12}-{aid}"
    execute_script(redis, conf, aid, late_user, late_no, end_ms - 1)

    # The module's consumer archives by hand only: it would write the records back.
    consumer.stop()
    scheduler = Consumer(write_conf(tmp_path / "seckill.conf", CONF_OVERRIDES | {
        "consumer.coupon-archive-after-ms": "1000"}), tmp_path)
    scheduler.start()
    try:
        poll_until(lambda: mysql.scalar(f"SELECT archived_at IS NOT NULL FROM coupon WHERE id = {coupon}") == "1",
                   60, f"coupon {coupon} archived by the lifecycle pass")
        assert f"coupon archive: coupon {coupon}: the records of 3 user coupons left Redis" in \
            scheduler.log_text(since_start=True)
        for u, i in ucs.items():
            assert fields_of(redis, u, [i]) == set()

        # Kafka delivers the redemption again, and the late order for the first time.
        used = {"type": "coupon.used", "userCouponId": ucs[users[0]], "userId": users[0],
                "orderRef": f"late-{users[0]}", "discount": 500, "payable": 9500,
                "usedAt": int(time.time() * 1000) - 10_000}
        order = {"orderNo": late_no, "userId": late_user, "activityId": aid, "couponId": coupon,
                 "createdAt": end_ms - 1}
        produce(conf.get("kafka.brokers"), conf.get("kafka.topic"), [json.dumps(e, separators=(",", ":")) for e in (used, order)])
        poll_until(lambda: mysql.scalar(f"SELECT COUNT(*) FROM user_coupon WHERE source_ref = '{late_no}'") == "1",
                   60, "the late order's user coupon in MySQL")
        log = lambda: scheduler.log_text(since_start=True)  # noqa: E731
        poll_until(lambda: "1 user coupons of coupons due for their archive not written to Redis" in log(), 30,
                   "the consumer's word on the late order's record")
        poll_until(lambda: f"user coupon {ucs[users[0]]} order 'late-{users[0]}': its coupon {coupon} is due for "
                   "its archive" in log(), 30, "the consumer's word on the redelivered redemption")
        assert redis("EXISTS", user_key(late_user)) == 0
        assert fields_of(redis, users[0], [ucs[users[0]]]) == set()
    finally:
        scheduler.finish()
        consumer.start()
