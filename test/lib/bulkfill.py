"""A sale of many sold orders written straight into its Redis keys, for the big-sale test
(test/integration/test_big_sale.py) and the benchmark's big sale (bench/bigsale.py).

Filling through HTTP would take minutes per million. The orders are left in the shape
execute.lua and finalize.lua leave a sold order in: users: user -> orderNo, orders:
orderNo -> SUCCESS, one unit off the stock key, the activity hash's 'sold' counter up by
one. Their rows are not written to MySQL."""

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


def bulk_fill(redis, conf, activity_id, n, first_user):
    """Writes n sold orders of users first_user, first_user + 1, ... into the warmed sale
    activity_id; returns how many were written."""
    keys = [conf.key(k, activity_id) for k in ("users", "orders", "stock", "activity")]
    ms = int(time.time() * 1000) - 3_600_000
    done = 0
    while done < n:
        args = []
        for i in range(done, min(n, done + CHUNK)):
            args += [order_no(ms + i // 4096, i % 4096), str(first_user + i)]
        done += redis("EVAL", FILL, 4, *keys, *args)
    return done
