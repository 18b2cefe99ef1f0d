"""Consumers come and go mid-sale: a second consumer joins the group, later leaves it, and
the first one is killed and restarted; every order answered 200 is persisted exactly once.

A rebalance revokes partitions from a consumer that may be in the middle of a batch. It
commits offsets only for partitions it still holds (kafkacons_commit), so a partition
handed to another consumer is read again from its last committed offset, and the orders
it replays are idempotent (claim in Redis, the MySQL unique keys). An offset committed for
rows not written would lose those orders: the test would find them missing."""

import re
import threading

from sales import wait_for_consumer

from stack import Consumer, poll_until, write_conf

CONF_OVERRIDES = {
    # Small batches, so that rebalances land between claim, commit and finalize.
    "consumer.batch-size": "20",
    "consumer.batch-timeout-ms": "5",
}


def test_consumers_joining_and_leaving_mid_sale_lose_and_double_nothing(
        conf, gateway, api, consumer, ctl, mysql, redis, ids, tmp_path):
    sale = ctl.create_sale(stock=100000)
    accepted = {}
    lock = threading.Lock()
    stop = threading.Event()

    def load():
        while not stop.is_set():
            user = ids()
            r = api.execute(user, sale.activity_id)
            assert r.code == 200, (r.code, r.text)
            with lock:
                accepted[r.json["orderNo"]] = user

    def reached(n):
        with lock:
            return len(accepted) >= n

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    second = Consumer(write_conf(tmp_path / "second.conf", CONF_OVERRIDES), tmp_path)
    try:
        poll_until(lambda: reached(200), 60, "200 orders before the second consumer joins")
        second.start()
        poll_until(lambda: "assigned" in second.log_text(since_start=True), 30,
                   "the second consumer to get partitions")
        poll_until(lambda: reached(600), 60, "600 orders before it leaves")
        assert second.stop() == 0
        poll_until(lambda: reached(900), 60, "900 orders before the first consumer is killed")
        consumer.kill9()
        consumer.start()
        poll_until(lambda: reached(1200), 60, "1200 orders")
    finally:
        stop.set()
        for t in threads:
            t.join()
        second.finish()

    rows_count = wait_for_consumer(mysql, redis, conf, sale.activity_id, len(accepted), consumer, timeout=90)
    rows = mysql.rows(f"SELECT order_no, user_id FROM seckill_order WHERE activity_id = {sale.activity_id}")
    persisted = {r[0]: int(r[1]) for r in rows}
    assert rows_count == len(rows) == len(accepted)
    assert persisted == accepted, (
        f"missing {len(set(accepted) - set(persisted))}, unexpected {len(set(persisted) - set(accepted))}")
    r = ctl("verify", sale.activity_id)
    assert r.rc == 0, repr(r)
    # The second consumer did take part: it persisted some of them.
    took = re.findall(r"stopped after \d+ batches: (\d+) orders persisted", second.log_text())
    assert took and int(took[-1]) > 0, second.log_tail()
