"""Lists an operator pages through and exports (order list, coupon list, activity list,
audit list; the admin API's GET /admin/orders, /coupons, /activities, /audit), and the record
of every administrative write (admin_audit): who, what, from where, and what came of it."""

import csv
import io
import json

import pytest
import requests

from adminhttp import Admin
from longpoll import release, stuck_order
from sales import wait_for_consumer
from stack import free_port, poll_until

TOKEN = "t0k3n-for-the-listing-tests-0123456789ab"
CONF_OVERRIDES = {"admin.port": free_port(), "admin.token": TOKEN}


@pytest.fixture(scope="module")
def admin(admin_server):
    return Admin(f"http://127.0.0.1:{admin_server.port}", TOKEN)


def listed(ctl, command, *args):
    r = ctl.run_ok("--json", *command.split(), *args)
    return json.loads(r.stdout)


def every_page(ctl, *args, limit=2, cursor="--after"):
    items, after, pages = [], None, 0
    while True:
        page = listed(ctl, *args, "--limit", limit, *([cursor, after] if after else []))
        items += page["items"]
        pages += 1
        after = page["next"]
        if after is None:
            return items, pages


def test_a_sales_orders_page_by_page_with_the_failed_ones_and_their_reason(ctl, api, mysql, redis, conf,
                                                                           gateway, consumer, ids):
    sale = ctl.create_sale(5)
    buyers = [ids() for _ in range(3)]
    for u in buyers:
        assert api.execute(u, sale.activity_id).code == 200
    loser = ids()
    release(redis, conf, sale.activity_id, stuck_order(redis, conf, sale.activity_id, loser))
    wait_for_consumer(mysql, redis, conf, sale.activity_id, expected_rows=3, consumer=consumer)
    items, pages = every_page(ctl, "order list", "--activity", sale.activity_id)
    assert pages == 2 and sorted(i["userId"] for i in items) == sorted(buyers), items
    assert all(i["status"] == "SUCCESS" and i["reason"] is None for i in items), items
    assert [i["id"] for i in items] == sorted(i["id"] for i in items)

    def failed_listed():
        return listed(ctl, "order list", "--activity", sale.activity_id, "--status", "FAILED")["items"]
    failed = poll_until(failed_listed, 30, "the failed order recorded in MySQL")
    assert [(f["userId"], f["reason"]) for f in failed] == [(loser, "ROLLED_BACK")], failed
    one = listed(ctl, "order list", "--activity", sale.activity_id, "--user", buyers[1])["items"]
    assert [i["userId"] for i in one] == [buyers[1]], one

    # The same page as CSV: a header, then the JSON items' fields, in order.
    text = ctl.run_ok("order", "list", "--activity", sale.activity_id, "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [int(r["userId"]) for r in rows] == [i["userId"] for i in items], text
    assert list(rows[0]) == ["id", "orderNo", "userId", "status", "reason", "acceptedAt", "at"], text


def test_coupons_and_sales_list_with_filters_and_csv_that_cannot_run_as_a_formula(ctl):
    coupon = ctl.create_id("coupon", "create", "--name", "=HYPERLINK(\"x\")", "--type", "GIFT", "--total", 10,
                           "--start", "-1m", "--end", "+1d")
    sales = [ctl.create_id("activity", "create", "--coupon", coupon, "--stock", 1, "--start", "+1h",
                           "--end", "+2h", "--name", f"s{i}") for i in range(3)]
    got, pages = every_page(ctl, "activity list", "--coupon", coupon)
    assert [s["id"] for s in got] == sales and pages == 2, got
    assert all(s["couponId"] == coupon and s["status"] == "PENDING" for s in got), got
    assert listed(ctl, "activity list", "--coupon", coupon, "--status", "ENDED")["items"] == []
    after = listed(ctl, "coupon list", "--after", coupon - 1, "--limit", 1)["items"]
    assert [(c["id"], c["name"], c["total"]) for c in after] == [(coupon, "=HYPERLINK(\"x\")", 10)], after
    text = ctl.run_ok("coupon", "list", "--after", coupon - 1, "--limit", 1, "--format", "csv").stdout
    assert "\"'=HYPERLINK(\"\"x\"\")\"" in text, text


@pytest.mark.parametrize("args", [
    ["order list"], ["order list", "--activity", "1", "--status", "LOST"], ["coupon list", "--limit", "0"],
    ["coupon list", "--limit", "1001"], ["activity list", "--format", "xml"], ["audit list", "--before", "x"],
])
def test_bad_listing_arguments_are_refused(ctl, args):
    r = ctl(*args[0].split(), *args[1:])
    assert r.rc == 2 and r.stderr, repr(r)


def test_every_administrative_write_is_recorded_and_no_read(ctl, admin, mysql):
    def audit_tail(n):
        return listed(ctl, "audit list", "--limit", n)["items"]
    top = audit_tail(1)
    since = top[0]["id"] if top else 0
    coupon = ctl.create_id("coupon", "create", "--name", "audited", "--type", "GIFT", "--total", 1,
                           "--start", "-1m", "--end", "+1d")
    refused = ctl("activity", "create", "--coupon", coupon, "--stock", 5, "--start", "now", "--end", "+1h")
    assert refused.rc == 1, repr(refused)  # more than the coupon holds
    bad = ctl("activity", "create", "--coupon", coupon)
    assert bad.rc == 2, repr(bad)
    ctl.run_ok("coupon", "show", coupon)
    ctl.run_ok("coupon", "list", "--limit", 1)
    r = admin.post(f"/admin/coupons/{coupon}/deactivate")
    assert r.code == 200, repr(r)
    new = [a for a in audit_tail(20) if a["id"] > since]
    got = [(a["command"], a["args"][:2], a["exitStatus"]) for a in reversed(new)]
    assert got == [("coupon create", ["--name", "audited"], 0), ("activity create", ["--coupon", str(coupon)], 1),
                   ("activity create", ["--coupon", str(coupon)], 2), ("coupon deactivate", [str(coupon)], 0)], got
    origins = [a["origin"] for a in reversed(new)]
    assert "@" in origins[0] and origins[-1] == "admin API from 127.0.0.1", origins
    assert mysql.count(f"SELECT COUNT(*) FROM admin_audit WHERE id > {since}") == 4


def test_the_admin_api_lists_in_json_and_csv(admin, ctl):
    coupon = ctl.create_id("coupon", "create", "--name", "api list", "--type", "GIFT", "--total", 10,
                           "--start", "-1m", "--end", "+1d")
    sales = [ctl.create_id("activity", "create", "--coupon", coupon, "--stock", 1, "--start", "+1h",
                           "--end", "+2h") for _ in range(3)]
    r = admin.get("/admin/activities", params={"couponId": coupon, "limit": 2})
    assert r.code == 200 and [s["id"] for s in r["items"]] == sales[:2] and r["next"] == sales[1], repr(r)
    raw = requests.get(f"{admin.base_url}/admin/activities", params={"couponId": coupon, "limit": 2, "format": "csv"},
                       headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    assert raw.status_code == 200 and raw.headers["Content-Type"].startswith("text/csv"), raw.headers
    assert raw.headers["X-Next-Cursor"] == str(sales[1])
    assert [int(x["id"]) for x in csv.DictReader(io.StringIO(raw.text))] == sales[:2], raw.text
    r = admin.get("/admin/activities", params={"couponId": coupon, "after": sales[1]})
    assert [s["id"] for s in r["items"]] == sales[2:] and r["next"] is None, repr(r)
    r = admin.get("/admin/orders", params={"activityId": sales[0], "status": "LOST"})
    assert r.code == 400, repr(r)
    r = admin.get("/admin/audit", params={"limit": 1})
    assert r.code == 200 and len(r["items"]) == 1, repr(r)
