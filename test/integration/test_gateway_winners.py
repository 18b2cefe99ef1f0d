"""The gateway remembers each buyer of a sale (user -> order) so that, once the sale is sold
out, a repeat is answered DUPLICATE or OUT_OF_STOCK without Redis. A sale that ended or was
cancelled answers without them, so they go: kept, a gateway that runs a sale every evening
grew by every order it ever took (about 28 bytes each, seen by the soak)."""

import requests

from stack import poll_until
from gatewayhttp import metrics_samples

ORDERS = 40


def winners(conf):
    text = requests.get(f"{conf.base_url}/metrics", timeout=10).text
    return metrics_samples(text)["seckill_cached_winners"]


def test_an_ended_sale_leaves_no_buyer_in_the_gateway(conf, gateway, api, ctl, ids):
    before = winners(conf)
    sale = ctl.create_sale(ORDERS)
    for _ in range(ORDERS):
        r = api.execute(ids(), sale.activity_id)
        assert r.code == 200, repr(r)
    poll_until(lambda: winners(conf) >= before + ORDERS, 10, f"the {ORDERS} buyers remembered")
    # Sold out: a repeat is answered from what the gateway remembers.
    assert api.execute(ids(), sale.activity_id).code == 409
    cancel = ctl("activity", "cancel", sale.activity_id)
    assert cancel.rc == 0, repr(cancel)
    poll_until(lambda: winners(conf) == before, 15, "the cancelled sale's buyers forgotten")
    r = api.execute(ids(), sale.activity_id)
    assert r.code == 409 and r["status"] == "CANCELLED", repr(r)
