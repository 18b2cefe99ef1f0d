"""The consumer claims the next batch while the one before is written to MySQL, and the
writes keep the order of the batches. Sale A's first batch is held in MySQL (another
session locks A's counter row); orders of sale B that arrive meanwhile are claimed in
Redis at once — one batch at a time would leave them queued until A's write ended — yet
none of B's is written or shown SUCCESS before A's write is over. Once the lock goes, both
sales end with every order SUCCESS and in MySQL once."""

from mariadb import RowLock

from sales import buy_order, live_reservations, order_rows, success_count, wait_for_consumer

from stack import poll_until

B_ORDERS = 5


def test_the_next_batch_is_claimed_while_one_is_written(conf, gateway, consumer, ctl, mysql, redis, ids):
    a = ctl.create_sale(10).activity_id
    b = ctl.create_sale(10).activity_id
    lock = RowLock(mysql, f"SELECT id FROM seckill_activity WHERE id = {a}")
    try:
        first = buy_order(conf, ids(), a)
        waiting = "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() " \
                  f"AND INFO LIKE 'UPDATE seckill_activity SET sold_count%WHERE id = {a}'"
        poll_until(lambda: mysql.count(waiting) > 0, 10, f"the write of sale {a}'s batch to wait on the lock")
        bought = {buy_order(conf, ids(), b) for _ in range(B_ORDERS)}
        claimed = conf.key("claimed", b)
        # Sale A's write stays blocked on the lock until the finally below (checked after
        # the wait), so the deadline only bounds how long a loaded machine may take.
        poll_until(lambda: redis("SCARD", claimed) == B_ORDERS, 10,
                   f"sale {b}'s orders claimed while sale {a}'s batch is written")
        assert mysql.count(waiting) > 0, "the write of sale A's batch ended before the check"
        assert success_count(redis, conf, b) == 0, "a batch was shown SUCCESS before the one before it was written"
        assert not order_rows(mysql, b), "a batch was written before the one before it"
    finally:
        lock.release()
    wait_for_consumer(mysql, redis, conf, a, 1, consumer, timeout=60)
    wait_for_consumer(mysql, redis, conf, b, B_ORDERS, consumer, timeout=60)
    assert set(order_rows(mysql, a)) == {first}
    assert set(order_rows(mysql, b)) == bought
    for sale in (a, b):
        assert live_reservations(redis, conf, sale) == 0
        assert set(redis("HVALS", conf.key("orders", sale))) == {"SUCCESS"}
        assert mysql.count(f"SELECT sold_count FROM seckill_activity WHERE id = {sale}") == len(order_rows(mysql, sale))
        verify = ctl("verify", sale)
        assert verify.rc == 0, repr(verify)
