"""Clients of the gateway's HTTP API for the integration and chaos suites: Reply (an
answer that must be the API's JSON), Api (requests, one call at a time), run_load (many
keep-alive connections from threads), raw HTTP over a socket for requests no client
library would send, the gateway's /metrics, and HMAC-signed JWTs."""

import base64
import hashlib
import hmac
import http.client
import json
import queue
import socket
import threading
import time

import requests


# ---- HTTP --------------------------------------------------------------------------------


class Reply:
    """A gateway answer: the status code, the headers and the parsed JSON body. Every
    answer of the gateway must be JSON; building a Reply asserts it."""

    def __init__(self, code, headers, text, what):
        self.code = code
        self.headers = headers
        self.text = text
        ctype = headers.get("Content-Type", "")
        assert ctype.split(";")[0].strip() == "application/json", (
            f"{what}: {code} with Content-Type {ctype!r}, not JSON: {text[:300]!r}")
        try:
            self.json = json.loads(text)
        except ValueError:
            raise AssertionError(f"{what}: {code} with a body that is not JSON: {text[:300]!r}")
        assert isinstance(self.json, dict) and isinstance(self.json.get("success"), bool), (
            f"{what}: {code} without a boolean 'success': {text[:300]!r}")
        if not self.json["success"]:
            assert "status" in self.json and "message" in self.json, (
                f"{what}: failure without status and message: {text[:300]!r}")

    def __getitem__(self, key):
        return self.json[key]

    def get(self, key, default=None):
        return self.json.get(key, default)

    @property
    def status(self):
        return self.json.get("status")

    def __repr__(self):
        return f"{self.code} {self.text}"


class Api:
    """requests-based client of one gateway, for the one-at-a-time tests."""

    def __init__(self, base_url):
        self.base_url = base_url
        self.session = requests.Session()

    def request(self, method, path, **kw):
        kw.setdefault("timeout", 30)
        r = self.session.request(method, self.base_url + path, **kw)
        return Reply(r.status_code, r.headers, r.text, f"{method} {path}")

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, **kw):
        return self.request("POST", path, **kw)

    def execute(self, user_id, activity_id):
        return self.post("/seckill/execute", params={"userId": user_id, "activityId": activity_id})

    def stock(self, activity_id):
        r = self.get(f"/seckill/stock/{activity_id}")
        assert r.code == 200, repr(r)
        return r["stock"]

    def order_status(self, order_no):
        r = self.get(f"/seckill/orders/{order_no}")
        assert r.code == 200, repr(r)
        return r["status"]


def raw_execute(conn, user_id, activity_id):
    """One POST /seckill/execute on a keep-alive http.client connection. Returns
    (code, parsed JSON body) and asserts the body is JSON."""
    conn.request("POST", f"/seckill/execute?userId={user_id}&activityId={activity_id}",
                 body=b"", headers={"Content-Length": "0"})
    resp = conn.getresponse()
    body = resp.read().decode("utf-8", "replace")
    reply = Reply(resp.status, resp.headers, body, f"execute user {user_id}")
    if resp.getheader("Connection", "").lower() == "close":
        conn.close()
    return reply


class Attempt:
    """One POST /seckill/execute of a load run and what came of it: `reply` (a Reply) or
    `error` (the exception: refused or dropped connection, an answer that is not JSON)."""

    __slots__ = ("user", "activity", "repeat", "reply", "error", "sent", "done")

    def __init__(self, user, activity, repeat=False):
        self.user, self.activity, self.repeat = user, activity, repeat
        self.reply = self.error = None
        self.sent = self.done = None

    def __repr__(self):
        what = repr(self.reply) if self.reply is not None else f"error {self.error!r}"
        return f"user {self.user}{' (repeat)' if self.repeat else ''}: {what}"


def run_load(port, attempts, threads, follow_up=None, stop=None, timeout=30):
    """Sends the attempts from `threads` threads, each with its own keep-alive
    connection (a new one after an error or a `Connection: close`). `follow_up(attempt)`,
    called once the attempt is answered, may return another Attempt, which is queued then:
    so a repeat is sent only after the first request of its user has its answer. A set
    `stop` event makes the threads leave the rest unsent. Returns the finished attempts."""
    work = queue.Queue()
    for a in attempts:
        work.put(a)
    done = []
    lock = threading.Lock()
    outstanding = [len(attempts)]
    if not attempts:
        return done

    def finish(a, nxt):
        with lock:
            done.append(a)
            if nxt is not None:
                outstanding[0] += 1
                work.put(nxt)
            outstanding[0] -= 1
            if outstanding[0] == 0:
                for _ in range(threads):
                    work.put(None)

    def worker():
        conn = None
        while True:
            a = work.get()
            if a is None:
                break
            if stop is not None and stop.is_set():
                finish(a, None)
                continue
            a.sent = time.monotonic()
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
                a.reply = raw_execute(conn, a.user, a.activity)
            except Exception as e:  # noqa: BLE001 - every failure is a result here
                a.error = e
                if conn is not None:
                    conn.close()
                conn = None
            a.done = time.monotonic()
            nxt = None
            if follow_up is not None and a.reply is not None:
                nxt = follow_up(a)
            finish(a, nxt)
        if conn is not None:
            conn.close()

    pool = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return done


def describe_failures(attempts):
    """'N requests failed: 3 ConnectionResetError, ...; e.g. [...]' for an assertion."""
    kinds = {}
    for a in attempts:
        name = type(a.error).__name__ if a.error is not None else f"HTTP {a.reply.code}"
        kinds[name] = kinds.get(name, 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
    return f"{len(attempts)} requests failed ({summary}), e.g. {attempts[:5]}"


# ---- raw HTTP and JWT -------------------------------------------------------------------


class RawReply:
    """An answer read off a socket: code, reason, headers (an http.client.HTTPMessage),
    body bytes. Unlike Reply it accepts anything: evhttp answers some malformed requests
    itself with an HTML page. `reply()` turns it into a Reply, asserting JSON."""

    def __init__(self, code, reason, headers, body):
        self.code, self.reason, self.headers, self.body = code, reason, headers, body

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    @property
    def is_json(self):
        return self.headers.get("Content-Type", "").split(";")[0].strip() == "application/json"

    def reply(self, what="raw request"):
        return Reply(self.code, self.headers, self.text, what)

    def __repr__(self):
        return f"{self.code} {self.reason} {self.text[:300]!r}"


def http_bytes(method, target, headers=None, body=b"", version="HTTP/1.1"):
    """The bytes of one request. Host and Content-Length are added unless `headers` names
    them (a value of None leaves a header out); `body` may be str or bytes."""
    if isinstance(body, str):
        body = body.encode()
    hdrs = {"Host": "127.0.0.1"}
    if body or method in ("POST", "PUT", "PATCH"):
        hdrs["Content-Length"] = str(len(body))
    for k, v in (headers or {}).items():
        for existing in [e for e in hdrs if e.lower() == k.lower()]:
            del hdrs[existing]
        hdrs[k] = v
    lines = [f"{method} {target} {version}"]
    lines += [f"{k}: {v}" for k, v in hdrs.items() if v is not None]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def read_raw_reply(sock, method="GET"):
    """Reads one HTTP answer from a connected socket (keep-alive safe: one request, one
    answer at a time)."""
    resp = http.client.HTTPResponse(sock, method=method)
    resp.begin()
    body = resp.read()
    return RawReply(resp.status, resp.reason, resp.headers, body)


def raw_http(port, data, timeout=10, source=None, method=None):
    """Sends `data` (a whole request, see http_bytes) on a new connection and returns the
    RawReply. `source` binds the client to another loopback address (127.0.0.2) so the
    gateway sees another peer. A server that answers before reading everything (a body
    over its limit) may reset the rest of the send: that is not an error here."""
    if method is None:
        method = data.split(b" ", 1)[0].decode("latin-1")
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                    source_address=(source, 0) if source else None)
    try:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return read_raw_reply(sock, method)
    finally:
        sock.close()


def metrics_samples(text):
    """A Prometheus text page as {series: value}, series being the sample line up to its
    value (the name and any labels)."""
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            samples[series] = float(value)
    return samples


def gateway_metrics(port):
    """The gateway's GET /metrics as metrics_samples."""
    r = raw_http(port, http_bytes("GET", "/metrics"))
    assert r.code == 200, repr(r)
    return metrics_samples(r.text)


def b64url(data):
    if isinstance(data, str):
        data = data.encode()
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


JWT_HASHES = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}


def jwt_sign(claims, secret, alg="HS256", header=None):
    """A compact JWT: `claims` (a dict, or the payload text as str) signed with HMAC under
    `alg` (HS256/HS384/HS512; "none" leaves the signature empty). `header` (a dict)
    replaces the default {"alg": alg, "typ": "JWT"}."""
    head = header if header is not None else {"alg": alg, "typ": "JWT"}
    payload = claims if isinstance(claims, str) else json.dumps(claims, separators=(",", ":"))
    signing_input = b64url(json.dumps(head, separators=(",", ":"))) + "." + b64url(payload)
    if alg == "none":
        return signing_input + "."
    mac = hmac.new(secret.encode(), signing_input.encode("ascii"), JWT_HASHES[alg]).digest()
    return signing_input + "." + b64url(mac)
