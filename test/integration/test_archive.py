"""The end of a sale's life in Redis (`seckillctl activity archive`, the consumer's lifecycle
pass): once a sale ended and every order of it is final and in MySQL, its keys go but the
activity hash, which says `archived`; Redis memory comes back; nothing recreates a key.

Refused, changing nothing: a live sale, a sale with an order still PROCESSING, a sale MySQL
lacks an order of. Archived: every key of the sale's tag is gone but the activity hash and
keys that expire by themselves; the id leaves seckill:activities; MySQL records it; `activity
show` says so. A redelivered order afterwards recreates no key and the consumer finishes it.
Every write script refuses an archived sale. The lifecycle pass archives by itself. Ten sales
of 100,000 orders each, archived, leave Redis within a few MB of where it started.
"""

import concurrent.futures
import json
import socket
import time

import pytest

from buckets import bucket_key, buy as bucket_buy, users_of_bucket
from bulkfill import bulk_fill, bulk_rows
from sales import Sale, execute_script, wait_for_consumer
from stack import Consumer, poll_until, write_conf
from kafkaproduce import produce
from luabody import lua_body
from resp import Redis

# The module archives by hand; the schedule's own test starts a consumer of its own.
CONF_OVERRIDES = {"consumer.archive-after-ms": "0", "consumer.lifecycle-interval-ms": "200"}

GRACE_S = 5        # store/archive.h ARCHIVE_END_GRACE_MS
END_S = 3          # the window of the test sales


# ---- helpers ------------------------------------------------------------------------------

def scan(redis, pattern):
    keys, cursor = set(), "0"
    while True:
        cursor, page = redis("SCAN", cursor, "MATCH", pattern, "COUNT", "1000")
        keys.update(page)
        if str(cursor) == "0":
            return keys


def sale_keys(redis, aid):
    """Every key of the sale: its tag {A} and the tags {A.b.s} of its buckets."""
    return scan(redis, f"*{{{aid}}}*") | scan(redis, f"*{{{aid}.*}}*")


def snapshot(redis, mysql, aid):
    """What a refused archive must leave as it was: every key of the sale with its content
    (but those that expire by themselves: a rate-limit counter may lapse meanwhile), the set
    of activities, the sale's MySQL row and order rows."""
    keys = {}
    for k in sorted(sale_keys(redis, aid)):
        if redis("PTTL", k) >= 0:
            continue
        t = redis("TYPE", k)
        if t == "hash":
            v = sorted(redis("HGETALL", k))
        elif t == "zset":
            v = redis("ZRANGE", k, "0", "-1", "WITHSCORES")
        elif t == "set":
            v = sorted(redis("SMEMBERS", k))
        elif t == "stream":
            v = redis("XLEN", k)
        else:
            v = redis("GET", k)
        keys[k] = (t, v)
    listed = redis("SISMEMBER", "seckill:activities", str(aid))
    row = mysql.rows(f"SELECT status, sold_count, archived_at IS NULL, (SELECT COUNT(*) FROM seckill_order "
                     f"WHERE activity_id = {aid}) FROM seckill_activity WHERE id = {aid}")
    return keys, listed, row


def buy(api, aid, users):
    for u in users:
        r = api.execute(u, aid)
        assert r.code == 200, repr(r)


def wait_over(mysql, aid):
    """Until the sale is ENDED in MySQL (the lifecycle pass) and past the archive's grace."""
    poll_until(lambda: mysql.scalar(
        f"SELECT status = 'ENDED' AND end_time <= UTC_TIMESTAMP(3) - INTERVAL {GRACE_S + 0.3} SECOND "
        f"FROM seckill_activity WHERE id = {aid}") == "1", END_S + GRACE_S + 20, f"activity {aid} over")


def archived_field(redis, conf, aid):
    return redis("HGET", conf.key("activity", aid), "archived")


def assert_archived(redis, mysql, conf, aid):
    """Of the sale only its activity hash stays (each bucket's, with 'archived'), and keys
    that expire by themselves; it left seckill:activities; MySQL records it."""
    left = {k for k in sale_keys(redis, aid) if not k.startswith("seckill:activity:")}
    without_ttl = [k for k in left if redis("PTTL", k) < 0]
    assert not without_ttl, f"keys of archived sale {aid} without a TTL: {without_ttl}"
    assert all(k.split(":")[1] in ("rl", "brush", "ban", "token") for k in left), left
    assert archived_field(redis, conf, aid), "the activity hash says archived"
    assert redis("SISMEMBER", "seckill:activities", str(aid)) == 0
    assert mysql.scalar(f"SELECT archived_at IS NOT NULL FROM seckill_activity WHERE id = {aid}") == "1"


@pytest.fixture(scope="module")
def ended(ctl, api, mysql, redis, conf, ids, consumer, gateway):
    """Sales that ended a few seconds after the module starts, each sold through the
    gateway and persisted by the consumer; made at once, so that their ends pass together."""
    sales = {}
    # A sale of two buckets: one set of keys under each tag (bucket.h).
    coupon = ctl.create_id("coupon", "create", "--name", "b", "--type", "CASH", "--amount", "5.00",
                           "--total", 20, "--start", "-1m", "--end", "+1d")
    bucketed = ctl.create_id("activity", "create", "--coupon", coupon, "--stock", 10, "--start", "now",
                             "--end", f"+{END_S + 2}s", "--buckets", 2)
    users = users_of_bucket(ids, 0, 2, 2) + users_of_bucket(ids, 1, 2, 2)
    for u in users:
        status, body, _ = bucket_buy(lambda u, a: (lambda r: (r.code, r))(api.execute(u, a)), u, bucketed)
        assert status == 200, repr(body)
    sales["bucketed"] = (Sale(bucketed, coupon, 10), users)
    for name, n in (("processing", 2), ("missing_row", 3), ("archive", 5), ("redelivery", 2)):
        sale = ctl.create_sale(10, end=f"+{END_S}s")
        users = [ids() for _ in range(n)]
        buy(api, sale.activity_id, users)
        sales[name] = (sale, users)
    for sale, users in sales.values():
        wait_for_consumer(mysql, redis, conf, sale.activity_id, expected_rows=len(users), consumer=consumer)
    for sale, _ in sales.values():
        wait_over(mysql, sale.activity_id)
    return sales


# ---- refusals ----------------------------------------------------------------------------

def test_a_live_sale_is_not_archived(ctl, api, mysql, redis, conf, ids, consumer):
    sale = ctl.create_sale(10)
    aid = sale.activity_id
    buy(api, aid, [ids()])
    wait_for_consumer(mysql, redis, conf, aid, expected_rows=1, consumer=consumer)
    before = snapshot(redis, mysql, aid)
    r = ctl("activity", "archive", aid)
    assert r.rc == 1 and "only an ENDED or CANCELLED sale" in r.stderr and "nothing was changed" in r.stderr, repr(r)
    assert snapshot(redis, mysql, aid) == before
    assert r.stdout == ""


def test_an_order_processing_refuses_the_archive(ctl, mysql, redis, conf, ended):
    sale, _ = ended["processing"]
    aid = sale.activity_id
    # A reservation that never reached Kafka (a gateway died before producing it).
    order_no = f"{(int(time.time() * 1000) - 1704067200000) << 22 | 1021 << 12}-{aid}"
    execute_script_at_end(redis, conf, aid, order_no)
    before = snapshot(redis, mysql, aid)
    r = ctl("activity", "archive", aid)
    assert r.rc == 1 and "reservations not yet in Kafka" in r.stderr, repr(r)
    assert snapshot(redis, mysql, aid) == before
    # The same order PROCESSING in the orders hash but in no set (no counter says so: the
    # archive reads the hash).
    redis("ZREM", conf.key("resv", aid), f"{order_no}|777")
    before = snapshot(redis, mysql, aid)
    r = ctl("activity", "archive", aid)
    assert r.rc == 1 and "1 order(s) PROCESSING" in r.stderr, repr(r)
    assert snapshot(redis, mysql, aid) == before


def execute_script_at_end(redis, conf, aid, order_no):
    """execute.lua's reservation of user 777, accepted just before the sale's end."""
    end_ms = int(redis("HGET", conf.key("activity", aid), "end"))
    execute_script(redis, conf, aid, 777, order_no, end_ms - 1)


def test_an_order_missing_in_mysql_refuses_the_archive(ctl, mysql, redis, conf, ended):
    sale, users = ended["missing_row"]
    aid = sale.activity_id
    mysql.rows(f"DELETE FROM seckill_order WHERE activity_id = {aid} AND user_id = {users[0]}")
    before = snapshot(redis, mysql, aid)
    r = ctl("activity", "archive", aid)
    assert r.rc == 1 and "not every order is in MySQL" in r.stderr, repr(r)
    assert snapshot(redis, mysql, aid) == before
    # sold_count still says 3: the row count alone disagrees, and is enough.
    assert before[2][0][1] == "3" and before[2][0][3] == "2"


# ---- the archive -------------------------------------------------------------------------

def test_archive_keeps_only_the_activity_hash(ctl, api, mysql, redis, conf, ended):
    sale, users = ended["archive"]
    aid = sale.activity_id
    assert len(sale_keys(redis, aid)) > 3, "the sale has its keys before"
    r = ctl.run_ok("--json", "activity", "archive", aid)
    out = json.loads(r.stdout)
    assert out["archived"] is True and out["alreadyArchived"] is False and out["orders"] == len(users), out
    assert out["keysRemoved"] >= 2, out
    assert_archived(redis, mysql, conf, aid)
    assert int(archived_field(redis, conf, aid)) == out["archivedAtMs"]

    # Again: nothing left to do, said so, exit 0.
    again = ctl.run_ok("activity", "archive", aid)
    assert "was archived" in again.stdout, repr(again)
    show = ctl.run_ok("activity", "show", aid)
    assert "archived" in show.stdout and f"SUCCESS {len(users)}" in show.stdout, repr(show)
    js = json.loads(ctl.run_ok("--json", "activity", "show", aid).stdout)
    assert js["archived"] is True and js["archivedAt"] and js["orders"]["SUCCESS"] == len(users), js
    order_no = mysql.scalar(f"SELECT order_no FROM seckill_order WHERE activity_id = {aid} LIMIT 1")
    order = ctl.run_ok("order", "show", order_no)
    assert "MySQL: SUCCESS  Redis: archived" in order.stdout, repr(order)
    # Neither warmup nor cancel brings the sale back.
    for cmd in ("warmup", "cancel"):
        r = ctl("activity", cmd, aid)
        assert r.rc == 1 and "archived" in r.stderr, repr(r)
    assert_archived(redis, mysql, conf, aid)
    # The gateway still describes the sale, from the activity hash it keeps.
    poll_until(lambda: api.get(f"/seckill/activities/{aid}").code == 200, 10, "the activity answered")


def test_no_timer_visits_an_archived_sale(ctl, redis, conf, ended, gateway):
    """The gateway cached the sale while it ran; once archived, its reaper (every second)
    and its other timers send nothing about it: per-tick work follows the sales in Redis,
    not every sale ever run."""
    sale, _ = ended["archive"]
    aid = sale.activity_id
    if not archived_field(redis, conf, aid):
        ctl.run_ok("activity", "archive", aid)
    # The gateway's next refresh finds the sale gone from seckill:activities.
    time.sleep(int(conf.get("seckill.activity-refresh-ms")) / 1000 + 0.5)
    watch = Redis(*redis.addr, timeout=0.2)
    try:
        assert watch("MONITOR") == "OK"
        seen, until = [], time.monotonic() + 3 * int(conf.get("seckill.reaper-interval-ms")) / 1000
        while time.monotonic() < until:
            try:
                line = watch._read()
            except (socket.timeout, TimeoutError):
                continue
            if f"{{{aid}}}" in str(line):
                seen.append(line)
    finally:
        watch.close()
    assert not seen, f"commands on archived sale {aid}: {seen[:3]}"


def test_a_bucketed_sale_keeps_only_its_activity_hashes(ctl, mysql, redis, conf, ended):
    sale, users = ended["bucketed"]
    aid = sale.activity_id
    tags = json.loads(ctl.run_ok("--json", "activity", "show", aid).stdout)["redis"]["buckets"]
    tags = [b["tag"] for b in tags]
    assert len(tags) == 2 and all(redis("HLEN", bucket_key(conf, "users", t)) == 2 for t in tags), tags
    out = json.loads(ctl.run_ok("--json", "activity", "archive", aid).stdout)
    assert out["buckets"] == 2 and out["orders"] == len(users), out
    # Each bucket's activity hash stays, marked: a bucket's scripts read only their own slot.
    hashes = {bucket_key(conf, "activity", t) for t in tags}
    assert all(redis("HGET", h, "archived") == str(out["archivedAtMs"]) for h in hashes)
    left = {k for k in sale_keys(redis, aid) if redis("PTTL", k) < 0}
    assert left == hashes, left
    assert_archived(redis, mysql, conf, aid)


def test_a_late_redelivery_recreates_nothing(ctl, mysql, redis, conf, ended, consumer):
    sale, users = ended["redelivery"]
    aid = sale.activity_id
    rows = mysql.rows(f"SELECT order_no, user_id FROM seckill_order WHERE activity_id = {aid} ORDER BY id")
    ctl.run_ok("activity", "archive", aid)
    assert_archived(redis, mysql, conf, aid)

    # Kafka delivers one persisted order again, and one that Redis never knew.
    stranger = f"{(int(time.time() * 1000) - 1704067200000) << 22 | 1020 << 12}-{aid}"
    events = [json.dumps({"orderNo": no, "userId": int(u), "activityId": aid, "couponId": sale.coupon_id,
                          "createdAt": int(time.time() * 1000)}) for no, u in rows[:1]]
    events.append(json.dumps({"orderNo": stranger, "userId": 4242, "activityId": aid,
                              "couponId": sale.coupon_id, "createdAt": int(time.time() * 1000)}))
    produce(conf.get("kafka.brokers"), conf.get("kafka.topic"), events)
    poll_until(lambda: mysql.scalar(f"SELECT reason FROM seckill_order_failed WHERE order_no = '{stranger}'"),
               30, "the unknown order recorded FAILED")
    assert mysql.scalar(f"SELECT reason FROM seckill_order_failed WHERE order_no = '{stranger}'") == "REJECTED"
    log = poll_until(lambda: (lambda t: t if f"{rows[0][0]}" in t and "final in MySQL already" in t else None)(
        consumer.log_text()), 30, "the consumer's word on the persisted order")
    assert "archived" in log
    assert mysql.count(f"SELECT COUNT(*) FROM seckill_order WHERE activity_id = {aid}") == len(users)
    assert_archived(redis, mysql, conf, aid)


def test_every_write_script_refuses_an_archived_sale(ctl, mysql, redis, conf, ended):
    """Each script that writes a key of a sale, called on an archived one, creates none."""
    sale, users = ended["archive"]
    aid = sale.activity_id
    if not archived_field(redis, conf, aid):
        ctl.run_ok("activity", "archive", aid)
    k = {kind: conf.key(kind, aid) for kind in ("activity", "stock", "users", "orders", "resv", "queued", "claimed")}
    k["failed"], k["xout"], k["xin"], k["failedusers"] = (
        f"seckill:{n}:{{{aid}}}" for n in ("failed", "xfer:out", "xfer:in", "failedusers"))
    no = f"{(int(time.time() * 1000) - 1704067200000) << 22 | 1019 << 12}-{aid}"
    user = "31337"
    subj = [f"seckill:{n}:{{{aid}}}:{user}" for n in ("rl:user", "rl:ip", "brush", "ban", "token")]
    calls = {
        "execute": ([k["activity"], k["stock"], k["users"], k["orders"], k["resv"]] + subj,
                    ["1", "1000", "1000", "1", "1000", "60", "60", user, no, str(int(time.time() * 1000))]),
        "confirm": ([k["stock"], k["users"], k["orders"], k["resv"], k["queued"], k["claimed"], k["activity"],
                     k["failed"]], [no, user]),
        "finalize": ([k["orders"], k["claimed"], k["activity"]], [no, user]),
        "release": ([k["stock"], k["users"], k["orders"], k["resv"], k["failed"], k["activity"],
                     k["failedusers"]],
                    ["forget", no, user]),
        "supersede": ([k["users"], k["orders"], k["resv"], k["queued"], k["claimed"], k["failed"],
                       k["activity"], k["failedusers"]], ["0", no, user]),
        "rebalance": ([k["activity"], k["stock"], k["xout"]], ["out", "1", "1", str(aid)]),
        "cancel": ([k["activity"], k["stock"]], []),
    }
    answers = {}
    for name, (keys, args) in calls.items():
        answers[name] = redis("EVAL", lua_body(name), len(keys), *keys, *args)
    assert answers["execute"] == [["ENDED"]], answers
    assert answers["confirm"] == ["ARCHIVED"], answers
    assert answers["finalize"] == 1 and answers["release"] == 0, answers
    assert answers["supersede"] == [0, 0] and answers["rebalance"] == [] and answers["cancel"] == -2, answers
    assert_archived(redis, mysql, conf, aid)
    assert not [key for key in sale_keys(redis, aid) if key != k["activity"] and redis("PTTL", key) < 0]
    assert not [s for s in subj if redis("EXISTS", s)], "no subject key written either"


# ---- the schedule ------------------------------------------------------------------------

def test_the_lifecycle_pass_archives_by_itself(ctl, api, mysql, redis, conf, ids, consumer, tmp_path):
    sale = ctl.create_sale(10, end=f"+{END_S}s")
    aid = sale.activity_id
    users = [ids() for _ in range(3)]
    buy(api, aid, users)
    wait_for_consumer(mysql, redis, conf, aid, expected_rows=len(users), consumer=consumer)
    assert not archived_field(redis, conf, aid)
    scheduler = Consumer(write_conf(tmp_path / "seckill.conf", CONF_OVERRIDES | {"consumer.archive-after-ms": "1000"}),
                         tmp_path)
    scheduler.start()
    try:
        poll_until(lambda: mysql.scalar(f"SELECT archived_at IS NOT NULL FROM seckill_activity WHERE id = {aid}") == "1",
                   END_S + GRACE_S + 60, f"activity {aid} archived by the lifecycle pass")
        assert_archived(redis, mysql, conf, aid)
        assert f"archive: activity {aid} archived" in scheduler.log_text(since_start=True)
    finally:
        scheduler.finish()


# ---- sizes -------------------------------------------------------------------------------

SALES = 10
ORDERS = 100_000
SLACK = 3 * 1024 * 1024


def used_memory(redis):
    info = redis("INFO", "memory")
    return int(next(line.split(":")[1] for line in info.splitlines() if line.startswith("used_memory:")))


def test_ten_sales_of_100000_orders_leave_redis_as_it_was(ctl, api, mysql, redis, conf, ids, consumer):
    """Redis memory after 10 sales of 100,000 orders each, all archived, is back within a few
    MB of where it started; the orders are written straight into Redis and MySQL in the
    shape the gateway and the consumer leave a persisted sale in (test/lib/bulkfill.py)."""
    start = used_memory(redis)
    sales = []
    ms = int(time.time() * 1000) - 3_600_000
    # MySQL's rows are written on a thread while Redis is filled: the two take as long.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as rows:
        written = []
        for i in range(SALES):
            # Filled after its end: nothing but the fill writes its keys.
            sale = ctl.create_sale(ORDERS + 10, end=f"+{END_S}s")
            first = ids()
            written.append(rows.submit(bulk_rows, mysql, sale.activity_id, sale.coupon_id, ORDERS, first,
                                       ms + i * 100))
            assert bulk_fill(redis, conf, sale.activity_id, ORDERS, first, ms=ms + i * 100) == ORDERS
            sales.append(sale)
        for w in written:
            w.result()
    grown = used_memory(redis) - start
    assert grown > SALES * ORDERS * 50, f"the sales take Redis memory: {grown} bytes"
    sample = mysql.scalar(f"SELECT order_no FROM seckill_order WHERE activity_id = {sales[0].activity_id} "
                          f"ORDER BY id DESC LIMIT 1")
    assert redis("HGET", conf.key("orders", sales[0].activity_id), sample) == "SUCCESS", "rows match Redis"
    for sale in sales:
        wait_over(mysql, sale.activity_id)
        r = ctl.run_ok("--json", "activity", "archive", sale.activity_id)
        assert json.loads(r.stdout)["orders"] == ORDERS, r
    state = {}

    def back():
        state["used"] = used_memory(redis)
        return state["used"] - start < SLACK

    poll_until(back, 30, f"Redis memory back within {SLACK} bytes of {start} (now {state.get('used')})")
    for sale in sales:
        assert_archived(redis, mysql, conf, sale.activity_id)
        r = api.get(f"/seckill/activities/{sale.activity_id}")
        assert r.code == 200, repr(r)
