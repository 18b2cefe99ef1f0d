"""The helpers of bench/bench.py: seckillctl (the mariadb session is test/lib/mariadb.py), the processes it
measures and their /proc figures, the gateway's /metrics, wrk, and the description of the
machine and versions a run's figures were taken with."""

import http.client
import json
import os
import platform
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "test" / "lib"))
from mariadb import Session as MySQL  # noqa: E402,F401 - bench.py imports it from here
LUA = ROOT / "bench" / "wrkexecute.lua"
BUILD = Path(os.environ.get("BUILD") or "build")
BUILD = BUILD if BUILD.is_absolute() else ROOT / BUILD
CTL = BUILD / "seckillctl"
CLK_TCK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1


# ---- MariaDB and seckillctl ----------------------------------------------------------------


def ctl(conf, *args, check=True, timeout=600):
    p = subprocess.run([str(CTL), "-c", conf.path] + [str(a) for a in args], cwd=ROOT,
                       capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"seckillctl {' '.join(map(str, args))}: rc {p.returncode}: "
                           f"{p.stderr.strip()} {p.stdout.strip()}")
    return p


def ctl_id(conf, *args):
    lines = [line for line in ctl(conf, *args).stdout.splitlines() if line.strip()]
    return int(lines[-1])


# ---- processes and /proc --------------------------------------------------------------------


def proc_ticks(pid):
    """utime + stime of a process (and its threads), in clock ticks."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def kb_field(path, field):
    """A "Field:   123 kB" line of a /proc file, in kB."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def proc_status_kb(pid, field):
    return kb_field(f"/proc/{pid}/status", field)


def reset_peak_rss(pid):
    """Resets VmHWM to the current RSS (Linux >= 4.0), so that each scenario has its own peak."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def system_ticks():
    """(busy, softirq) jiffies of all CPUs from /proc/stat. Softirq time (the network
    stack's receive path, mostly) is charged to no process."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v[:8]) - idle, v[6]


def read_pidfile(path):
    try:
        pid = int(Path(path).read_text().split()[0])
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError, IndexError):
        return None


def cluster_service_pids(conf):
    """{"redis": [pid of each node], "kafka": [pid of each broker], "mariadb": pid} of the
    services scripts/stack.sh started with conf (a pid None where one is not running): one
    Redis, or every node of redis.nodes (scripts/redis-cluster.sh keeps node PORT under
    redis-cluster/PORT), and a broker per entry of kafka.brokers (kafka, kafka-2, ...)."""
    var = conf.data_dir(ROOT)
    brokers = conf.get("kafka.brokers").split(",")
    nodes = [n.rpartition(":")[2] for n in conf.get("redis.nodes").split(",") if n]
    return {
        "redis": ([read_pidfile(var / "redis-cluster" / port / "redis.pid") for port in nodes]
                  or [read_pidfile(var / "redis" / "redis.pid")]),
        "kafka": [read_pidfile(var / ("kafka" if i == 1 else f"kafka-{i}") / "kafka.pid")
                  for i in range(1, len(brokers) + 1)],
        "mariadb": read_pidfile(var / "mariadb" / "mariadbd.pid"),
    }


class Proc:
    """One process this script starts: its own session, stdout and stderr to a log file,
    its pid in RUN_DIR so that bench/run.sh can clean up after a crash of this script."""

    RUN_DIR = None

    def __init__(self, name, argv, logdir):
        self.name, self.argv = name, [str(a) for a in argv]
        self.log = Path(logdir) / f"{name}.log"
        self.proc = None

    def start(self):
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as logf:
            self.proc = subprocess.Popen(self.argv, cwd=ROOT, stdin=subprocess.DEVNULL,
                                         stdout=logf, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        if self.RUN_DIR:
            Path(self.RUN_DIR).mkdir(parents=True, exist_ok=True)
            (Path(self.RUN_DIR) / f"{self.name}.pid").write_text(f"{self.proc.pid}\n")
        return self

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_text(self):
        try:
            with open(self.log, "rb") as f:
                f.seek(self.offset)
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def wait_ready(self, check, timeout=60, what="ready"):
        deadline = time.monotonic() + timeout
        while not check():
            if not self.alive():
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} while starting:\n"
                                   + "\n".join(self.log_text().splitlines()[-20:]))
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} not {what} after {timeout}s:\n"
                                   + "\n".join(self.log_text().splitlines()[-20:]))
            time.sleep(0.05)

    def stop(self, timeout=60):
        """SIGTERM and wait; returns (exit status or 'killed', seconds to exit)."""
        if self.proc is None:
            return None, 0
        t0 = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                rc = "killed"
            else:
                rc = self.proc.returncode
        else:
            rc = self.proc.returncode
        if self.RUN_DIR:
            (Path(self.RUN_DIR) / f"{self.name}.pid").unlink(missing_ok=True)
        return rc, round(time.monotonic() - t0, 2)


# ---- HTTP helpers -----------------------------------------------------------------------------


def http_get(addr, path, timeout=10):
    c = http.client.HTTPConnection(addr[0], addr[1], timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        c.close()


def http_ok(addr, path):
    try:
        return http_get(addr, path, timeout=2)[0] == 200
    except (OSError, http.client.HTTPException):
        return False


METRIC_LINE = re.compile(r'^([a-z_]+)(\{[^}]*\})?\s+([0-9.eE+-]+)$')


def scrape(addr):
    """The gateway's /metrics: {'responses': {'OK 200': n, ...}, 'values': {name: v}} (the
    responses by API status and code, and every metric without labels)."""
    status, text = http_get(addr, "/metrics")
    if status != 200:
        raise RuntimeError(f"/metrics answered {status}")
    responses, values = {}, {}
    for line in text.splitlines():
        m = METRIC_LINE.match(line)
        if not m:
            continue
        name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
        if name == "seckill_http_responses_total":
            lab = dict(re.findall(r'(\w+)="([^"]*)"', labels))
            responses[f"{lab.get('status')} {lab.get('code')}"] = int(value)
        elif not labels:
            values[name] = value
    return {"responses": responses, "values": values}


def delta(after, before):
    keys = set(after) | set(before)
    d = {k: after.get(k, 0) - before.get(k, 0) for k in keys}
    return {k: v for k, v in sorted(d.items(), key=lambda kv: -kv[1]) if v}


# ---- wrk ----------------------------------------------------------------------------------------


def wrk_argv(addr, threads, conns, seconds, activity, user_base, xff=False):
    """wrk with bench/wrkexecute.lua against addr: every request a new user from user_base."""
    url = f"http://{addr[0]}:{addr[1]}"
    return ["wrk", f"-t{threads}", f"-c{conns}", f"-d{seconds}s", "--latency", "-s", str(LUA),
            url, "--", str(activity), str(user_base)] + (["xff"] if xff else [])


def wrk_result(returncode, stdout, stderr):
    """The BENCH_JSON line of wrkexecute.lua's done(), as a dict."""
    line = next((l for l in stdout.splitlines() if l.startswith("BENCH_JSON ")), None)
    if returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed (rc {returncode}): {stderr.strip()} {stdout.strip()}")
    return json.loads(line[len("BENCH_JSON "):])


def run_wrk(addr, threads, conns, seconds, activity, user_base, xff=False):
    argv = wrk_argv(addr, threads, conns, seconds, activity, user_base, xff)
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = wrk_result(p.returncode, p.stdout, p.stderr)
    out["cpu_s"] = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    out["argv"] = " ".join(argv)
    return out


# ---- bench/openloop ------------------------------------------------------------------------------


def run_openloop(addr, activity, rate, first_user, seconds=None, count=None, conns=512, xff=False,
                 drain_seconds=30):
    """One run of build/bench/openloop (bench/openloop.c): its JSON line, its CPU seconds
    and its command line."""
    argv = [str(BUILD / "bench" / "openloop"), "-h", addr[0], "-p", str(addr[1]),
            "-a", str(activity), "-r", f"{rate:.0f}", "-c", str(conns), "-u", str(first_user),
            "-t", str(drain_seconds)]
    argv += ["-d", str(seconds)] if count is None else ["-n", str(count)]
    if xff:
        argv.append("-x")
    budget = (seconds or count / rate) + drain_seconds + 60
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=budget)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    line = next((l for l in p.stdout.splitlines() if l.startswith("{")), None)
    if p.returncode != 0 or line is None:
        raise RuntimeError(f"openloop failed (rc {p.returncode}): {p.stderr.strip()} {p.stdout.strip()}")
    out = json.loads(line)
    out["cpu_s"] = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    out["argv"] = " ".join(argv).replace(str(ROOT) + "/", "")
    return out


def metric_value(addr, name):
    """One unlabelled metric of a /metrics endpoint (the consumer's lag gauge), or None."""
    try:
        status, text = http_get(addr, "/metrics")
    except (OSError, http.client.HTTPException):
        return None
    if status != 200:
        return None
    for line in text.splitlines():
        m = METRIC_LINE.match(line)
        if m and m.group(1) == name and not m.group(2):
            return float(m.group(3))
    return None


def redis_persistence(redis):
    """The forks Redis did since it started (INFO persistence): AOF rewrites and RDB saves,
    and whether one is running now. A rewrite during a measured run costs a fork and the
    copy-on-write of the data set: the run's figures then say so."""
    info = {}
    for line in str(redis("INFO", "persistence")).splitlines():
        k, _, v = line.strip().partition(":")
        if k in ("aof_rewrites", "rdb_saves", "aof_rewrite_in_progress", "rdb_bgsave_in_progress",
                 "aof_rewrite_scheduled"):
            info[k] = int(v)
    return info


# ---- the run's environment ------------------------------------------------------------


def first_line(argv):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (p.stdout or "") + (p.stderr or "")
    return text.strip().splitlines()[0].strip() if text.strip() else None


def environment(conf, mysql):
    """The machine, the versions and the configuration the figures were taken with."""
    model = None
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem_kb = kb_field("/proc/meminfo", "MemTotal")
    pom = (ROOT / "scripts" / "kafka" / "pom.xml")
    kafka = None
    if pom.exists():
        m = re.search(r"<kafka.version>([^<]+)</kafka.version>", pom.read_text())
        kafka = m.group(1) if m else None
    pkg = {}
    for name in ("libevent", "hiredis", "rdkafka", "libmariadb", "libcjson"):
        pkg[name] = first_line(["pkg-config", "--modversion", name])
    git = first_line(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip() != ""
    keys = ["seckill.order.reply-after-ack", "kafka.producer.linger.ms", "kafka.topic-partitions",
            "kafka.topic", "consumer.group-id", "consumer.batch-size", "consumer.batch-timeout-ms",
            "redis.appendfsync", "http.backlog", "http.idle-timeout", "http.max-connections",
            "seckill.enable-rate-limit", "seckill.enable-anti-brush", "log.level",
            "http.port", "redis.port", "kafka.brokers", "mysql.port"]
    try:
        flush = mysql.scalar("SELECT @@innodb_flush_log_at_trx_commit")
    except RuntimeError:
        flush = None
    return {
        "machine": {
            "nproc": NCPU, "cpu_model": model,
            "mem_gib": round(mem_kb / 1024 / 1024, 1) if mem_kb else None,
            "kernel": platform.release(), "os": first_line(["sh", "-c", ". /etc/os-release; echo $PRETTY_NAME"]),
            "loadavg_before": Path("/proc/loadavg").read_text().split()[:3],
        },
        "versions": {
            **pkg,
            "redis": first_line(["redis-server", "--version"]),
            "mariadb": first_line(["mariadbd", "--version"]),
            "kafka": kafka,
            "java": first_line(["java", "-version"]),
            "wrk": first_line(["wrk", "--version"]),
            "cc": first_line(["cc", "--version"]),
            "gnuplot": first_line(["gnuplot", "--version"]),
            "git": f"{git}{' (with uncommitted changes)' if dirty else ''}" if git else None,
        },
        "config": {**{k: conf.get(k) for k in keys}, "mariadb innodb_flush_log_at_trx_commit": flush},
    }
