"""A long admin command holds back no other (docs/administration.md, "Admin HTTP API"):
seckill-admin runs each request's command on one of admin.workers threads, each with its
own MySQL and Redis connections. `verify` of a big sale takes seconds (a sale of 2.37
million orders took nearly two minutes); while it runs, other admin requests are
answered at once, and the verify's own answer is the one `seckillctl verify` gives.

The big sale's orders are written straight into its Redis keys (test/lib/bulkfill.py),
so verify reports them missing from MySQL: its answer is the `FAILED` 200 with ok false,
which is what it must be."""

import threading
import time

import pytest
import requests

from adminhttp import Admin
from bulkfill import bulk_fill
from stack import free_port

TOKEN = "t0k3n-for-the-admin-concurrency-tests-0123"
CONF_OVERRIDES = {"admin.port": free_port(), "admin.token": TOKEN}
BULK_ORDERS = 600_000
# What "at once" means on a busy two-core machine with an ASan build.
PROMPT = 1.0


@pytest.fixture(scope="module")
def admin(admin_server):
    return Admin(f"http://127.0.0.1:{admin_server.port}", TOKEN)


@pytest.fixture(scope="module")
def big_sale(admin, redis, conf, ids):
    coupon = admin.create_coupon(BULK_ORDERS + 10)
    activity = admin.create_activity(coupon, BULK_ORDERS + 10)
    keys = [conf.key(k, activity) for k in ("users", "orders")]
    try:
        assert bulk_fill(redis, conf, activity, BULK_ORDERS, ids()) == BULK_ORDERS
        yield coupon, activity
    finally:
        redis("UNLINK", *keys)


def test_other_requests_are_answered_while_a_long_verify_runs(admin, big_sale):
    coupon, activity = big_sale
    verify = {}

    def run_verify():
        started = time.monotonic()
        verify["reply"] = Admin(admin.base_url, TOKEN).get(f"/admin/activities/{activity}/verify", timeout=600)
        verify["took"] = time.monotonic() - started

    t = threading.Thread(target=run_verify, daemon=True)
    t.start()
    answered_during = []
    try:
        # Requests one after another for as long as the verify runs (each must be prompt),
        # as the review's coupon show 0.3 s after the verify.
        while t.is_alive():
            started = time.monotonic()
            try:
                r = admin.get(f"/admin/coupons/{coupon}", timeout=5 * PROMPT)
            except requests.Timeout:
                pytest.fail(f"GET /admin/coupons/{coupon} got no answer in {5 * PROMPT:.0f} s while verify ran")
            took = time.monotonic() - started
            assert r.code == 200 and r["id"] == coupon, repr(r)
            assert took < PROMPT, f"GET /admin/coupons/{coupon} took {took:.2f} s while verify ran"
            if t.is_alive():
                answered_during.append(took)
            t.join(0.3)  # spacing between the requests; the loop ends with the verify
    finally:
        t.join(600)
    r = verify["reply"]
    assert r.code == 200 and r["status"] == "FAILED" and r["ok"] is False, repr(r)
    assert verify["took"] > 2 * PROMPT, f"verify took {verify['took']:.2f} s: not long enough to show anything"
    assert answered_during, "no request was answered while the verify ran"


def test_a_client_that_gives_up_on_a_long_verify_costs_nothing_else(admin, admin_server, big_sale):
    """The verify's client hangs up: the command still runs to its end on its worker, its
    answer goes nowhere, and the admin goes on answering (the module's teardown checks it
    stops cleanly, sanitizer-clean, once that verify is done)."""
    coupon, activity = big_sale
    with pytest.raises(requests.Timeout):
        Admin(admin.base_url, TOKEN).get(f"/admin/activities/{activity}/verify", timeout=0.5)
    started = time.monotonic()
    r = admin.get(f"/admin/coupons/{coupon}", timeout=5 * PROMPT)
    took = time.monotonic() - started
    assert r.code == 200 and r["id"] == coupon, repr(r)
    assert took < PROMPT, f"GET /admin/coupons/{coupon} took {took:.2f} s"
    assert admin_server.running
