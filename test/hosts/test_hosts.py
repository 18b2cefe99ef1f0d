"""The hosts topology (scripts/hosts.sh) does what several machines need: every part runs in
a namespace of its own and listens on its own address only; the Redis Cluster names its
nodes by those addresses; the gateways reach Redis and the brokers at the addresses they
announce; MariaDB takes the consumers' connections from their addresses. Then a sale of a
few thousand orders over both gateways from the client namespace: every order answered 200
ends SUCCESS with its row, MySQL has exactly the sold rows, seckillctl verify (I1-I5) passes
and a sampler sees no SUCCESS before its row (I6)."""

import json
import queue
import subprocess
import threading
import time

import requests

import sales
from mariadb import MySQL
from netfault import ping_rtt_ms
from resp import redis_client
from stack import poll_until

BINARY = {"redis": "redis-server", "kafka": "java", "mysql": "mariadbd", "gw": "seckill-server",
          "cons": "order-consumer", "admin": "seckill-admin"}


def ns_processes(ns):
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
    names = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return names


def ss(ns, *args):
    """(local, peer) of each TCP socket ss lists in ns: its last two columns."""
    out = subprocess.run(["ip", "netns", "exec", ns, "ss", "-Htn", *args], capture_output=True, text=True,
                         check=True).stdout
    return [tuple(line.split()[-2:]) for line in out.splitlines() if line.strip()]


def host_of(endpoint):
    """The address of "a.b.c.d:port", also as a JVM binds it ("[::ffff:a.b.c.d]:port")."""
    host = endpoint.rsplit(":", 1)[0]
    if host.startswith("[::ffff:"):
        host = host[len("[::ffff:"):-1]
    return host


def test_every_part_on_its_own_host_and_address(topology):
    conf = topology.conf
    for ns, (addr, _, _) in topology.map.items():
        role = ns[3:].rstrip("0123456789")
        if role == "client":
            assert ns_processes(ns) == [], f"{ns}: {ns_processes(ns)}"
            continue
        assert BINARY[role] in ns_processes(ns), f"{ns} runs {ns_processes(ns)}, not {BINARY[role]}"
        # Bound to its own address (or loopback), never to every address; but seckill-admin,
        # bound to every address of its machine so that the gateways reach it where it is
        # advertised (admin.advertised-host).
        local = [local for local, _ in ss(ns, "-l")]
        assert local, f"{ns}: nothing listens"
        wildcard = ("0.0.0.0",) if role == "admin" else ()
        wrong = [a for a in local if host_of(a) not in (addr, "127.0.0.1", "[::1]") + wildcard]
        assert not wrong, f"{ns} ({addr}) listens on {wrong}"

    # The cluster's own view names every node by the address of redis.nodes.
    nodes = set(conf.get("redis.nodes").split(","))
    seen = set()
    first_host, first_port = conf.get("redis.nodes").split(",")[0].rsplit(":", 1)
    listing = subprocess.run(["redis-cli", "-h", first_host, "-p", first_port, "cluster", "nodes"],
                             capture_output=True, text=True, check=True).stdout
    for line in listing.splitlines():
        seen.add(line.split()[1].split("@")[0])
    assert seen == nodes

    # The gateways talk to Redis and the brokers at their namespaces' addresses (what the
    # slot map and the brokers' metadata announce), never through loopback.
    redis_hosts = {host_of(n) for n in nodes}
    kafka_hosts = {host_of(b) for b in conf.get("kafka.brokers").split(",")}
    for gw in ("sk-gw1", "sk-gw2"):
        peers = {host_of(peer) for _, peer in ss(gw, "state", "established")}
        assert redis_hosts & peers and kafka_hosts & peers, f"{gw} talks to {sorted(peers)}"
        assert peers <= redis_hosts | kafka_hosts | {topology.addr("sk-client"), "10.77.0.1"}, sorted(peers)
    # MariaDB takes the consumers' connections from their own addresses.
    clients = {host_of(peer) for _, peer in ss("sk-mysql", "state", "established")}
    assert {topology.addr("sk-cons1"), topology.addr("sk-cons2")} <= clients, sorted(clients)
    # Each consumer's /metrics answers on its own address.
    for i, ns in ((1, "sk-cons1"), (2, "sk-cons2")):
        port = int(conf.get("consumer.metrics-port")) + i - 1
        body = requests.get(f"http://{topology.addr(ns)}:{port}/metrics", timeout=5).text
        assert "\nseckill_consumer_ready 1\n" in "\n" + body


class I6Sampler(threading.Thread):
    """Takes order numbers answered 200 while the sale runs, polls each until SUCCESS and
    then looks for its row: SUCCESS shown before the row was committed is a violation."""

    def __init__(self, base_url, mysql):
        super().__init__(daemon=True)
        self.base_url, self.mysql = base_url, mysql
        self.q = queue.Queue()
        self.samples, self.violations, self.unseen = 0, [], 0

    def run(self):
        s = requests.Session()
        while True:
            no = self.q.get()
            if no is None:
                return
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                status = s.get(f"{self.base_url}/seckill/orders/{no}", timeout=5).json().get("status")
                if status == "SUCCESS":
                    if self.mysql.count(f"SELECT COUNT(*) FROM seckill_order WHERE order_no = '{no}'") != 1:
                        self.violations.append(no)
                    self.samples += 1
                    break
                time.sleep(0.02)
            else:
                self.unseen += 1


def run_load(cmd, on_line):
    """One openloop in the client namespace; each request's line to on_line; its summary."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    summary = None
    for line in p.stdout:
        if line.startswith("{"):
            summary = json.loads(line)
        else:
            on_line(line.rstrip("\n").split("\t"))
    err = p.stderr.read()
    assert p.wait(timeout=60) == 0, err
    return summary


def test_sale_over_both_gateways_from_the_client_namespace(topology):
    conf = topology.conf
    ctl = sales.Ctl(conf)
    mysql = MySQL(conf)
    redis = redis_client(conf)
    stock, per_gateway = 3000, 2000
    sale = ctl.create_sale(stock)
    a = sale.activity_id
    port = conf.get("http.port")
    sampler = I6Sampler(f"http://{topology.addr('sk-gw1')}:{port}", mysql)
    sampler.start()
    answers = []          # (gateway, user, status, body)
    lock = threading.Lock()
    seq = [0]

    def collect(gw):
        def on_line(f):
            with lock:
                if f[0] == "A":
                    answers.append((gw, int(f[1]), int(f[5]), f[7] if len(f) > 7 else ""))
                    if int(f[5]) == 200:
                        seq[0] += 1
                        if seq[0] % 25 == 0:
                            sampler.q.put(json.loads(f[7])["orderNo"])
                else:
                    answers.append((gw, int(f[1]), f[5], ""))
        return on_line

    user_base = (int(time.time()) % 100000) * 100000
    summaries = {}
    threads = []
    for i, gw in enumerate(("sk-gw1", "sk-gw2")):
        cmd = ["ip", "netns", "exec", "sk-client", str(topology.bin / "bench" / "openloop"),
               "-h", topology.addr(gw), "-p", port, "-a", str(a), "-r", "300", "-n", str(per_gateway),
               "-c", "32", "-u", str(user_base + i * 10000), "-l", "-T", "10", "-t", "30"]
        t = threading.Thread(target=lambda gw=gw, cmd=cmd:
                             summaries.__setitem__(gw, run_load(cmd, collect(gw))))
        t.start()
        threads.append(t)
    for t in threads:
        t.join(timeout=120)
    sampler.q.put(None)

    by_status = {}
    for _, _, status, _ in answers:
        by_status[status] = by_status.get(status, 0) + 1
    ok = {json.loads(body)["orderNo"]: user for _, user, status, body in answers if status == 200}
    per_gw = {gw: sum(1 for g, _, s, _ in answers if g == gw and s == 200) for gw in ("sk-gw1", "sk-gw2")}
    print(f"answers {by_status}, 200 per gateway {per_gw}, latency "
          f"{ {gw: s['latency_ms'] for gw, s in summaries.items()} }")
    assert len(answers) == 2 * per_gateway, summaries
    assert set(by_status) <= {200, 409, 503}, by_status
    assert all(n > 0 for n in per_gw.values()), per_gw
    # Most of the stock sells (503s, when a replica is slow to acknowledge, give units back).
    assert len(ok) >= stock * 3 // 4, by_status

    sales.wait_for_consumer(mysql, redis, conf, a, expected_rows=len(ok), timeout=120)
    rows = sales.order_rows(mysql, a)
    assert rows == ok, f"{len(rows)} rows for {len(ok)} orders answered 200"
    statuses = redis("HGETALL", conf.key("orders", a))
    orders = dict(zip(statuses[0::2], statuses[1::2]))
    assert all(orders.get(no) == "SUCCESS" for no in ok)
    left = int(redis("GET", conf.key("stock", a)) or 0)
    sold = mysql.count(f"SELECT sold_count FROM seckill_activity WHERE id = {a}")
    assert sold == len(ok) == stock - left, (sold, len(ok), stock, left)
    if by_status.get(409):
        assert left == 0, "OUT_OF_STOCK answered with stock left"

    v = ctl("verify", a)
    assert v.rc == 0, repr(v)
    sampler.join(timeout=60)
    assert sampler.samples >= 20 and not sampler.violations, \
        (f"I6: {sampler.samples} sampled, SUCCESS before the row: {sampler.violations[:5]}, "
         f"{sampler.unseen} never SUCCESS")


def test_archived_reads_reach_the_admin_on_its_own_host(topology):
    """seckill-admin in sk-admin, bound to 0.0.0.0 there: both gateways reach it at its
    advertised address for an archived sale's orders (asked on their own loopback, as
    admin.host alone said, they answered 503)."""
    conf = topology.conf
    assert conf.get("admin.host") == "0.0.0.0" and conf.get("admin.advertised-host") == topology.addr("sk-admin")
    ctl = sales.Ctl(conf)
    mysql = MySQL(conf)
    redis = redis_client(conf)
    port = conf.get("http.port")
    gw = [f"http://{topology.addr(n)}:{port}" for n in ("sk-gw1", "sk-gw2")]
    sale = ctl.create_sale(2, start="-50s", end="+4s").activity_id
    user = int(time.time() * 1000) % 10**9 * 1000 + 7
    r = requests.post(f"{gw[0]}/seckill/execute", params={"userId": user, "activityId": sale}, timeout=10)
    assert r.status_code == 200, r.text
    order = r.json()["orderNo"]
    sales.wait_for_consumer(mysql, redis, conf, sale, expected_rows=1, timeout=60)
    stats = {}

    def archived():
        stats["last"] = ctl("activity", "archive", sale)
        return stats["last"].rc == 0

    poll_until(archived, 60, f"the sale archived (last {stats.get('last')!r})")
    assert redis("EXISTS", conf.key("orders", sale)) == 0
    for base in gw:
        got = requests.get(f"{base}/seckill/orders/{order}", timeout=10)
        assert got.status_code == 200 and got.json()["status"] == "SUCCESS", (base, got.status_code, got.text)
        got = requests.get(f"{base}/seckill/result", params={"userId": user, "activityId": sale}, timeout=10)
        assert got.status_code == 200 and got.json()["orderNo"] == order, (base, got.status_code, got.text)


def test_a_delay_between_the_gateways_and_the_services(topology):
    """hosts.sh delay US: each gateway's new connections to a Redis node or a broker go
    through a delay proxy in its namespace, and nobody else's; a bad value is refused and
    changes nothing; delay 0 takes it away. Left at 100 us, so that test_zz_down sees down
    stop the proxies too."""
    host, port = topology.conf.get("redis.nodes").split(",")[0].rsplit(":", 1)
    rc, out = topology.sh("delay", "2000")
    assert rc == 0, out
    for ns in ("sk-gw1", "sk-gw2"):
        assert ping_rtt_ms(ns, host, port) >= 3.9, f"{ns}: a round trip to {host} not 2 x 2 ms"
    assert ping_rtt_ms("sk-cons1", host, port) < 2, "a consumer's connection went through a gateway's delay"
    rc, out = topology.sh("status")
    assert "delayproxy (sk-gw1):" in out and "2000 us each way" in out, out
    rc, out = topology.sh("delay", "2ms")
    assert rc != 0 and "expected a number of microseconds" in out, out
    assert ping_rtt_ms("sk-gw1", host, port) >= 3.9, "a refused delay changed the one in place"
    rc, out = topology.sh("delay", "0")
    assert rc == 0, out
    assert ping_rtt_ms("sk-gw1", host, port) < 2, "delay 0 left a delay"
    rc, out = topology.sh("delay", "100")
    assert rc == 0, out
