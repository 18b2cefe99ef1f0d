"""Buckets of a hot sale from the tests' side (src/common/bucket.h): the user -> bucket
function as the gateway and execute.lua compute it, a buyer that retries while its bucket
is refilled, and the Redis keys of one bucket."""

import json
import time

from luabody import lua_body


def bucket_of(user, count):
    """bucket.c's bucket_of_user: the decimal digits' polynomial hash mod 65521, mod count."""
    h = 0
    for digit in str(user):
        h = (h * 31 + int(digit)) % 65521
    return h % count


def users_of_bucket(ids, bucket, count, n):
    """n fresh user ids (from the ids fixture) that all land in `bucket`."""
    found = []
    while len(found) < n:
        u = ids()
        if bucket_of(u, count) == bucket:
            found.append(u)
    return found


def buy(execute, user, activity, timeout=30):
    """What a client that honours the retryable refusal gets in the end: execute(user,
    activity) -> (status, body) is repeated while the answer is 503 (the user's bucket
    empty while stock is moved to it). Returns (status, body, retries)."""
    deadline = time.monotonic() + timeout
    retries = 0
    while True:
        status, body = execute(user, activity)
        if status != 503 or time.monotonic() > deadline:
            return status, body, retries
        retries += 1
        # Retry-After says 1 s; the tests' gateways rebalance every 100 ms.
        time.sleep(0.05)


def buckets_of(ctl, activity):
    """[{bucket, tag, master, stockLeft}] of `activity show --json`, plus inTransit."""
    r = ctl("activity", "show", activity, "--json")
    assert r.rc == 0, repr(r)
    redis = json.loads(r.stdout)["redis"]
    return redis.get("buckets", []), redis.get("inTransit", 0)


def run_script(redis, keys, *args):
    """rebalance.lua run by hand on the master of keys[0] (one step of a transfer, as a
    gateway would run it): EVAL's first argument is the script, so a ClusterRedis is told
    where to send it."""
    from resp import ClusterRedis, key_slot
    argv = ("EVAL", lua_body("rebalance"), len(keys), *keys, *args)
    if isinstance(redis, ClusterRedis):
        with redis.lock:
            node = redis._conn(redis._master(key_slot(keys[0])))
        return node(*argv)
    return redis(*argv)


def bucket_key(conf, kind, tag):
    """A key of one bucket: kind as Conf.key (activity, stock, users, orders, ...) or
    xfer:out / xfer:in."""
    if kind.startswith("xfer:"):
        return f"seckill:{kind}:{{{tag}}}"
    return conf.key(kind, tag)
