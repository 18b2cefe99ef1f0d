"""`make install` and `make uninstall` (issue 14 item 5).

An install staged under a DESTDIR of the test's own runs a whole sale from there: its
seckillctl creates the coupon and the activity, its gateway sells, its consumer persists,
its seckillctl verify passes. They run from another directory with no -c, no SECKILL_*
variable and no repository path: each finds its config and the Lua scripts in the
installed tree. Uninstall then removes exactly what install put there, and leaves a
config the operator had changed."""

import subprocess

import pytest

from sales import wait_for_consumer

from stack import BASE_CONF, ROOT, TEST_LIMITS, child_env, conf_of, free_port, healthz_ok, poll_until
from gatewayhttp import Api
from makeinstall import files_under, make

PREFIX = "/usr/local"


@pytest.fixture(scope="module")
def staged(tmp_path_factory, services):
    """The install under DESTDIR, its config naming the tests' stack."""
    dest = tmp_path_factory.mktemp("destdir")
    make(ROOT, "install", PREFIX, dest)
    top = dest / PREFIX.lstrip("/")
    conf = top / "etc" / "seckill" / "seckill.conf"
    extra = {"http.port": str(free_port()), "consumer.metrics-port": str(free_port()), **TEST_LIMITS}
    conf.write_text(BASE_CONF.read_text(encoding="utf-8") + "\n"
                    + "".join(f"{k} = {v}\n" for k, v in extra.items()), encoding="utf-8")
    return dest, top


def installed(top, name, *args, cwd, timeout=120):
    """An installed binary run from cwd, without -c: nothing but its own tree tells it
    where the config and the scripts are."""
    return subprocess.run([str(top / "bin" / name), *map(str, args)], cwd=cwd, env=child_env(),
                          capture_output=True, text=True, timeout=timeout)


def ctl_id(top, cwd, *args):
    p = installed(top, "seckillctl", *args, cwd=cwd)
    assert p.returncode == 0, f"seckillctl {args}: {p.stderr}"
    return int(p.stdout.strip().splitlines()[-1])


class Daemon:
    def __init__(self, top, name, cwd, log):
        self.log = log
        with open(log, "ab") as f:
            self.proc = subprocess.Popen([str(top / "bin" / name)], cwd=cwd, env=child_env(),
                                         stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def text(self):
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_ready(self, ready, what):
        def check():
            assert self.proc.poll() is None, f"{what} exited {self.proc.returncode}:\n{self.text()}"
            return ready()
        poll_until(check, 30, what)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return "hung"


def test_the_installed_tree_runs_a_sale(staged, tmp_path, mysql, redis, ids):
    dest, top = staged
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lua = installed(top, "seckillctl", "config", "get", "seckill.lua-dir", cwd=elsewhere)
    assert lua.returncode == 0, lua.stderr
    assert lua.stdout.strip() == str(top / "share" / "seckill" / "lua"), lua.stdout
    conf = conf_of(top / "etc" / "seckill" / "seckill.conf")

    stock = 5
    coupon = ctl_id(top, elsewhere, "coupon", "create", "--name", "installed", "--type", "CASH",
                    "--amount", "5.00", "--total", stock * 2, "--start", "-1m", "--end", "+1d")
    activity = ctl_id(top, elsewhere, "activity", "create", "--coupon", coupon, "--stock", stock,
                      "--start", "now", "--end", "+1h")
    consumer = Daemon(top, "order-consumer", elsewhere, tmp_path / "order-consumer.log")
    gateway = Daemon(top, "seckill-server", elsewhere, tmp_path / "seckill-server.log")
    try:
        consumer.wait_ready(lambda: "order-consumer: ready" in consumer.text(), "the installed consumer")
        gateway.wait_ready(lambda: healthz_ok(conf.http_port), "the installed gateway")
        api = Api(conf.base_url)
        codes = [api.execute(ids(), activity).code for _ in range(stock + 3)]
        assert codes.count(200) == stock and codes.count(409) == 3, codes
        wait_for_consumer(mysql, redis, conf, activity, expected_rows=stock)
        verify = installed(top, "seckillctl", "verify", activity, cwd=elsewhere)
        assert verify.returncode == 0, verify.stdout + verify.stderr
    finally:
        rc = (gateway.stop(), consumer.stop())
    assert rc == (0, 0), f"exit statuses {rc}\n{gateway.text()[-2000:]}\n{consumer.text()[-2000:]}"


def test_uninstall_removes_exactly_what_install_put(tmp_path):
    dest = tmp_path / "dest"
    foreign = dest / "usr" / "local" / "bin" / "someone-elses-tool"
    foreign.parent.mkdir(parents=True)
    foreign.write_text("#!/bin/sh\n")
    before = files_under(dest)
    make(ROOT, "install", PREFIX, dest)
    added = files_under(dest) - before
    assert {"usr/local/bin/seckill-server", "usr/local/bin/order-consumer", "usr/local/bin/seckillctl",
            "usr/local/share/seckill/lua/execute.lua", "usr/local/share/seckill/schema/mysql.sql",
            "usr/local/etc/seckill/seckill.conf", "usr/local/lib/systemd/system/seckill-server@.service",
            "usr/local/lib/systemd/system/order-consumer@.service", "usr/local/bin/seckill-admin",
            "usr/local/lib/systemd/system/seckill-admin.service"} <= added, sorted(added)
    lua = {p.name for p in (ROOT / "schema" / "lua").glob("*.lua")}
    assert {p.name for p in (dest / "usr/local/share/seckill/lua").iterdir()} == lua
    make(ROOT, "uninstall", PREFIX, dest)
    assert files_under(dest) == before
    for d in ("usr/local/share/seckill", "usr/local/etc/seckill"):
        assert not (dest / d).exists(), d


def test_a_config_the_operator_changed_survives_install_and_uninstall(tmp_path):
    dest = tmp_path / "dest"
    conf = dest / "usr" / "local" / "etc" / "seckill" / "seckill.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("http.port = 9999\n")
    p = make(ROOT, "install", PREFIX, dest)
    assert "kept" in p.stderr and conf.read_text() == "http.port = 9999\n", p.stderr
    make(ROOT, "uninstall", PREFIX, dest)
    assert conf.read_text() == "http.port = 9999\n"
    assert files_under(dest) == {"usr/local/etc/seckill/seckill.conf"}


def test_uninstall_without_an_install_changes_nothing(tmp_path):
    dest = tmp_path / "dest"
    (dest / "usr" / "local" / "bin").mkdir(parents=True)
    (dest / "usr" / "local" / "bin" / "seckillctl").write_text("not ours\n")
    p = subprocess.run(["make", "-s", "uninstall", f"PREFIX={PREFIX}", f"DESTDIR={dest}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "nothing installed" in p.stderr, p.stderr
    assert (dest / "usr" / "local" / "bin" / "seckillctl").read_text() == "not ours\n"
