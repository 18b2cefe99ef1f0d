"""A client of seckill-admin's HTTP API (docs/admin-openapi.yaml) for the integration
suites: every answer must be JSON with a boolean `success`, and a failure carries `status`
and `message`."""

import json

import requests


class AdminReply:
    def __init__(self, r, what):
        self.code = r.status_code
        self.headers = r.headers
        self.text = r.text
        assert r.headers.get("Content-Type", "").split(";")[0] == "application/json", (
            f"{what}: {self.code} not JSON: {r.text[:300]!r}")
        self.json = json.loads(r.text) if r.text else {}
        assert isinstance(self.json.get("success"), bool), f"{what}: no success: {r.text[:300]!r}"
        if not self.json["success"]:
            assert "status" in self.json and "message" in self.json, f"{what}: {r.text[:300]!r}"

    def __getitem__(self, key):
        return self.json[key]

    def get(self, key, default=None):
        return self.json.get(key, default)

    @property
    def status(self):
        return self.json.get("status")

    def __repr__(self):
        return f"{self.code} {self.text}"


class Admin:
    def __init__(self, base_url, token):
        self.base_url = base_url
        self.token = token
        self.session = requests.Session()

    def request(self, method, path, token=None, headers=None, **kw):
        kw.setdefault("timeout", 60)
        h = dict(headers or {})
        tok = self.token if token is None else token
        if tok:
            h["Authorization"] = f"Bearer {tok}"
        r = self.session.request(method, self.base_url + path, headers=h, **kw)
        return AdminReply(r, f"{method} {path}")

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        if body is not None:
            kw["json"] = body
        return self.request("POST", path, **kw)

    def create_coupon(self, total, **terms):
        body = {"name": "admin api", "type": "CASH", "amount": "5.00", "minOrder": "10.00",
                "total": total, "start": "-1m", "end": "+1d"}
        body.update(terms)
        r = self.post("/admin/coupons", body)
        assert r.code == 201 and r["success"], repr(r)
        return r["id"]

    def create_activity(self, coupon, stock, start="now", end="+1h"):
        r = self.post("/admin/activities", {"couponId": coupon, "stock": stock, "start": start, "end": end})
        assert r.code == 201 and r["success"] and r["warmed"], repr(r)
        return r["id"]
