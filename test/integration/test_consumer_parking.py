"""A Redis step the consumer cannot do for one sale's slot holds back no other sale. Sale A's
orders wait in Kafka while its `claimed` set is made unwritable (a string where confirm.lua
keeps a set: every confirm.lua call on that slot fails, as on a slot whose master and
replicas are gone). The consumer sets A's orders aside and sale B's orders still end
SUCCESS within seconds; A's partition offsets are not committed past them, so a consumer
restarted meanwhile finds them again. Once the slot can be written, every order of A ends
SUCCESS and in MySQL once."""

import re

import requests

from sales import buy_order, order_rows, success_count, wait_for_consumer

from stack import poll_until

A_ORDERS = 20
B_ORDERS = 10


def parked(conf):
    text = requests.get(f"http://127.0.0.1:{conf.get('consumer.metrics-port')}/metrics", timeout=10).text
    m = re.search(r"^seckill_consumer_parked_orders (\d+)$", text, re.M)
    assert m, "no seckill_consumer_parked_orders gauge"
    return int(m.group(1))


def statuses(redis, conf, activity, orders):
    return redis("HMGET", conf.key("orders", activity), *orders)


def test_a_sale_whose_slot_cannot_be_written_holds_back_no_other(conf, gateway, consumer, ctl, mysql, redis, ids):
    a = ctl.create_sale(A_ORDERS).activity_id
    b = ctl.create_sale(B_ORDERS).activity_id
    consumer.stop()
    held = [buy_order(conf, ids(), a) for _ in range(A_ORDERS)]
    claimed = conf.key("claimed", a)
    redis("SET", claimed, "unwritable")
    try:
        consumer.start()
        bought = [buy_order(conf, ids(), b) for _ in range(B_ORDERS)]
        poll_until(lambda: success_count(redis, conf, b) == B_ORDERS, 15,
                   f"sale {b}'s orders SUCCESS while sale {a}'s slot cannot be written")
        assert set(order_rows(mysql, b)) == set(bought)
        assert set(statuses(redis, conf, a, held)) == {"PROCESSING"}
        assert not order_rows(mysql, a)
        poll_until(lambda: parked(conf) == A_ORDERS, 10, f"{A_ORDERS} orders set aside")
        assert "orders set aside, the rest of the batch goes on" in consumer.log_text(since_start=True)

        # Their offsets were not committed: a restarted consumer reads them again.
        consumer.stop()
        assert f"stopped with {A_ORDERS} orders set aside" in consumer.log_text(since_start=True)
        consumer.start()
        poll_until(lambda: parked(conf) == A_ORDERS, 20, "the orders set aside again after a restart")
    finally:
        redis("DEL", claimed)
    wait_for_consumer(mysql, redis, conf, a, A_ORDERS, consumer, timeout=60)
    assert sorted(order_rows(mysql, a)) == sorted(held)
    assert set(statuses(redis, conf, a, held)) == {"SUCCESS"}
    poll_until(lambda: parked(conf) == 0, 10, "the lot empty")
    for sale in (a, b):
        verify = ctl("verify", sale)
        assert verify.rc == 0, repr(verify)
