"""The admin HTTP API (issue 15 item 6): seckill-admin on admin.port, bearer admin.token,
the seckillctl commands over HTTP. Against the real services: each route, the token
checks, a sale created over the API selling through the gateway, verify over the API
agreeing with `seckillctl verify`, and bad requests changing nothing in MySQL or Redis."""

import json
import socket
import subprocess

import pytest

from adminhttp import Admin
from sales import wait_for_consumer
from stack import AdminServer, BIN, ROOT, child_env, free_port, poll_until, write_conf

TOKEN = "t0k3n-for-the-admin-api-tests-0123456789"
CONF_OVERRIDES = {"admin.port": free_port(), "admin.token": TOKEN}


@pytest.fixture(scope="module")
def admin(admin_server):
    return Admin(f"http://127.0.0.1:{admin_server.port}", TOKEN)


def admin_run(conf, timeout=20):
    """seckill-admin -c FILE run to its exit (for configurations it must refuse)."""
    return subprocess.run([str(BIN / "seckill-admin"), "-c", str(conf.path)], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True, timeout=timeout)


def state(mysql, redis):
    """What a refused request must leave as it was: the rows of every table the commands
    write, and the Redis keys of sales and user coupons."""
    counts = mysql.rows("SELECT (SELECT COUNT(*) FROM coupon), (SELECT COALESCE(SUM(issued_count), 0) FROM coupon),"
                        " (SELECT COUNT(*) FROM seckill_activity),"
                        " (SELECT COUNT(*) FROM seckill_activity WHERE status = 'CANCELLED'),"
                        " (SELECT COUNT(*) FROM user_coupon)")[0]
    # Rate-limit and anti-brush counters expire on their own, seconds after an earlier
    # module's buyers (execute.lua alone writes them): they are no record a command keeps.
    keys = sorted(k for k in redis("KEYS", "seckill:*") if ":lease" not in k and ":node" not in k
                  and ":rl:" not in k and ":brush:" not in k)
    return counts, keys


# ---- the token ---------------------------------------------------------------------------


def test_every_admin_route_needs_the_token(admin):
    for method, path in (("GET", "/admin/stats"), ("POST", "/admin/coupons"), ("GET", "/admin/activities/1"),
                         ("GET", "/admin/no-such-route")):
        for token, headers in (("", {}), ("wrong" + TOKEN[5:], {}), ("", {"Authorization": f"Basic {TOKEN}"}),
                               ("", {"Authorization": TOKEN}), (TOKEN[:-1], {})):
            r = admin.request(method, path, token=token, headers=headers)
            assert r.code == 401 and r.status == "UNAUTHORIZED", (method, path, token, headers, r)
            assert r.headers.get("WWW-Authenticate", "").startswith("Bearer"), r.headers
    assert admin.get("/admin/stats").code == 200


def test_healthz_needs_no_token_and_says_nothing_more(admin):
    r = admin.get("/healthz", token="")
    assert r.code == 200 and r.json == {"success": True}, repr(r)


def test_a_short_token_or_no_port_is_refused_at_start(tmp_path):
    short = write_conf(tmp_path / "short.conf", {"admin.port": free_port(), "admin.token": "x" * 31})
    p = admin_run(short)
    assert p.returncode == 2 and "admin.token" in p.stderr and "32" in p.stderr, p
    # the same configuration stops the other binaries too: it is the config's error
    p = subprocess.run([str(BIN / "seckillctl"), "-c", str(short.path), "config", "check"], env=child_env(),
                       capture_output=True, text=True, timeout=20)
    assert p.returncode != 0 and "admin.token" in p.stderr, p
    off = write_conf(tmp_path / "off.conf", {"admin.port": "0", "admin.token": TOKEN})
    p = admin_run(off)
    assert p.returncode == 2 and "admin.port" in p.stderr, p
    bad = write_conf(tmp_path / "bad.conf", {"admin.port": "70000", "admin.token": TOKEN})
    p = admin_run(bad)
    assert p.returncode == 2 and "admin.port" in p.stderr, p


# ---- the routes --------------------------------------------------------------------------


def test_a_sale_created_over_the_api_sells_through_the_gateway(admin, api, ctl, consumer, mysql, redis, conf, ids):
    coupon = admin.create_coupon(10)
    shown = admin.get(f"/admin/coupons/{coupon}")
    assert shown.code == 200 and shown["id"] == coupon and shown["type"] == "CASH", repr(shown)
    activity = admin.create_activity(coupon, 3)
    users = [ids() for _ in range(5)]
    codes = [api.execute(u, activity).code for u in users]
    assert sorted(codes) == [200, 200, 200, 409, 409], codes
    wait_for_consumer(mysql, redis, conf, activity, expected_rows=3, consumer=consumer)

    over_api = admin.get(f"/admin/activities/{activity}/verify")
    assert over_api.code == 200 and over_api["success"] and over_api["ok"], repr(over_api)
    cli = ctl("--json", "verify", activity)
    assert cli.rc == 0, repr(cli)
    cli_json = json.loads(cli.last_line())
    assert [(c["id"], c["ok"]) for c in over_api["checks"]] == [(c["id"], c["ok"]) for c in cli_json["checks"]]
    assert over_api["activityId"] == cli_json["activityId"] == activity

    show = admin.get(f"/admin/activities/{activity}")
    assert show.code == 200 and show["id"] == activity, repr(show)
    assert mysql.count(f"SELECT sold_count FROM seckill_activity WHERE id = {activity}") == 3
    stats = admin.get("/admin/stats")
    assert stats.code == 200 and activity in [a["id"] for a in stats["activities"]], repr(stats)


def test_a_bucketed_sale_over_the_api_sells_out_across_its_buckets(admin, api, consumer, mysql, redis, conf, ids):
    coupon = admin.create_coupon(20)
    r = admin.post("/admin/activities", {"couponId": coupon, "stock": 8, "start": "now", "end": "+1h",
                                         "buckets": 4})
    assert r.code == 201, repr(r)
    activity = r["id"]
    show = admin.get(f"/admin/activities/{activity}")
    assert len(show["redis"]["buckets"]) == 4 and sum(b["stockLeft"] for b in show["redis"]["buckets"]) == 8, show
    # A gateway answers a bucketed sale once its cache holds the buckets (503 before).
    poll_until(lambda: activity in [x["activityId"] for x in api.get("/seckill/activities")["activities"]], 15,
               "the gateway's cache to hold the sale")
    codes = [api.execute(ids(), activity).code for _ in range(12)]
    assert codes.count(200) == 8, codes
    wait_for_consumer(mysql, redis, conf, activity, expected_rows=8, consumer=consumer)
    assert admin.get(f"/admin/activities/{activity}/verify")["ok"]


def test_grant_issues_one_user_coupon(admin, mysql, ids):
    coupon = admin.create_coupon(5)
    user = ids()
    r = admin.post(f"/admin/coupons/{coupon}/grant", {"userId": user, "ref": f"gift-{user}"})
    assert r.code == 200 and r["success"], repr(r)
    again = admin.post(f"/admin/coupons/{coupon}/grant", {"userId": user, "ref": f"gift-{user}"})
    assert again.code == 200 and again["id"] == r["id"], repr(again)
    assert mysql.count(f"SELECT COUNT(*) FROM user_coupon WHERE user_id = {user} AND coupon_id = {coupon}") == 1


def test_cancel_stops_the_sale_on_the_gateway(admin, api, ids):
    coupon = admin.create_coupon(10)
    activity = admin.create_activity(coupon, 4)
    r = admin.post(f"/admin/activities/{activity}/cancel")
    assert r.code == 200 and r["success"], repr(r)
    show = admin.get(f"/admin/activities/{activity}")
    assert show["status"] == "CANCELLED", repr(show)
    poll_until(lambda: api.execute(ids(), activity).status == "CANCELLED", 10, "the gateway to see the cancel")
    warm = admin.post(f"/admin/activities/{activity}/warmup")
    assert warm.code == 200, repr(warm)
    assert admin.post(f"/admin/coupons/{coupon}/warmup").code == 200


def test_deactivate_pauses_the_sale_and_activate_resumes_it(admin, api, mysql, redis, conf, consumer, ids):
    coupon = admin.create_coupon(10)
    activity = admin.create_activity(coupon, 4)
    assert api.execute(ids(), activity).code == 200
    r = admin.post(f"/admin/coupons/{coupon}/deactivate")
    assert r.code == 200 and r["success"] and r["status"] == "INACTIVE" and r["sales"] == 1, repr(r)
    assert mysql.scalar(f"SELECT status FROM coupon WHERE id = {coupon}") == "INACTIVE"
    assert api.execute(ids(), activity).status == "INACTIVE"
    r = admin.post(f"/admin/coupons/{coupon}/grant", {"userId": ids()})
    assert r.code == 409, repr(r)
    r = admin.post(f"/admin/coupons/{coupon}/activate")
    assert r.code == 200 and r["status"] == "ACTIVE", repr(r)
    assert api.execute(ids(), activity).code == 200
    assert admin.post("/admin/coupons/999999999999/deactivate").code == 404
    # Both orders persisted (with their user coupons) before the next test counts rows.
    wait_for_consumer(mysql, redis, conf, activity, expected_rows=2)


def test_missing_rows_wrong_methods_and_unknown_paths(admin):
    r = admin.get("/admin/activities/999999999999")
    assert r.code == 404 and r.status == "NOT_FOUND" and "999999999999" in r["message"], repr(r)
    r = admin.get("/admin/coupons/999999999999")
    assert r.code == 404 and r.status == "NOT_FOUND", repr(r)
    r = admin.post("/admin/coupons/999999999999/grant", {"userId": 1})
    assert r.code == 404, repr(r)
    r = admin.request("DELETE", "/admin/activities/1")
    assert r.code == 405 and r.headers["Allow"] == "GET, HEAD, PATCH", repr(r)
    r = admin.request("PUT", "/admin/coupons")
    assert r.code == 405 and r.headers["Allow"] == "GET, HEAD, POST", repr(r)
    r = admin.get("/admin/activities/1/cancel")
    assert r.code == 405 and r.headers["Allow"] == "POST", repr(r)
    r = admin.get("/admin/nothing")
    assert r.code == 404 and r.status == "NOT_FOUND", repr(r)
    r = admin.get("/elsewhere", token="")
    assert r.code == 404, repr(r)
    r = admin.post("/admin/coupons", data=b"{" + b" " * 70000 + b"}", headers={"Content-Type": "application/json"})
    assert r.code == 413 and r.status == "TOO_LARGE", repr(r)


BAD = [
    # (path, body or raw bytes, what the message names)
    ("/admin/coupons", b"not json", "JSON"),
    ("/admin/coupons", b"[1, 2]", "object"),
    ("/admin/coupons", b'{"name": "a\\u0000b", "type": "CASH", "total": 1, "start": "now", "end": "+1h"}', "NUL"),
    ("/admin/coupons", {"name": "x", "type": "CASH", "amount": "5.00", "total": 5, "start": "now", "end": "+1h",
                        "colour": "red"}, "colour"),
    ("/admin/coupons", {"name": "x", "type": "CASH", "amount": "5.00", "total": True, "start": "now",
                        "end": "+1h"}, "total"),
    ("/admin/coupons", {"name": "x", "type": "CASH", "amount": "5.00", "total": 5, "start": "now"}, "end"),
    ("/admin/coupons", {"name": "x", "type": "BOGUS", "total": 5, "start": "now", "end": "+1h"}, "type"),
    ("/admin/coupons", {"name": "x", "type": "CASH", "amount": "5.00", "minOrder": "1x", "total": 5,
                        "start": "now", "end": "+1h"}, "minOrder"),
    ("/admin/coupons", {"name": "x", "type": "CASH", "amount": "5.00", "total": 5, "start": "+2h",
                        "end": "+1h"}, "end"),
    ("/admin/activities", {"couponId": 1, "stock": "abc", "start": "now", "end": "+1h"}, "stock"),
    ("/admin/activities", {"couponId": 1, "stock": 0, "start": "now", "end": "+1h"}, "stock"),
    ("/admin/activities", {"couponId": "--json", "stock": 1, "start": "now", "end": "+1h"}, "couponId"),
    ("/admin/activities", {"couponId": 1, "stock": 5, "start": "now", "end": "+1h", "buckets": 0}, "buckets"),
    ("/admin/activities", {"couponId": 1, "stock": 5, "start": "now", "end": "+1h", "buckets": 17}, "buckets"),
    ("/admin/activities", {"couponId": 1, "stock": 2, "start": "now", "end": "+1h", "buckets": 3}, "buckets"),
    ("/admin/activities/abc/cancel", None, "abc"),
    ("/admin/activities/-1/cancel", None, "-1"),
    ("/admin/activities/1/cancel", {"force": True}, "force"),
    ("/admin/coupons/1/grant", {"userId": "0"}, "userId"),
    ("/admin/coupons/1/grant", {}, "userId"),
]


def test_bad_requests_get_400_and_change_nothing(admin, mysql, redis):
    before = state(mysql, redis)
    for path, body, word in BAD:
        if isinstance(body, bytes):
            r = admin.post(path, data=body, headers={"Content-Type": "application/json"})
        else:
            r = admin.post(path, body)
        assert r.code == 400 and r.status == "INVALID", (path, body, r)
        assert word in r["message"], (path, body, r)
        assert "--" not in r["message"] or word == "couponId", f"message names an option, not a field: {r!r}"
    assert state(mysql, redis) == before


def test_archive_is_refused_for_a_live_sale_and_done_for_an_ended_one(admin, api, consumer, mysql, redis, conf, ids):
    coupon = admin.create_coupon(10)
    live = admin.create_activity(coupon, 2)
    ended = admin.create_activity(coupon, 2, end="+2s")
    user = ids()
    assert api.execute(user, ended).code == 200
    wait_for_consumer(mysql, redis, conf, ended, expected_rows=1, consumer=consumer)
    before = state(mysql, redis)
    r = admin.post(f"/admin/activities/{live}/archive")
    assert r.code == 409 and r.status == "REFUSED" and "ENDED or CANCELLED" in r["message"], repr(r)
    assert state(mysql, redis) == before
    # Over once the lifecycle pass marked it ENDED and the 5 s after its end passed.
    poll_until(lambda: mysql.scalar(f"SELECT status = 'ENDED' AND end_time <= UTC_TIMESTAMP(3) - INTERVAL 5.3 SECOND "
                                    f"FROM seckill_activity WHERE id = {ended}") == "1", 30, "the sale over")
    r = admin.post(f"/admin/activities/{ended}/archive")
    assert r.code == 200 and r["archived"] and not r["alreadyArchived"] and r["orders"] == 1, repr(r)
    assert redis("EXISTS", conf.key("orders", ended)) == 0 and redis("HGET", conf.key("activity", ended), "archived")
    again = admin.post(f"/admin/activities/{ended}/archive")
    assert again.code == 200 and again["alreadyArchived"], repr(again)
    show = admin.get(f"/admin/activities/{ended}")
    assert show.code == 200 and show["archived"] and show["orders"]["SUCCESS"] == 1, repr(show)


def test_a_sale_beyond_the_coupon_is_refused_and_changes_nothing(admin, mysql, redis):
    coupon = admin.create_coupon(3)
    before = state(mysql, redis)
    r = admin.post("/admin/activities", {"couponId": coupon, "stock": 4, "start": "now", "end": "+1h"})
    assert r.code == 409 and r.status == "REFUSED", repr(r)
    assert state(mysql, redis) == before


def test_mysql_away_is_503_and_the_next_request_reconnects(tmp_path, services):
    conf = write_conf(tmp_path / "nodb.conf", {"admin.port": free_port(), "admin.token": TOKEN,
                                              "mysql.port": free_port()})
    s = AdminServer(conf, tmp_path)
    s.start()
    try:
        a = Admin(f"http://127.0.0.1:{s.port}", TOKEN)
        r = a.get("/admin/stats")
        assert r.code == 503 and r.status == "UNAVAILABLE", repr(r)
        assert a.get("/admin/stats").code == 503
    finally:
        s.finish()


def test_every_documented_route_is_served(admin):
    """docs/admin-openapi.yaml and the server agree: each documented operation reaches a
    command (a missing id is that command's 404, not the router's)."""
    import yaml
    doc = yaml.safe_load((ROOT / "docs" / "admin-openapi.yaml").read_text(encoding="utf-8"))
    seen = 0
    for path, item in doc["paths"].items():
        for method in item:
            r = admin.request(method.upper(), path.replace("{id}", "999999999999"))
            assert r.code != 405, (method, path, r)
            assert not (r.code == 404 and r["message"] == "no such endpoint"), (method, path, r)
            seen += 1
    assert seen == 28  # the route table (src/admin/adminroutes.c) and /healthz


def test_a_control_byte_in_a_path_forges_no_log_line(admin_server):
    """The audit line of a request whose path holds a raw CR (and an entry made up after
    it) shows the CR escaped: nothing a client sends starts a line of the log."""
    forged = "POST/admin/activities/7/cancel->200"
    with socket.create_connection(("127.0.0.1", admin_server.port), timeout=5) as s:
        s.sendall(b"POST /admin/x\r" + forged.encode() + b" HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n")
        answer = s.recv(4096)
    assert answer.startswith(b"HTTP/1.1 "), answer
    log = poll_until(lambda: (lambda t: t if forged in t else None)(admin_server.log_text(since_start=True)), 10,
                     "the request's audit line")
    assert "\r" not in log, [line for line in log.splitlines() if forged in line]
    line = next(line for line in log.splitlines() if forged in line)
    assert "/admin/x\\r" + forged in line and " seckill-admin: POST " in line, line


def raw_exchange(port, data):
    """Sends data on one connection and reads until the admin closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
    return answer


@pytest.mark.parametrize("path", ["/admin/coupons/1", "/healthz"])
@pytest.mark.parametrize("method", ["QUERY", "BREW", "TRACE", "POST"])
def test_a_method_nobody_serves_is_the_json_405(admin_server, method, path):
    """Methods evhttp does not know, and those a path does not serve, get the API's JSON
    405 with Allow, as on the gateway, not libevent's HTML 501 (nor /healthz's 200)."""
    answer = raw_exchange(admin_server.port, f"{method} {path} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer {TOKEN}\r\n"
                                             f"Content-Length: 0\r\nConnection: close\r\n\r\n".encode())
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0].startswith("HTTP/1.1 405"), answer
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert headers.get("allow") == "GET, HEAD", headers
    assert headers.get("content-type", "").startswith("application/json"), headers
    assert json.loads(body)["status"] == "METHOD_NOT_ALLOWED", body


def test_a_body_left_unread_is_never_a_request(admin_server):
    """evhttp reads no body for a method it does not know: the admin answers 405 and
    closes the connection, rather than read the body as a next request (libevent's HTML
    400)."""
    body = b'{"ref": "x", "userId": 1}'
    answer = raw_exchange(admin_server.port, f"QUERY /admin/coupons/1/grant HTTP/1.1\r\nHost: a\r\n"
                                             f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
                                             f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    assert answer.startswith(b"HTTP/1.1 405"), answer
    assert answer.count(b"HTTP/1.1 ") == 1, answer
    assert b"connection: close" in answer.lower(), answer
