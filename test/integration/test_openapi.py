"""The API's contract, docs/openapi.yaml: the gateway serves it, it names every route the
gateway has, and schemathesis (test/requirements.txt) finds the gateway keeping it: one run
of generated requests for every operation (examples, coverage, fuzzing) with every check
(server errors, status codes, content types, headers, response schemas, valid data
accepted and invalid data refused, unsupported methods), then a short stateful run that
follows the contract's links from an accepted execute to its result and its order.

Both runs read the contract from the live gateway (GET /openapi.yaml), so they test what
the binary carries. A sale and a won coupon give the generated requests something real
to hit: the runs' configuration (schemathesis.toml) offers their ids beside the generated
ones.

Below them, one test per thing schemathesis found, each failing on the gateway before
its fix: evhttp's 501 HTML page for TRACE and unknown methods, HEAD answered with a body
(and no length), a body evhttp does not read taken for the next request, and a query or
form refused whole for a pair without a name or a value."""

import http.client
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from sales import won_coupon

from stack import ROOT
from gatewayhttp import RawReply, http_bytes, raw_http

CONTRACT = ROOT / "docs" / "openapi.yaml"
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
# Bounds of the two runs (seconds of generated requests): with the module's set-up, about
# 50 s of the suite.
MAIN_RUN_SECONDS = 25
STATEFUL_RUN_SECONDS = 12
# What a JSON answer of the API holds at least (docs/design.md, docs/api.md: every response is JSON).
JSON_TYPE = "application/json"


@pytest.fixture(scope="module")
def contract():
    return yaml.safe_load(CONTRACT.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def sale(ctl, gateway, consumer):
    # Enough stock that the generated buyers do not sell it out before the stateful run.
    return ctl.create_sale(20000)


@pytest.fixture(scope="module")
def coupon(ctl, api, mysql, redis, ids, consumer):
    user, uc_id, _ = won_coupon(ctl, api, mysql, redis, ids)
    return user, uc_id


# A body over http.max-body-size is 413 whatever its schema (the contract says so): a
# valid request that large is not one the gateway rejects wrongly.
ACCEPTANCE = """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "413", "429", "5xx"]
"""


def schemathesis_run(gateway, tmp_path, config, *args, timeout):
    """Runs schemathesis against the gateway's own contract; returns (rc, output)."""
    cfg = tmp_path / "schemathesis.toml"
    cfg.write_text(ACCEPTANCE + config, encoding="utf-8")
    url = gateway.base_url
    cmd = [str(SCHEMATHESIS), "--no-color", "--config-file", str(cfg), "run", f"{url}/openapi.yaml",
           "--url", url, "--checks", "all", "--workers", "1", "--generation-database", "none",
           "--request-timeout", "15", *args]
    p = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def operations(contract):
    return [(method.upper(), path) for path, item in contract["paths"].items() for method in item
            if method in ("get", "post", "put", "delete", "patch", "head", "options", "trace")]


# ---- the contract itself -----------------------------------------------------------------


def test_gateway_serves_its_contract(gateway):
    r = raw_http(gateway.conf.http_port, http_bytes("GET", "/openapi.yaml"))
    assert r.code == 200, repr(r)
    assert r.headers.get("Content-Type") == "application/yaml", dict(r.headers)
    # Built in: the very bytes of docs/openapi.yaml at build time, whatever the directory.
    assert r.body == CONTRACT.read_bytes()
    head = raw_http(gateway.conf.http_port, http_bytes("HEAD", "/openapi.yaml"))
    assert head.code == 200 and head.body == b"", repr(head)
    assert head.headers.get("Content-Type") == "application/yaml", dict(head.headers)


def test_contract_names_every_route(contract):
    """Every route of src/gateway/http.c is in the contract with its method, and the
    contract has no path the gateway does not route."""
    source = (ROOT / "src" / "gateway" / "http.c").read_text(encoding="utf-8")
    table = source[source.index("static const struct route routes[]"):]
    table = table[:table.index("};")]
    routes = re.findall(r'\{ "([^"]+)", EVHTTP_REQ_(GET|POST),', table)
    assert len(routes) >= 10, table
    ops = operations(contract)
    for path, method in routes:
        if path.endswith("/"):
            covered = [p for m, p in ops if m == method and p.startswith(path) and "{" in p]
        else:
            covered = [p for m, p in ops if m == method and p == path]
        assert covered, f"{method} {path} (src/gateway/http.c) is not in {CONTRACT}"
    for method, path in ops:
        prefix = path.split("{", 1)[0]
        assert any(m == method and (p == path or (p.endswith("/") and prefix.startswith(p)))
                   for p, m in routes), f"{method} {path} of the contract is not a route"


def test_contract_documents_errors_and_headers(contract):
    """Every operation answers its errors in the JSON error shape, 405 with Allow, 429
    with Retry-After, and the flash sale's operations take the bearer scheme."""
    comps = contract["components"]
    assert comps["securitySchemes"]["bearerAuth"] == {**comps["securitySchemes"]["bearerAuth"],
                                                       "type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
    assert comps["responses"]["TooMany"]["headers"]["Retry-After"]
    assert comps["responses"]["MethodNotAllowed"]["headers"]["Allow"]
    for path, item in contract["paths"].items():
        for method, op in item.items():
            assert "405" in op["responses"], f"{method} {path}: no 405"
            assert "200" in op["responses"], f"{method} {path}: no 200"
    execute = contract["paths"]["/seckill/execute"]["post"]
    assert {"bearerAuth": []} in execute["security"]
    assert execute["responses"]["429"] == {"$ref": "#/components/responses/TooMany"}
    assert set(execute["responses"]["200"]["links"]) == {"result", "order"}


# ---- schemathesis ------------------------------------------------------------------------


def test_schemathesis_every_operation(gateway, sale, coupon, contract, tmp_path):
    user, uc_id = coupon
    config = f"""
[dictionaries.sale]
values = [{sale.activity_id}]
[dictionaries.user]
values = [{user}]
[dictionaries.usercoupon]
values = [{uc_id}]

[parameters]
"query.activityId" = {{ dictionary = "sale", probability = 0.5 }}
"path.activityId" = {{ dictionary = "sale", probability = 0.5 }}
"query.userId" = {{ dictionary = "user", probability = 0.2 }}
"path.userCouponId" = {{ dictionary = "usercoupon", probability = 0.5 }}
"""
    started = time.monotonic()
    rc, out = schemathesis_run(gateway, tmp_path, config, "--phases", "examples,coverage,fuzzing",
                               "--max-time", str(MAIN_RUN_SECONDS), timeout=MAIN_RUN_SECONDS + 120)
    took = time.monotonic() - started
    assert rc == 0, f"schemathesis found the gateway off its contract (rc {rc}):\n{out[-12000:]}"
    # Every operation but the document's own (schemathesis reads the contract from it;
    # test_gateway_serves_its_contract checks that one).
    tested = re.search(r"Tested: +(\d+)", out)
    assert tested and int(tested.group(1)) == len(operations(contract)) - 1, out[-3000:]
    assert took < MAIN_RUN_SECONDS + 60, f"{took:.0f} s"
    assert gateway.running


def test_schemathesis_stateful_links(gateway, api, sale, tmp_path):
    """From an accepted execute, the links to its result and its order: each answered 200
    with the order execute made."""
    before = api.stock(sale.activity_id)
    config = f"""
[[operations]]
include-operation-id = "execute"
parameters = {{ activityId = {sale.activity_id} }}
[[operations]]
include-operation-id = "activity"
parameters = {{ activityId = {sale.activity_id} }}
"""
    har = tmp_path / "stateful.har"
    only = [arg for op in ("execute", "result", "order", "activity", "stock")
            for arg in ("--include-operation-id", op)]
    rc, out = schemathesis_run(gateway, tmp_path, config, "--phases", "stateful",
                               "--max-time", str(STATEFUL_RUN_SECONDS), *only,
                               "--report", "har", "--report-har-path", str(har),
                               timeout=STATEFUL_RUN_SECONDS + 120)
    assert rc == 0, f"schemathesis's stateful run failed (rc {rc}):\n{out[-12000:]}"
    entries = json.loads(har.read_text(encoding="utf-8"))["log"]["entries"]
    accepted = {}
    for e in entries:
        req, resp = e["request"], e["response"]
        if req["method"] == "POST" and "/seckill/execute" in req["url"] and resp["status"] == 200:
            body = json.loads(resp["content"]["text"])
            accepted[body["orderNo"]] = body
    assert accepted, "no execute was accepted in the stateful run"
    followed = [e for e in entries if e["response"]["status"] == 200
                and any(f"/seckill/orders/{n}" in e["request"]["url"] for n in accepted)]
    results = [e for e in entries if e["response"]["status"] == 200 and "/seckill/result" in e["request"]["url"]
               and json.loads(e["response"]["content"]["text"])["orderNo"] in accepted]
    assert followed and results, "the links from execute to its order and its result were not followed"
    # Every accepted order took one unit of stock.
    assert api.stock(sale.activity_id) <= before - len(accepted)


# ---- what schemathesis found, each fixed in the gateway ----------------------------------


class _SharedFile:
    """One buffered reader of a socket for several answers: http.client reads ahead and
    closes its file after each answer, either of which would lose the next one."""

    def __init__(self, f):
        self.f = f

    def makefile(self, *args, **kwargs):
        return self

    def close(self):
        pass

    def __getattr__(self, name):
        return getattr(self.f, name)


def exchange(port, data, methods, timeout=5):
    """Sends `data` (requests back to back) on one connection and reads an answer for each
    of `methods`, stopping early when the gateway closes the connection."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = []
    try:
        sock.sendall(data)
        shared = _SharedFile(sock.makefile("rb"))
        for method in methods:
            resp = http.client.HTTPResponse(shared, method=method)
            try:
                resp.begin()
            except (http.client.HTTPException, OSError):
                break  # closed: no more answers
            out.append(RawReply(resp.status, resp.reason, resp.headers, resp.read()))
    finally:
        sock.close()
    return out


@pytest.mark.parametrize("method", ["TRACE", "QUERY", "BREW"])
def test_methods_evhttp_does_not_serve_get_json_405(gateway, sale, method):
    """Before: libevent's 501 HTML page (TRACE is outside evhttp's allowed methods, QUERY
    and BREW are methods it does not know)."""
    for path, allow in ((f"/seckill/stock/{sale.activity_id}", "GET, HEAD"), ("/seckill/execute", "POST")):
        r = raw_http(gateway.conf.http_port, http_bytes(method, path))
        assert r.code == 405, f"{method} {path}: {r!r}"
        assert r.headers.get("Allow") == allow, dict(r.headers)
        reply = r.reply(f"{method} {path}")
        assert reply.status == "METHOD_NOT_ALLOWED" and reply["success"] is False, repr(reply)


def test_head_answers_headers_only(gateway, sale):
    """HEAD, on a GET route or not, answers the head alone: a client on a kept-alive
    connection reads the next answer as it was sent. Before: a 405 whose JSON body
    followed the head without a length, read as the start of the next answer."""
    port = gateway.conf.http_port
    a = sale.activity_id
    data = (http_bytes("HEAD", f"/seckill/stock/{a}") + http_bytes("HEAD", "/seckill/execute")
            + http_bytes("GET", f"/seckill/stock/{a}"))
    head_get, head_post, get = exchange(port, data, ["HEAD", "HEAD", "GET"])
    assert head_get.code == 200 and head_get.body == b"", repr(head_get)
    assert head_get.headers.get("Content-Type") == JSON_TYPE, dict(head_get.headers)
    assert head_post.code == 405 and head_post.headers.get("Allow") == "POST", repr(head_post)
    assert get.code == 200 and get.reply("GET stock")["stock"] >= 0, repr(get)


@pytest.mark.parametrize("method", ["HEAD", "TRACE", "BREW"])
def test_unread_body_is_never_a_request(gateway, sale, method):
    """evhttp reads no body for HEAD, TRACE and unknown methods: the gateway closes the
    connection after the answer instead of reading the body as the next request. Before:
    the body's bytes ("activityId=..&GET") were taken for a request line."""
    port = gateway.conf.http_port
    body = b"userId=1&activityId=1&"
    data = (http_bytes(method, "/healthz", {"Content-Type": "application/x-www-form-urlencoded"}, body)
            + http_bytes("GET", "/healthz"))
    replies = exchange(port, data, [method, "GET"])
    assert replies and replies[0].code in (200, 405), replies
    assert replies[0].headers.get("Connection") == "close", dict(replies[0].headers)
    assert len(replies) == 1, f"the body was read as a request: {replies!r}"


def test_pairs_without_name_or_value_are_not_malformed(gateway, api, sale, ids):
    """A query or form with "flag" (no "=") or "=x" (no name), as browsers send them, is
    read like any other. Before: 400 "malformed query string" / "malformed form body"."""
    a = sale.activity_id
    user = ids()
    r = api.post(f"/seckill/execute?userId={user}&activityId={a}&debug&=x")
    assert r.code == 200 and r["status"] == "PROCESSING", repr(r)
    user = ids()
    r = api.post("/seckill/execute", data=f"=null&userId={user}&activityId={a}&flag",
                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.code == 200 and r["status"] == "PROCESSING", repr(r)
    # A known name without "=" is that name, empty: malformed, not missing.
    r = api.post(f"/seckill/execute?userId&activityId={a}")
    assert r.code == 400 and "userId must be a positive integer" in r["message"], repr(r)
