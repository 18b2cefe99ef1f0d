"""kill -9 of the order consumer in the middle of a sale: after a restart it catches up,
and every accepted order is in MySQL exactly once (I1-I5), whatever batch was cut short."""

import threading
import time

import pytest

from sales import order_rows, wait_for_consumer

from stack import poll_until
from gatewayhttp import Attempt, describe_failures, run_load

STOCK = 2000
THREADS = 32

CONF_OVERRIDES = {
    # Many small batches, so that the kill lands between claim, MySQL commit, offset
    # commit and finalize of some batch rather than after the last one.
    "consumer.batch-size": "25",
    # The killed member leaves the group when its session expires; the broker's minimum.
    "kafka.consumer.session.timeout.ms": "6000",
}


@pytest.fixture(scope="module")
def sale(ctl, gateway, consumer):
    return ctl.create_sale(STOCK)


def test_consumer_kill9_mid_sale(conf, gateway, consumer, sale, ctl, mysql, redis):
    a = sale.activity_id
    base = int(time.time() * 1000) % 10**12 * 1000
    attempts = [Attempt(base + i, a) for i in range(1, STOCK + 1)]
    result = {}
    load = threading.Thread(target=lambda: result.setdefault("done", run_load(conf.http_port, attempts, THREADS)),
                            daemon=True)
    load.start()

    count_sql = f"SELECT COUNT(*) FROM seckill_order WHERE activity_id = {a}"
    rows_at_kill = poll_until(lambda: mysql.count(count_sql), 60, f"the first orders of activity {a} in MySQL",
                              interval=0.02)
    consumer.kill9()
    print(f"\nconsumer killed with {rows_at_kill} of {STOCK} rows written")
    assert rows_at_kill < STOCK, "the consumer had finished before the kill: the test proved nothing"
    consumer.start()

    load.join(120)
    assert not load.is_alive(), "the load did not finish within 120 s"
    done = result["done"]
    errors = [x for x in done if x.error is not None]
    assert not errors, describe_failures(errors)
    refused = [x for x in done if x.reply.code != 200]
    assert not refused, f"{len(refused)} of {STOCK} users were refused, e.g. {refused[:5]}"
    accepted = {x.user: x.reply["orderNo"] for x in done}
    assert len(set(accepted.values())) == STOCK

    wait_for_consumer(mysql, redis, conf, a, len(accepted), consumer, timeout=120)

    distinct = mysql.rows(f"SELECT COUNT(*), COUNT(DISTINCT order_no), COUNT(DISTINCT user_id) "
                          f"FROM seckill_order WHERE activity_id = {a}")[0]
    assert distinct == [str(STOCK)] * 3, distinct
    rows = order_rows(mysql, a)
    assert {u: o for o, u in rows.items()} == accepted, "MySQL orders differ from the accepted ones"

    statuses = redis("HVALS", conf.key("orders", a))
    assert len(statuses) == STOCK and set(statuses) == {"SUCCESS"}
    assert redis("GET", conf.key("stock", a)) == "0"
    assert mysql.count(f"SELECT sold_count FROM seckill_activity WHERE id = {a}") == STOCK
    issued = mysql.count(
        f"SELECT COUNT(*) FROM user_coupon uc JOIN seckill_order o ON uc.source_ref = o.order_no "
        f"WHERE o.activity_id = {a}")
    assert issued == STOCK

    verify = ctl("verify", a)
    assert verify.rc == 0, repr(verify)
