"""The configuration as the binaries see it, for the integration suite, the chaos suite and
the benchmark: every value comes from `seckillctl -c FILE config get KEY`, which prints what
the loader ends with (the file's line, a SECKILL_<KEY> variable of the environment, or the
built-in default of src/common/config.c). So no Python code keeps a copy of the defaults.

`config get` takes one key: each key costs one seckillctl process (some 15 ms with the ASan
build). Answers are cached per binary, file (path, size, mtime), SECKILL_* variables and key.
"""

import os
import subprocess
from pathlib import Path

# Redis keys of one activity (include/common/keys.h): "<prefix>:{A}". The stock and users
# prefixes are configuration keys; the others are fixed.
_KEY_PREFIX = {
    "activity": "seckill:activity",
    "stock": None,
    "users": None,
    "orders": "seckill:order",
    "resv": "seckill:resv",
    "queued": "seckill:queued",
    "claimed": "seckill:claimed",
    "failed": "seckill:failed",
    "failedusers": "seckill:failedusers",
}
_PREFIX_SETTING = {"stock": "seckill.stock.prefix", "users": "seckill.user.prefix"}

_cache = {}


class ConfigError(RuntimeError):
    """seckillctl refused the file or the key."""


def config_get(ctl, path, key, env=None):
    """The value of `key` in the configuration file `path` as `ctl` (seckillctl) loads it
    with the environment `env` (default: this process's)."""
    env = os.environ if env is None else env
    st = os.stat(path)
    overrides = tuple(sorted((k, v) for k, v in env.items() if k.startswith("SECKILL_")))
    ident = (str(ctl), str(path), st.st_mtime_ns, st.st_size, overrides, key)
    if ident not in _cache:
        p = subprocess.run([str(ctl), "-c", str(path), "config", "get", key], env=dict(env),
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise ConfigError(f"{ctl} -c {path} config get {key}: exit {p.returncode}: "
                              f"{p.stderr.strip()}")
        _cache[ident] = p.stdout.rstrip("\n")
    return _cache[ident]


class Conf:
    """One configuration file, read through seckillctl (`ctl`) with the environment `env`."""

    def __init__(self, path, ctl, env=None):
        self.path = Path(path)
        self.ctl = Path(ctl)
        self.env = env

    def get(self, key):
        return config_get(self.ctl, self.path, key, self.env)

    def get_int(self, key):
        return int(self.get(key))

    def data_dir(self, root):
        """Where scripts/stack.sh keeps this stack's services, pid files and logs
        (stack.data-dir, relative to the checkout `root`)."""
        d = Path(self.get("stack.data-dir"))
        return d if d.is_absolute() else Path(root) / d

    @property
    def http_host(self):
        """Where a client reaches the gateway: a wildcard address means this host."""
        host = self.get("http.host")
        return "127.0.0.1" if host in ("0.0.0.0", "") else host

    @property
    def http_port(self):
        return self.get_int("http.port")

    @property
    def base_url(self):
        return f"http://{self.http_host}:{self.http_port}"

    def key(self, kind, activity_id):
        """The Redis key of one activity: kind is activity, stock, users, orders, resv,
        queued, claimed, failed or failedusers."""
        prefix = _KEY_PREFIX[kind] or self.get(_PREFIX_SETTING[kind])
        return f"{prefix}:{{{activity_id}}}"
