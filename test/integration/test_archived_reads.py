"""Reads of an archived sale. Archiving keeps a finished sale's activity hash alone in Redis
(with `archived` set before anything else goes) and takes the sale out of
seckill:activities; MySQL keeps every order. Every read endpoint of the gateway must answer
as it did before: the stock and the activity from the hash, the orders from MySQL through
seckill-admin, execute the same 409. With seckill-admin stopped or frozen, the reads that
need it answer 503 promptly; an activity that never existed answers as it always did.

The archive is done here by hand, as the archive command does it, on a sale run to its end
through the real gateway and consumer and fully persisted first."""

import signal
import threading
import time

import pytest

from buckets import users_of_bucket
from sales import execute_script, wait_for_consumer
from stack import free_port, poll_until
from gatewayhttp import Api, gateway_metrics, jwt_sign

TOKEN = "t0k3n-for-the-archived-reads-tests-0123456789"
# A short request timeout: a frozen admin is given up after it.
CONF_OVERRIDES = {"admin.port": free_port(), "admin.token": TOKEN, "http.request-timeout-ms": "4000",
                  "kafka.producer.message.timeout.ms": "2000",
                  "consumer.lifecycle-interval-ms": "200", "seckill.reaper-interval-ms": "200",
                  "seckill.pre-reduce-timeout": "20"}

ORDERNO_EPOCH_MS = 1704067200000
SALE_SECONDS = 15


@pytest.fixture(scope="module")
def archived(redis, conf):
    """The sales this module archives. At its end their hashes go too, so that they read as
    sales that never existed: other modules' gateways run without seckill-admin, and would
    answer a generated read of one (test_openapi.py) 503."""
    ids = []
    yield ids
    for activity_id in ids:
        redis("DEL", conf.key("activity", activity_id))


def archive(redis, conf, activity_id, archived):
    """What `seckillctl activity archive` does to Redis: `archived` (and the stock left)
    into the activity hash first, then every other key of the sale deleted, then the sale
    out of seckill:activities."""
    archived.append(activity_id)
    hash_key = conf.key("activity", activity_id)
    left = redis("GET", conf.key("stock", activity_id))
    redis("HSET", hash_key, "archived", str(int(time.time() * 1000)), "stockLeft", left or "0")
    doomed = set()
    for pattern in (f"*{{{activity_id}}}*", f"*{{{activity_id}.*"):
        cursor = "0"
        while True:
            cursor, keys = redis("SCAN", cursor, "MATCH", pattern, "COUNT", "1000")
            doomed.update(keys)
            if cursor == "0":
                break
    doomed.discard(hash_key)
    for key in doomed:
        redis("DEL", key)
    redis("SREM", "seckill:activities", str(activity_id))


def expired_order(redis, conf, api, sale, user, buyer_order_no):
    """A reservation of this gateway's node, 30 s old, that never reached Kafka: the reaper
    expires it (FAILED, its unit back in stock) and a consumer records it in MySQL."""
    node = (int(buyer_order_no.split("-")[0]) >> 12) & 1023
    accepted_ms = int(time.time() * 1000) - 30_000
    order_no = f"{((accepted_ms - ORDERNO_EPOCH_MS) << 22) | (node << 12) | 4095}-{sale}"
    execute_script(redis, conf, sale, user, order_no, accepted_ms)
    return order_no


def reads(api, sale, users, orders):
    """Every read answer of the sale: {request: (code, body)}."""
    paths = [f"/seckill/stock/{sale}", f"/seckill/activities/{sale}"]
    for u in users:
        paths += [f"/seckill/result?userId={u}&activityId={sale}", f"/seckill/result?userId={u}&activityId={sale}&wait=5"]
    for o in orders:
        paths += [f"/seckill/orders/{o}", f"/seckill/orders/{o}?wait=5"]
    out = {}
    for p in paths:
        start = time.monotonic()
        r = api.get(p)
        assert time.monotonic() - start < 2, f"{p} took {time.monotonic() - start:.1f}s: a final order answers at once"
        out[p] = (r.code, r.json)
    return out


def refusal(api, user, sale):
    r = api.execute(user, sale)
    body = dict(r.json)
    body.pop("seckillTime", None)
    return r.code, body


@pytest.fixture(scope="module")
def archived_sale(ctl, gateway, consumer, admin_server, api, redis, mysql, conf, ids, archived):
    """A sale of 3 run to its end: two SUCCESS orders, one FAILED (expired, its unit back:
    1 left), persisted; the answers of every read before the archive; then archived."""
    sale = ctl.create_sale(3, start="-50s", end=f"+{SALE_SECONDS}s").activity_id
    buyers = [ids(), ids()]
    won = []
    for u in buyers:
        r = api.execute(u, sale)
        assert r.code == 200, repr(r)
        won.append(r["orderNo"])
    lost = ids()
    failed = expired_order(redis, conf, api, sale, lost, won[0])
    for o in won:
        poll_until(lambda: api.order_status(o) == "SUCCESS", 30, f"order {o} SUCCESS")
    poll_until(lambda: api.order_status(failed) == "FAILED", 30, "the expired order FAILED")
    poll_until(lambda: mysql.count(f"SELECT COUNT(*) FROM seckill_order_failed WHERE order_no = '{failed}'") == 1,
               30, "the FAILED order recorded in MySQL")
    poll_until(lambda: redis("XLEN", conf.key("failed", sale)) == 0, 30, "the failed stream drained")
    wait_for_consumer(mysql, redis, conf, sale, expected_rows=2, consumer=consumer)
    poll_until(lambda: api.get(f"/seckill/activities/{sale}")["status"] == "ENDED", SALE_SECONDS + 10,
               "the sale to end")
    never = ids()
    users = buyers + [lost, never]
    # An order number of this sale that no order has.
    unknown = f"{int(won[0].split('-')[0]) + 7}-{sale}"
    orders = won + [failed, unknown]
    before = reads(api, sale, users, orders)
    latecomer = ids()
    before_execute = refusal(api, latecomer, sale)
    archive(redis, conf, sale, archived)
    return {"sale": sale, "users": users, "orders": orders, "won": won, "failed": failed, "lost": lost,
            "never": never, "unknown": unknown, "before": before, "latecomer": latecomer,
            "before_execute": before_execute}


def test_the_answers_before_the_archive_are_the_live_ones(archived_sale):
    """What the comparison rests on: the sale's final orders as a live sale answers them."""
    a = archived_sale
    before, sale = a["before"], a["sale"]
    assert before[f"/seckill/stock/{sale}"] == (200, {"success": True, "activityId": sale, "stock": 1})
    assert before[f"/seckill/activities/{sale}"][1]["status"] == "ENDED"
    assert before[f"/seckill/activities/{sale}"][1]["stockLeft"] == 1
    for o in a["won"]:
        assert before[f"/seckill/orders/{o}"] == (200, {"success": True, "orderNo": o, "activityId": sale,
                                                        "status": "SUCCESS"})
    assert before[f"/seckill/orders/{a['failed']}"][1]["status"] == "FAILED"
    assert before[f"/seckill/orders/{a['unknown']}"][0] == 404
    assert before[f"/seckill/result?userId={a['never']}&activityId={sale}"][0] == 404
    assert a["before_execute"][0] == 409 and a["before_execute"][1]["status"] == "ENDED"


def test_every_read_of_an_archived_sale_answers_as_before(archived_sale, api, redis, conf, gateway_with):
    a = archived_sale
    sale = a["sale"]
    assert redis("EXISTS", conf.key("orders", sale)) == 0 and redis("SISMEMBER", "seckill:activities", str(sale)) == 0
    # The gateway that knew the sale live, and one that never did (its cache empty).
    fresh = Api(gateway_with(dict(CONF_OVERRIDES)).base_url)
    for who, client in (("the gateway that saw the sale", api), ("a gateway started after the archive", fresh)):
        after = reads(client, sale, a["users"], a["orders"])
        for path, answer in a["before"].items():
            assert after[path] == answer, f"{who}: {path}: before the archive {answer}, after {after[path]}"
        assert refusal(client, a["latecomer"], sale) == a["before_execute"], who
        assert refusal(client, a["never"], sale) == (a["before_execute"][0],
                                                     dict(a["before_execute"][1], userId=a["never"])), who


def test_archived_sale_reads_with_the_admin_stopped_or_frozen(archived_sale, api, admin_server, gateway):
    a = archived_sale
    sale = a["sale"]
    forwarded = [f"/seckill/result?userId={a['users'][0]}&activityId={sale}", f"/seckill/orders/{a['won'][0]}",
                 f"/seckill/orders/{a['failed']}?wait=5"]
    failures = lambda: gateway_metrics(gateway.conf.http_port).get("seckill_archive_forward_failures_total", 0)
    counted = failures()
    admin_server.stop()
    try:
        for path in forwarded:
            start = time.monotonic()
            r = api.get(path)
            took = time.monotonic() - start
            assert r.code == 503 and r.status == "UNAVAILABLE", (path, r)
            assert r.headers.get("Retry-After") == "1", (path, r.headers)
            assert took < 1, f"{path}: 503 after {took:.1f}s with the admin's port closed"
        # What the hash holds needs no admin.
        assert (api.get(f"/seckill/stock/{sale}").code, api.get(f"/seckill/activities/{sale}").code) == (200, 200)
    finally:
        admin_server.start()
    assert failures() >= counted + len(forwarded)
    assert "seckill-admin at" in gateway.log_text() and "gave no answer" in gateway.log_text()

    # Frozen: the read is given up at http.request-timeout-ms (4 s), not held.
    admin_server.proc.send_signal(signal.SIGSTOP)
    try:
        start = time.monotonic()
        r = api.get(forwarded[1])
        took = time.monotonic() - start
        assert r.code == 503 and r.status == "UNAVAILABLE", repr(r)
        assert 3.5 < took < 6, f"503 after {took:.1f}s; http.request-timeout-ms is 4000"
    finally:
        admin_server.proc.send_signal(signal.SIGCONT)
    poll_until(lambda: api.get(forwarded[1]).code == 200, 10, "reads through the admin again")
    assert api.get(forwarded[1]).json == a["before"][forwarded[1]][1]


def test_an_activity_that_never_existed_answers_as_ever(api, archived_sale):
    missing = 9_007_199_254_740_000
    assert api.get(f"/seckill/stock/{missing}").json == {"success": False, "status": "NOT_FOUND",
                                                          "message": "no such activity"}
    assert api.get(f"/seckill/activities/{missing}").code == 404
    r = api.get(f"/seckill/result?userId=5&activityId={missing}&wait=3")
    assert (r.code, r.json) == (404, {"success": False, "status": "NOT_FOUND",
                                      "message": "no order for this user and activity"})
    r = api.get(f"/seckill/orders/{archived_sale['won'][0].split('-')[0]}-{missing}")
    assert (r.code, r.json) == (404, {"success": False, "status": "NOT_FOUND", "message": "no such order"})
    r = api.execute(5, missing)
    assert (r.code, r.status) == (404, "NOT_FOUND")


def test_execute_on_an_archived_bucketed_sale_is_ended_for_every_bucket(ctl, api, redis, conf, ids, gateway_with,
                                                                         archived):
    """A gateway that never knew the sale sends every user to bucket 0's keys: the archived
    hash answers ENDED even for a user of another bucket (not 'the sale is being set up')."""
    coupon = ctl.create_sale(4).coupon_id
    sale = ctl.create_id("activity", "create", "--coupon", coupon, "--stock", "4", "--start", "-1m", "--end", "+2s",
                         "--buckets", "2")
    poll_until(lambda: api.get(f"/seckill/activities/{sale}").get("status") == "ENDED", 10, "the sale to end")
    archive(redis, conf, sale, archived)
    fresh = Api(gateway_with(dict(CONF_OVERRIDES)).base_url)
    for user in users_of_bucket(ids, 1, 2, 2) + users_of_bucket(ids, 0, 2, 1):
        r = fresh.execute(user, sale)
        assert (r.code, r.status) == (409, "ENDED"), (user, r)


def test_with_jwt_an_archived_order_is_its_owners_alone(archived_sale, gateway_with):
    """auth.mode = jwt: the owner sees their SUCCESS order as before the archive; anyone
    else, and the user whose order FAILED (a failure frees the user), get the 404 of a
    number never issued, as on a live sale."""
    a = archived_sale
    secret = "archived-reads-jwt-secret-0123456789abcdef"
    gw = gateway_with(dict(CONF_OVERRIDES, **{"auth.mode": "jwt", "auth.jwt-secret": secret}))
    api = Api(gw.base_url)

    def as_user(user, order_no):
        token = jwt_sign({"sub": str(user), "exp": int(time.time()) + 600}, secret)
        return api.get(f"/seckill/orders/{order_no}?wait=3", headers={"Authorization": f"Bearer {token}"})

    owner, other = a["users"][0], a["users"][1]
    r = as_user(owner, a["won"][0])
    assert (r.code, r.json) == a["before"][f"/seckill/orders/{a['won'][0]}"], repr(r)
    not_theirs = (404, {"success": False, "status": "NOT_FOUND", "message": "no such order"})
    assert (lambda r: (r.code, r.json))(as_user(other, a["won"][0])) == not_theirs
    assert (lambda r: (r.code, r.json))(as_user(a["lost"], a["failed"])) == not_theirs


def test_a_purchase_token_for_an_archived_sale_is_refused_as_for_the_ended_one(archived_sale, gateway_with, ids):
    """seckill.require-token: a gateway that never knew the sale refuses a token for it
    409 ENDED, as for the ended sale, not 404 as for one that never existed."""
    gw = gateway_with(dict(CONF_OVERRIDES, **{"seckill.require-token": "true",
                                              "seckill.token-secret": "archived-reads-token-secret-0123456789"}))
    api = Api(gw.base_url)
    r = api.get(f"/seckill/token?userId={ids()}&activityId={archived_sale['sale']}")
    assert (r.code, r.status, r["message"]) == (409, "ENDED", "the sale has ended"), repr(r)
    r = api.get(f"/seckill/token?userId={ids()}&activityId={archived_sale['sale']}")  # remembered: no lookup
    assert (r.code, r.status) == (409, "ENDED"), repr(r)
    r = api.get(f"/seckill/token?userId={ids()}&activityId=9007199254740000")
    assert (r.code, r.status) == (404, "NOT_FOUND"), repr(r)


def test_a_gateway_stopped_while_a_read_waits_on_the_admin_answers_it_and_exits_clean(archived_sale, admin_server,
                                                                                      gateway_with):
    """SIGTERM with a forward in flight (the admin frozen): the client gets its 503 at once,
    and the gateway exits 0 with nothing leaked (gateway_with checks both)."""
    gw = gateway_with(dict(CONF_OVERRIDES))
    api = Api(gw.base_url)
    answer = {}
    admin_server.proc.send_signal(signal.SIGSTOP)
    try:
        reader = threading.Thread(target=lambda: answer.update(r=api.get(f"/seckill/orders/{archived_sale['won'][0]}")))
        reader.start()
        poll_until(lambda: gateway_metrics(gw.conf.http_port).get("seckill_archive_forwards_in_flight") == 1, 5,
                   "the read forwarded to the admin")
        start = time.monotonic()
        assert gw.stop() == 0
        reader.join(10)
        assert time.monotonic() - start < 3, "the stop waited for the frozen admin"
    finally:
        admin_server.proc.send_signal(signal.SIGCONT)
    r = answer["r"]
    assert (r.code, r.status) == (503, "UNAVAILABLE"), repr(r)
