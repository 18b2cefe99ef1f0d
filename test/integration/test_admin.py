"""What a new administrator types: the seckillctl example of docs/administration.md (as
written, but for the ids it prints and the date of the sale, which must stay in the future),
seckillctl run outside the repository, and `make status` with the stack down."""

import datetime
import os
import re
import shlex
import shutil
import subprocess

from stack import BIN, ROOT, child_env

ISO_WITH_OFFSET = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d([+-]\d\d:\d\d)$")


def documented_admin_commands():
    """The seckillctl command lines of the first block of docs/administration.md's
    "seckillctl" section, as argv lists without the program (continuation lines joined,
    comments dropped)."""
    text = (ROOT / "docs" / "administration.md").read_text()
    section = text.split("\n## seckillctl\n", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    commands = []
    for line in block.splitlines():
        argv = shlex.split(line, comments=True)
        if argv:
            assert argv[0] == "build/seckillctl", line
            commands.append(argv[1:])
    return commands


def tomorrow_same_form(iso):
    """An ISO time with the offset of `iso`, a day from now at 20:00 there."""
    sign, hh, mm = iso[-6], int(iso[-5:-3]), int(iso[-2:])
    offset = datetime.timedelta(hours=hh, minutes=mm) * (1 if sign == "+" else -1)
    zone = datetime.timezone(offset)
    day = datetime.datetime.now(zone) + datetime.timedelta(days=1)
    return day.replace(hour=20, minute=0, second=0, microsecond=0).isoformat()


def test_documented_administration_example(ctl, mysql):
    """Runs every command of the example; `--start <ISO> --end +1h` is a one-hour sale."""
    commands = documented_admin_commands()
    assert [c[:2] for c in commands[:2]] == [["coupon", "create"], ["activity", "create"]], commands
    coupon_id = activity_id = None
    sale_start = None
    for argv in commands:
        argv = list(argv)
        for i, a in enumerate(argv):
            if ISO_WITH_OFFSET.match(a):
                sale_start = argv[i] = tomorrow_same_form(a)
        if argv[:2] == ["activity", "create"]:
            argv[argv.index("--coupon") + 1] = str(coupon_id)
        elif argv[:2] in (["activity", "show"], ["activity", "warmup"]) or argv[0] == "verify":
            argv = [str(activity_id) if a == "1" else a for a in argv]
        r = ctl(*argv)
        assert r.rc == 0, repr(r)
        if argv[:2] == ["coupon", "create"]:
            coupon_id = int(r.last_line())
        elif argv[:2] == ["activity", "create"]:
            activity_id = int(r.last_line())
    assert sale_start is not None
    # The columns hold UTC (timeparse_format_sql).
    start, seconds = mysql.rows(f"SELECT start_time, TIMESTAMPDIFF(SECOND, start_time, end_time) "
                                f"FROM seckill_activity WHERE id = {activity_id}")[0]
    want = datetime.datetime.fromisoformat(sale_start).astimezone(datetime.timezone.utc)
    assert start == want.strftime("%Y-%m-%d %H:%M:%S.000"), (start, sale_start)
    assert int(seconds) == 3600


def test_relative_end_after_relative_start_counts_from_now(ctl, mysql):
    """`--start +1h --end +2h` stays the sale from one hour to two hours from now."""
    sale = ctl.create_sale(3, start="+1h", end="+2h")
    start_in, seconds = mysql.rows(f"SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), start_time), "
                                   f"TIMESTAMPDIFF(SECOND, start_time, end_time) "
                                   f"FROM seckill_activity WHERE id = {sale.activity_id}")[0]
    assert 3500 < int(start_in) <= 3600 and int(seconds) == 3600, (start_in, seconds)


def test_seckillctl_outside_the_repository(tmp_path):
    """Without -c or SECKILL_CONF, seckillctl run from elsewhere reads the checkout's
    conf/seckill.conf (found from its own location)."""
    env = {k: v for k, v in child_env().items() if k != "SECKILL_CONF"}
    for binary in (BIN / "seckillctl", ROOT / "build" / "seckillctl"):
        p = subprocess.run([str(binary), "config", "get", "http.port"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, (binary, p.stderr)
        assert p.stdout.strip().isdigit(), p.stdout
    # A file named there still wins, and a missing one is still an error.
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "seckill.conf").write_text("http.port = 4242\n")
    p = subprocess.run([str(BIN / "seckillctl"), "config", "get", "http.port"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout.strip()) == (0, "4242"), p.stderr
    p = subprocess.run([str(BIN / "seckillctl"), "config", "get", "http.port"], cwd=tmp_path,
                       env=dict(env, SECKILL_CONF=str(tmp_path / "nope.conf")),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "nope.conf" in p.stderr


def test_make_status_with_the_stack_down(tmp_path):
    """`make status` in a checkout whose stack is down says so and exits 0. The checkout
    is a copy of the scripts (the real stack's services are shared and stay up)."""
    clone = tmp_path / "clone"
    clone.mkdir()
    for d in ("scripts", "conf"):
        shutil.copytree(ROOT / d, clone / d)
    shutil.copy(ROOT / "Makefile", clone / "Makefile")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECKILL_") and k != "CONF"}
    p = subprocess.run(["make", "-s", "status"], cwd=clone, env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Error" not in p.stderr, p.stderr
    assert "stopped" in p.stdout and "down" in p.stdout, p.stdout
    # The scripts' own question "is it all up?" still answers no.
    q = subprocess.run(["bash", "scripts/stack.sh", "running"], cwd=clone, env=env,
                       capture_output=True, text=True, timeout=120)
    assert q.returncode == 1, q.stdout + q.stderr
