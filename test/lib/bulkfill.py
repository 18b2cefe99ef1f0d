"""A sale of many sold orders written straight into its Redis keys, for the big-sale test
(test/integration/test_big_sale.py) and the benchmark's big sale (bench/bigsale.py).

Filling through HTTP would take minutes per million. The orders are left in the shape
execute.lua and finalize.lua leave a sold order in: users: user -> orderNo, orders:
orderNo -> SUCCESS, one unit off the stock key, the activity hash's 'sold' counter up by
one. Their rows are not written to MySQL by bulk_fill; bulk_rows writes them, for a test
that needs the sale persisted as the consumer would have left it."""

import time

CHUNK = 5000
ORDERNO_EPOCH_MS = 1704067200000
# A node id no gateway leases: the filled orders are nobody's reservations anyway.
NODE = 1022

# HSETs one chunk in the shape of a finalized order. KEYS: users, orders, stock, activity.
FILL = """
for i = 1, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i + 1], ARGV[i])
  redis.call('HSET', KEYS[2], ARGV[i], 'SUCCESS')
end
redis.call('DECRBY', KEYS[3], #ARGV / 2)
redis.call('HINCRBY', KEYS[4], 'sold', #ARGV / 2)
return #ARGV / 2
"""


def order_no(ms, seq):
    """An order number as orderno.c makes them: 41 bits of time, 10 of node, 12 of sequence."""
    return str(((ms - ORDERNO_EPOCH_MS) << 22) | (NODE << 12) | seq)


def bulk_fill(redis, conf, activity_id, n, first_user, ms=None):
    """Writes n sold orders of users first_user, first_user + 1, ... into the warmed sale
    activity_id; returns how many were written. ms: the time of the first order number
    (an hour ago by default)."""
    keys = [conf.key(k, activity_id) for k in ("users", "orders", "stock", "activity")]
    if ms is None:
        ms = int(time.time() * 1000) - 3_600_000
    done = 0
    while done < n:
        args = []
        for i in range(done, min(n, done + CHUNK)):
            args += [order_no(ms + i // 4096, i % 4096), str(first_user + i)]
        done += redis("EVAL", FILL, 4, *keys, *args)
    return done


def bulk_rows(mysql, activity_id, coupon_id, n, first_user, ms):
    """The seckill_order rows of the orders bulk_fill(..., first_user, ms) wrote, the same
    order numbers and users, and the sale's sold_count, in one statement each (MariaDB's
    sequence engine makes the n rows): MySQL as the consumer leaves a persisted sale, but
    for the user coupons, which no reader of these tests needs."""
    mysql.rows(
        "INSERT INTO seckill_order (order_no, user_id, activity_id, coupon_id, accepted_at) "
        f"SELECT CAST(((({ms} + (seq - 1) DIV 4096) - {ORDERNO_EPOCH_MS}) << 22) | ({NODE} << 12) "
        f"| ((seq - 1) MOD 4096) AS CHAR), {first_user} + seq - 1, {activity_id}, {coupon_id}, "
        f"UTC_TIMESTAMP(3) FROM seq_1_to_{n}")
    mysql.rows(f"UPDATE seckill_activity SET sold_count = sold_count + {n} WHERE id = {activity_id}")
