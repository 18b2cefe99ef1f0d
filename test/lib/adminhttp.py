"""A client of seckill-admin's HTTP API (docs/admin-openapi.yaml) for the integration
suites: every answer must be JSON with a boolean `success`, and a failure carries `status`
and `message`."""

import requests

from gatewayhttp import Reply


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
        return Reply(r.status_code, r.headers, r.text, f"{method} {path}")

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
