#!/usr/bin/env python3
"""The report of `make bench`: Markdown, JSON and a gnuplot PNG from bench.py's results.

    report.py RESULT.json --stamp STAMP --results DIR [--command CMD]

Writes DIR/STAMP.md, DIR/STAMP.json and the plot DIR/STAMP.png, and the same as
DIR/latest.md, DIR/latest.json and DIR/latest.png. Every target of the issue is evaluated here, next
to the figure it is about, as met or missed.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def fmt_int(v):
    return "–" if v is None else f"{v:,.0f}"


def fmt(v, digits=2):
    if v is None:
        return "–"
    if isinstance(v, (int,)) and not isinstance(v, bool):
        return f"{v:,}"
    return f"{v:,.{digits}f}"


def mb(kb):
    return "–" if kb is None else f"{kb / 1024:.1f} MB"


def scenario(result, sid):
    return next((s for s in result["scenarios"] if s.get("id") == sid), None)


def evaluate(result):
    """[(target, figure, value text, met)] for every target of the issue."""
    t = result["targets"]
    out = []

    def add(name, figure, value, met):
        out.append({"target": name, "figure": figure, "value": value, "met": bool(met)})

    for conns in (256, 64):
        s = scenario(result, f"contended-{conns}")
        ratio = t.get(f"contended_ratio_{conns}", t.get("contended_ratio"))
        if s and "ratio_to_baseline" in s and ratio is not None:
            add(f"contended sale, {conns} connections: ≥ {ratio} × baseline req/s",
                f"contended-{conns}", f"{s['ratio_to_baseline']:.2f} × ({fmt_int(s['rps'])} req/s)",
                s["ratio_to_baseline"] >= ratio)
        if s and conns == 64:
            add(f"contended sale, 64 connections: p99 ≤ {t['contended_p99_ms_64']:g} ms", "contended-64",
                f"{s['latency_ms']['p99']:.2f} ms", s["latency_ms"]["p99"] <= t["contended_p99_ms_64"])
        cpu = t.get(f"stack_cpu_us_per_order_{conns}")
        if s and cpu is not None and s.get("stack_cpu_us_per_accepted_order") is not None:
            c = s["cpu_us_per_request"]
            add(f"contended sale, {conns} connections: gateway + Redis + broker ≤ {cpu:g} µs CPU per accepted order",
                f"contended-{conns}", f"{s['stack_cpu_us_per_accepted_order']:.1f} µs "
                f"({fmt(c.get('server'), 1)} + {fmt(c.get('redis'), 1)} + {fmt(c.get('kafka'), 1)})",
                s["stack_cpu_us_per_accepted_order"] <= cpu)
        per_process = t.get(f"process_cpu_us_per_order_{conns}") or {}
        names = {"server": "gateway", "redis": "Redis", "kafka": "broker"}
        for proc, limit in per_process.items():
            if s and s.get("cpu_us_per_request", {}).get(proc) is not None:
                used = s["cpu_us_per_request"][proc]
                add(f"contended sale, {conns} connections: {names.get(proc, proc)} ≤ {limit:g} µs CPU per accepted order",
                    f"contended-{conns}", f"{used:.1f} µs", used <= limit)
    e = scenario(result, "contended-early-64")
    if e and "ratio_to_contended" in e and "early_ratio_64" in t:
        add(f"reply before the ack, 64 connections: ≥ {t['early_ratio_64']:g} × the default mode's req/s",
            "contended-early-64", f"{e['ratio_to_contended']:.2f} × ({fmt_int(e['rps'])} req/s)",
            e["ratio_to_contended"] >= t["early_ratio_64"])
        add(f"reply before the ack, 64 connections: p99 ≤ {t['early_p99_ms_64']:g} ms", "contended-early-64",
            f"{e['latency_ms']['p99']:.2f} ms", e["latency_ms"]["p99"] <= t["early_p99_ms_64"])
    w = scenario(result, "bigsale-rewrite-64")
    if w and "rewrite_p99_ms_64" in t:
        add(f"big sale while Redis rewrites its AOF, 64 connections: p99 ≤ {t['rewrite_p99_ms_64']:g} ms",
            "bigsale-rewrite-64", f"{w['latency_ms']['p99']:.2f} ms (max {w['latency_ms']['max']:.1f} ms, "
            f"fork {w.get('fork_ms')} ms, rewrite {w.get('rewrite_s')} s of {w.get('redis_used_memory')})",
            w["latency_ms"]["p99"] <= t["rewrite_p99_ms_64"])
    for kind, what in (("soldout", "sold-out storm"), ("notstarted", "not-started storm")):
        for conns in (64, 256):
            s = scenario(result, f"{kind}-{conns}")
            if s and "ratio_to_baseline" in s:
                add(f"{what}, {conns} connections: ≥ {t['storm_ratio']} × baseline req/s", s["id"],
                    f"{s['ratio_to_baseline']:.2f} × ({fmt_int(s['rps'])} req/s)",
                    s["ratio_to_baseline"] >= t["storm_ratio"])
    c = scenario(result, "consumer")
    if c:
        add(f"consumer ≥ {t['consumer_orders_per_s']:,} orders/s into MariaDB", "consumer",
            f"{fmt_int(c['orders_per_s'])} orders/s", c["orders_per_s"] >= t["consumer_orders_per_s"])
    i = scenario(result, "idle-connections")
    if i:
        add(f"gateway RSS ≤ {t['idle_rss_mb']} MB holding {i['connections']:,} idle keep-alive connections",
            "idle-connections", f"{mb(i['rss_kb'])} ({i['held']:,} held)",
            i["rss_kb"] <= t["idle_rss_mb"] * 1024 and i["held"] == i["connections"])
    sp = scenario(result, "spike")
    if sp:
        for name, ok in sp.get("checks", {}).items():
            add(f"20:00 spike: {name}", "spike", spike_value(sp, name), ok)
    for s in result["scenarios"]:
        if s.get("kind") in ("openloop", "spike") and "unanswered" in s:
            add(f"{s['id']}: every request answered", s["id"], f"{s['unanswered']:,} unanswered",
                s["unanswered"] == 0)
        if "socket_errors" in s:
            add(f"{s['id']}: zero socket errors", s["id"], fmt(s["socket_errors"]), s["socket_errors"] == 0)
        if "unexpected" in s:
            add(f"{s['id']}: zero unexpected statuses", s["id"], fmt(s["unexpected"]), s["unexpected"] == 0)
    for k in result["correctness"]:
        add(f"correctness of the {k['activity']} sale (orders == stock sold, no duplicates, verify)",
            f"activity {k['activity_id']}", f"{k['rows']:,} rows, sold {k['sold']:,}", k["ok"])
    cl = result.get("cluster")
    if cl:
        for s in cl["scenarios"]:
            add(f"cluster {s['id']}: zero socket errors and unexpected statuses", f"cluster {s['id']}",
                f"{s['socket_errors']} + {s['unexpected']}", s["socket_errors"] == 0 and s["unexpected"] == 0)
        for k in cl["correctness"]:
            add("correctness of the cluster's contended sale (orders == stock sold, no duplicates, verify)",
                f"cluster activity {k['activity_id']}", f"{k['rows']:,} rows, sold {k['sold']:,}", k["ok"])
        if cl.get("errors"):
            add("cluster part without errors", "cluster", "; ".join(cl["errors"])[:200], False)
    return out


def cluster_section(result):
    """TOPOLOGY=cluster against single, from the same run (bench/cluster.py)."""
    cl = result.get("cluster")
    if not cl:
        return []
    L = ["## TOPOLOGY=cluster against single\n"]
    redis = (f"a Redis Cluster of {cl['redis_nodes']} nodes (masters and replicas; the Redis column sums them)"
             if cl.get("redis_nodes", 1) > 1 else "one Redis")
    L.append(f"The contended sale again on the cluster topology (bench/cluster.py, conf/cluster.conf + "
             f"bench/conf/bench.conf + bench/conf/cluster-namespace.conf): {cl.get('gateways')} gateways on one "
             f"port (SO_REUSEPORT), {cl.get('brokers')} KRaft brokers with the topic on "
             f"{cl.get('replication_factor')} replicas and min.insync.replicas={cl.get('min_insync_replicas')}, "
             f"acks=all; {redis}; one MariaDB. Same wrk runs as the single stack's, right after them on "
             f"the same machine. CPU is summed over the processes of a part (both gateways, all brokers), "
             f"per accepted order.\n")
    L.append("| conn | topology | req/s | × single | × baseline | p50 | p99 | gateways µs | Redis µs | "
             "brokers µs | stack µs/order | socket errors |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for conns in (64, 256):
        single = scenario(result, f"contended-{conns}")
        clus = next((s for s in cl["scenarios"] if s["id"] == f"contended-{conns}"), None)
        base = scenario(result, f"baseline-{conns}")
        for name, s in (("single", single), ("cluster", clus)):
            if not s:
                continue
            c = s["cpu_us_per_request"]
            vs_single = f"{s['rps'] / single['rps']:.2f}" if single and name == "cluster" else "–"
            vs_base = f"{s['rps'] / base['rps']:.2f}" if base else "–"
            L.append(f"| {conns} | {name} | {fmt_int(s['rps'])} | {vs_single} | {vs_base} | "
                     f"{s['latency_ms']['p50']:.2f} | {s['latency_ms']['p99']:.2f} | {fmt(c.get('server'), 1)} | "
                     f"{fmt(c.get('redis'), 1)} | {fmt(c.get('kafka'), 1)} | "
                     f"{fmt(s.get('stack_cpu_us_per_accepted_order'), 1)} | {s['socket_errors']} |")
        if single and clus and single.get("accepted") and clus.get("accepted"):
            extra = clus["cpu_us_per_request"].get("kafka", 0) - single["cpu_us_per_request"].get("kafka", 0)
            L.append(f"| {conns} | replication | | | | | | | | **{extra:+.1f}** | | |")
    L.append("")
    L.append("The brokers' row difference is what three replicas cost per order over one broker "
             "(leader append, two follower fetches, the high-watermark wait of acks=all), in CPU of the "
             "brokers alone; the machine has two cores, so the second gateway shares them with the three "
             "JVMs and cannot double the throughput.\n")
    for k in cl["correctness"]:
        L.append(f"Correctness after the cluster's sale (both consumers of the group): {k['rows']:,} rows, "
                 f"sold {k['sold']:,}, live {k['live_reservations']}, verify exit {k['verify_exit']}: "
                 f"{'ok' if k['ok'] else '**FAILED** ' + str([n for n, ok in k['checks'].items() if not ok])}.\n")
    for e in cl.get("errors", []):
        L.append(f"- cluster error: {e}")
    return L


def wait_cost_section(result):
    """redis.wait-replicas 0 against 1 on the cluster, from the same run (bench/cluster.py)."""
    rows = (result.get("cluster") or {}).get("wait_cost")
    if not rows:
        return []
    L = ["## What redis.wait-replicas costs (cluster)\n",
         "The cluster's contended sale again, the gateways restarted with `redis.wait-replicas` = 0 and "
         "then 1 (a `WAIT 1 <timeout>` behind every coalesced execute call and every queued-mark call). CPU "
         "summed over both gateways and all the Redis nodes, per accepted order.\n",
         "| conn | wait-replicas | req/s | p50 ms | p99 ms | gateways µs/order | Redis µs/order | WAIT short |",
         "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r["cpu_us_per_accepted_order"]
        L.append(f"| {r['connections']} | {r['wait_replicas']} | {fmt_int(r['rps'])} | {r['p50_ms']:.2f} | "
                 f"{r['p99_ms']:.2f} | {fmt(c.get('server'), 1)} | {fmt(c.get('redis'), 1)} | {r['wait_short']} |")
    L.append("")
    return L


def big_sale_section(result):
    """The contended sale on an activity of millions of orders, gauges as shipped and off (bigsale.py)."""
    rows = [s for s in result["scenarios"] if s.get("kind") in ("bigsale", "bigsale-gauges-off")]
    if not rows:
        return []
    L = [f"## A big sale ({fmt_int(rows[0].get('big_orders'))} orders in Redis)\n",
         "The contended sale on an activity already holding that many SUCCESS orders, the gateway with the "
         "per-sale gauges as shipped (`seckill.sale-stats-interval-ms` = 5000) and then off; Redis's SLOWLOG "
         "(over 10 ms) read across each run. × contended: req/s over `contended-N` of this run; "
         "× gauges on: the gauges-off run over the shipped one."
         + (f" The earlier steps' sales, checked, were removed from Redis first ({result['redis_before_big_sale']} "
            "used after that), so that Redis holds the big sale as a shop's would once its ended sales are "
            "archived." if result.get("redis_before_big_sale") else "") + "\n",
         "| scenario | req/s | × contended | × gauges on | p50 | p99 | max | non-2xx | SLOWLOG > 10 ms | worst | "
         "gateway + Redis + Kafka µs per accepted order |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in rows:
        lat = s["latency_ms"]
        c = s["cpu_us_per_request"]
        worst = f"{s.get('slowlog_worst_ms')} ms `{s.get('slowlog_worst_command')}`" if s.get("slowlog_over_10ms") else "—"
        L.append(f"| {s['id']} | {fmt_int(s['rps'])} | {fmt(s.get('ratio_to_contended'))} | "
                 f"{fmt(s.get('ratio_to_bigsale')) if s['kind'] != 'bigsale' else ''} | {fmt(lat['p50'])} | "
                 f"{fmt(lat['p99'])} | {fmt(lat['max'], 1)} | {fmt_int(s['served'] - s['outcomes'].get('OK 200', 0))} | "
                 f"{s.get('slowlog_over_10ms')} | {worst} | {fmt(s.get('stack_cpu_us_per_accepted_order'), 1)} "
                 f"({fmt(c.get('server'), 1)} + {fmt(c.get('redis'), 1)} + {fmt(c.get('kafka'), 1)}) |")
    L.append("")
    return L


def hot_buckets_section(result):
    """One hot activity in 1 bucket against 3 (bench/cluster.py, BENCH_HOT_BUCKETS)."""
    runs = (result.get("cluster") or {}).get("hot_buckets")
    if not runs:
        return []
    L = ["## One hot activity across Redis masters (--buckets)\n",
         "The same contended sale on the cluster, one activity created with `--buckets 1` and then "
         "`--buckets 3` (docs/protocol.md, \"Buckets and rebalance\"). CPU per accepted order.\n",
         "| buckets | req/s | p50 ms | p99 ms | gateways µs/order | Redis masters µs/order |",
         "|---|---|---|---|---|---|"]
    for r in runs:
        masters = ", ".join(f"{p}: {v['cpu_us_per_order']}" for p, v in sorted(r["redis_nodes"].items())
                            if v["role"] == "master")
        L.append(f"| {r['buckets']} | {fmt_int(r['rps'])} | {fmt(r['latency_ms']['p50'])} | "
                 f"{fmt(r['latency_ms']['p99'])} | {fmt(r['gateways_cpu_us_per_order'], 0)} | {masters} |")
    L.append("")
    return L


def spike_value(sp, name):
    if "accepted" in name:
        return f"{sp['accepted']:,}"
    if "rows" in name:
        return f"{sp['rows']:,}"
    if "answered" in name:
        return f"{sp['sent']:,} sent, {sp['answered']:,} answered, {sp['unanswered']:,} unanswered"
    if "socket" in name:
        return fmt(sp["socket_errors"])
    return f"{sp['unexpected']:,} other"


def outcome_text(outcomes):
    return ", ".join(f"{k} {v:,}" for k, v in outcomes.items()) or "–"


def warmup_text(w):
    """The contended sale's warm-up, which lasts until the broker's JIT compiler is quiet."""
    if not w:
        return " and the contended sale"
    how = ("its JIT compiler threads took "
           f"{w['compiler_share_last'] * 100:.1f} % of its CPU in the last one"
           + ("" if w["warm"] else ", still compiling when the warm-up's limit came"))
    return (f"; before the contended sale, {w['rounds']} such rounds ({w['seconds']:g} s) until the "
            f"broker was warm ({how})")


def markdown(result, evaluation, stamp, command, png_name):
    env_m = result.get("machine", {})
    v = result.get("versions", {})
    cfg = result.get("config", {})
    st = result.get("settings", {})
    met = sum(1 for e in evaluation if e["met"])
    L = []
    L.append(f"# Seckill benchmark {stamp}\n")
    L.append(f"`{command}` — started {result.get('started_at')}, {result.get('duration_s')} s of scenarios. "
             f"Machine: {env_m.get('nproc')} CPUs ({env_m.get('cpu_model')}), {env_m.get('mem_gib')} GiB RAM, "
             f"{env_m.get('os')}, kernel {env_m.get('kernel')}; load average before the run "
             f"{' '.join(env_m.get('loadavg_before', []))}. Load generator (wrk), gateway, Redis, Kafka and "
             f"MariaDB all on this machine.\n")
    if result.get("errors"):
        L.append("**The run had errors:**\n")
        for e in result["errors"]:
            L.append(f"- {e}")
        L.append("")
    L.append(f"## Targets: {met} of {len(evaluation)} met\n")
    L.append("| target | figure | value | |")
    L.append("|---|---|---|---|")
    profiles = result.get("profiles") or {}
    for e in evaluation:
        verdict = "met" if e["met"] else "**missed**"
        if not e["met"] and PROFILE_OF.get(e["figure"]) in profiles:
            verdict += f" ([profile](#{PROFILE_OF[e['figure']]}))"
        L.append(f"| {e['target']} | {e['figure']} | {e['value']} | {verdict} |")
    L.append("")
    L.append(f"![throughput and p99 per scenario]({png_name})\n")

    http = [s for s in result["scenarios"]
            if s.get("kind") in ("baseline", "contended", "soldout", "notstarted", "protection",
                                 "protection-shipped", "steady")]
    L.append("## HTTP scenarios\n")
    L.append(f"wrk {st.get('wrk_threads')} threads, {st.get('wrk_seconds')} s per run, `--latency`, "
             f"bench/wrkexecute.lua (POST /seckill/execute, a new user on every request); a "
             f"{st.get('warmup_seconds')} s unmeasured warm-up before the baseline"
             + warmup_text(result.get("broker_warmup")) + ". Latencies are wrk's (client side, ms).\n")
    L.append("| scenario | conn | req/s | × baseline | p50 | p90 | p99 | max | outcomes (API status, HTTP code) | socket errors | unexpected |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for s in http:
        lat = s["latency_ms"]
        L.append(f"| {s['id']} | {s['connections']} | {fmt_int(s['rps'])} | "
                 f"{fmt(s.get('ratio_to_baseline'))} | {fmt(lat['p50'])} | {fmt(lat['p90'])} | "
                 f"{fmt(lat['p99'])} | {fmt(lat['max'], 1)} | {outcome_text(s['outcomes'])} | "
                 f"{s['socket_errors']} | {s['unexpected']} |")
    L.append("")
    L.append("CPU time per request (utime + stime from /proc, µs) of each process, the server's peak RSS "
             "(VmHWM, reset before each run), and how busy the machine was: *softirq* is kernel time charged "
             "to no process (mostly the loopback network's receive path), *other* is CPU taken by processes "
             "outside the benchmark (noise from other work on the machine).\n")
    L.append("| scenario | server | Redis | Kafka | MariaDB | consumer | wrk | Σ | CPU-bound ceiling | server + Redis + Kafka per accepted order | server peak RSS | answered locally | machine busy | softirq | other |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    nproc = env_m.get("nproc") or 1
    for s in http:
        c = s["cpu_us_per_request"]
        m = s["machine"]
        total = sum(v for v in c.values() if v) + (s.get("wrk_cpu_us_per_request") or 0)
        L.append(f"| {s['id']} | {fmt(c.get('server'), 1)} | {fmt(c.get('redis'), 1)} | {fmt(c.get('kafka'), 1)} | "
                 f"{fmt(c.get('mariadb'), 1)} | {fmt(c.get('consumer'), 1)} | "
                 f"{fmt(s.get('wrk_cpu_us_per_request'), 1)} | {total:.1f} | "
                 f"{fmt_int(nproc * 1e6 / total) if total else '–'} | "
                 f"{fmt(s.get('stack_cpu_us_per_accepted_order'), 1)} | {mb(s['peak_rss_kb'])} | "
                 f"{fmt(s.get('local_answers'))} | {m['machine_busy_share']:.0%} | {m.get('softirq_share', 0):.0%} | "
                 f"{m['other_processes_share']:.0%} |")
    L.append("")
    L.append(f"Σ is the CPU the whole set-up (server, Redis, Kafka, MariaDB and wrk) spends on one request; "
             f"*CPU-bound ceiling* = {nproc} CPUs ÷ Σ, the requests/s this set-up could reach if it had the "
             f"machine to itself and the CPU were the only limit.\n")
    noisy = [s for s in result["scenarios"] if s.get("machine", {}).get("other_processes_share", 0) > 0.10]
    if noisy:
        worst = max(s["machine"]["other_processes_share"] for s in noisy)
        L.append(f"**Noise:** other processes on this machine took more than 10% of its CPU during "
                 f"{len(noisy)} scenario(s) (up to {worst:.0%}): those figures understate what the code can do; "
                 f"compare the CPU per request (which the noise changes little) and re-run on a quiet machine.\n")

    L += sale_sections(result)
    L += big_sale_section(result)

    c = scenario(result, "consumer")
    if c:
        L.append("## Consumer throughput\n")
        L.append(f"{c['orders']:,} order events of the contended sale waited in Kafka (the consumer was stopped "
                 f"during the HTTP scenarios, {c['partitions']} partitions); then `order-consumer` started and "
                 f"the time until the last row was in MariaDB was measured (the consumer's "
                 f"`seckill_consumer_orders_persisted_total` polled every 50 ms, then the sale's rows "
                 f"counted with COUNT(*)).\n")
        L.append("| figure | value |")
        L.append("|---|---|")
        rows = [
            ("orders/s, from the consumer's `ready` line to the last row", fmt_int(c["orders_per_s"])),
            ("orders/s, including process start-up", fmt_int(c["orders_per_s_incl_startup"])),
            ("orders/s, first row to last row (created_at)", fmt_int(c["orders_per_s_first_to_last_row"])),
            ("start-up to `ready` / persisting", f"{c['startup_s']} s / {c['persist_s']} s"),
            ("consumer.batch-size / batch-timeout-ms", f"{c['batch_size_configured']} / {c['batch_timeout_ms']} ms"),
            ("batches, mean orders per batch", f"{fmt(c['batches'])}, {fmt(c['mean_batch'], 1)}"),
            ("CPU µs per order: consumer / MariaDB / Redis / Kafka",
             " / ".join(fmt(c["cpu_us_per_order"].get(k), 1) for k in ("consumer", "mariadb", "redis", "kafka"))),
            ("consumer peak RSS", mb(c["peak_rss_kb"])),
            ("machine busy / other processes", f"{c['machine']['machine_busy_share']:.0%} / "
                                                f"{c['machine']['other_processes_share']:.0%}"),
            ("exit status after SIGTERM", f"{c['exit_status']} ({c['stop_s']} s)"),
        ]
        L += [f"| {a} | {b} |" for a, b in rows]
        L.append("")

    e = scenario(result, "e2e")
    if e:
        L.append("## End to end\n")
        L.append(f"{e['orders']:,} orders at {e['rate_per_s']}/s (4 keep-alive clients, not saturating) on a "
                 f"fresh activity with the consumer running. *accept → insert* is `created_at − accepted_at` of "
                 f"each row (both set on this machine's clock: the gateway's reservation time, and MariaDB's "
                 f"insert time); *reply → row seen* is measured by the client: from the gateway's 200 to the "
                 f"first poll (every {e['client_observed_ms']['poll_interval_ms']} ms) that returns the committed row.\n")
        L.append("| | p50 | p90 | p99 | max |")
        L.append("|---|---|---|---|---|")
        for key, name in (("latency_ms", "accept → insert (ms)"), ("client_observed_ms", "reply → row seen (ms)")):
            x = e[key]
            L.append(f"| {name} | {fmt(x['p50'])} | {fmt(x['p90'])} | {fmt(x['p99'])} | {fmt(x['max'])} |")
        L.append(f"\nAccepted {e['accepted']:,}, rows {e['rows']:,}, failed requests {e['failures']}.\n")

    i = scenario(result, "idle-connections")
    if i:
        L.append("## Idle keep-alive connections\n")
        L.append(f"A fresh gateway; {i['connections']:,} connections opened in {i['open_s']} s, each sent one "
                 f"request (a not-started execute, answered locally) and then stayed idle.\n")
        L.append("| figure | value |")
        L.append("|---|---|")
        for a, b in (("connections held (client side) / gateway's open-connections gauge",
                      f"{i['held']:,} / {i['gateway_open_connections_gauge']:,}"),
                     ("gateway RSS before → holding them", f"{mb(i['rss_before_kb'])} → {mb(i['rss_kb'])}"),
                     ("gateway peak RSS", mb(i["peak_rss_kb"])),
                     ("RSS per connection", f"{i['rss_per_connection_bytes']:,} bytes"),
                     ("outcomes", outcome_text(i["outcomes"])),
                     ("socket errors / unexpected answers", f"{i['socket_errors']} / {i['unexpected']}")):
            L.append(f"| {a} | {b} |")
        L.append("")

    if result["correctness"]:
        L.append("## Correctness\n")
        L.append("After the consumer caught up, for each sale: rows in MariaDB against the stock sold in Redis "
                 "(initial − left), duplicates, live reservations, and `seckillctl verify` (I1–I5).\n")
        L.append("| sale | activity | initial stock | sold (Redis) | rows | accepted (200) | distinct order_no / users | live reservations | verify | |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        for k in result["correctness"]:
            L.append(f"| {k['activity']} | {k['activity_id']} | {k['initial_stock']:,} | {k['sold']:,} | {k['rows']:,} | "
                     f"{fmt(k['accepted_http_200'])} | {k['distinct_order_no']:,} / {k['distinct_users']:,} | "
                     f"{k['live_reservations']} | exit {k['verify_exit']} | {'ok' if k['ok'] else '**FAILED**'} |")
        failed = [(k, name) for k in result["correctness"] for name, ok in k["checks"].items() if not ok]
        for k, name in failed:
            L.append(f"\n- {k['activity']}: failed check: {name}")
            if name.startswith("seckillctl verify"):
                L.append(f"  (`seckillctl verify {k['activity_id']}` said: "
                         f"`{k['verify_output'].strip().splitlines()[-1] if k['verify_output'].strip() else ''}`)")
        L.append("")

    L += cluster_section(result)
    L += wait_cost_section(result)
    L += hot_buckets_section(result)
    L += forks_section(result)
    L += profile_section(result)

    stops = result.get("stops", {})
    if stops:
        L.append("Shutdown: " + "; ".join(
            f"{n} exit {s['exit_status']} after SIGTERM in {s['stop_s']} s (lifetime peak RSS {mb(s['lifetime_peak_rss_kb'])})"
            for n, s in stops.items()) + ".\n")

    L.append("## Set-up\n")
    L.append("Versions: " + ", ".join(f"{k} {val}" for k, val in v.items() if val) + ".\n")
    L.append("Configuration (conf/seckill.conf + bench/conf/bench.conf + the run's topic and group): "
             + ", ".join(f"`{k}={val}`" for k, val in cfg.items()) + ".\n")
    return "\n".join(L) + "\n"


def sale_sections(result):
    """Protection on, the steady state, open loop and the 20:00 spike (issue 10)."""
    L = []
    prot = [s for s in result["scenarios"] if s.get("kind") in ("protection", "protection-shipped")]
    if prot:
        settings = prot[0].get("protection_settings", {})
        sh = next((s for s in prot if s["kind"] == "protection-shipped"), None)
        shs = sh.get("protection_settings", {}) if sh else {}
        bucket = (f"`seckill.rate-limit.permits-per-second={shs.get('seckill.rate-limit.permits-per-second')}`, "
                  f"`burst-capacity={shs.get('seckill.rate-limit.burst-capacity')}`") if shs else "–"
        L.append("## Protection on\n")
        L.append("The contended sale with the shipped limits and anti-brush (conf/seckill.conf: "
                 + ", ".join(f"`{k}={v}`" for k, v in settings.items()
                             if "rate-limit." not in k) +
                 "), clients spread over many IPs: bench/wrkexecute.lua sends `X-Forwarded-For: 10.a.b.c`, one "
                 "address per 64 users, each user one request (under the per-user, per-IP and anti-brush "
                 "limits). **bucket raised**: the global token bucket "
                 "(`seckill.rate-limit.permits-per-second`) set to 10⁸ so that every request does the "
                 "per-user, per-IP and anti-brush work and is accepted; **as shipped**: the bucket at its "
                 f"shipped rate ({bucket}), so nearly everything is refused with 429 by the gateway itself. "
                 "*× limits off* "
                 "compares with the contended sale of the same run (limits off); the consumer is stopped during "
                 "both.\n")
        L.append("| scenario | protection | conn | req/s | × limits off | × baseline | p50 | p99 | accepted/s | outcomes | gateway + Redis + Kafka µs per request | per accepted order |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for s in prot:
            c = s["cpu_us_per_request"]
            stack = sum(c.get(k) or 0 for k in ("server", "redis", "kafka"))
            ok = s["outcomes"].get("OK 200", 0)
            L.append(f"| {s['id']} | {s.get('protection', '')} | {s['connections']} | {fmt_int(s['rps'])} | "
                     f"{fmt(s.get('ratio_to_limits_off'))} | {fmt(s.get('ratio_to_baseline'))} | "
                     f"{fmt(s['latency_ms']['p50'])} | {fmt(s['latency_ms']['p99'])} | "
                     f"{fmt_int(ok / s['seconds']) if s['seconds'] else '–'} | {outcome_text(s['outcomes'])} | "
                     f"{stack:.1f} | {fmt(s.get('stack_cpu_us_per_accepted_order'), 1)} |")
        L.append("")

    st = scenario(result, "steady-256")
    if st:
        L.append("## Steady state, consumer running\n")
        L.append(f"{st['seconds']:.0f} s of the contended sale at 256 connections on a fresh activity with "
                 f"`order-consumer` running. *persisted/s* is the rows in MariaDB when wrk stopped (counted "
                 f"{st['rows_at_end_after_s']} s after it started) over that time; *behind at the end* is "
                 f"accepted − rows then; the lag gauge is the consumer's `seckill_consumer_lag` (messages "
                 f"behind the high watermark) at the same moment.\n")
        L.append("| figure | value |")
        L.append("|---|---|")
        c = st["cpu_us_per_request"]
        for a, b in (("orders accepted / s (HTTP 200)", fmt_int(st["accepted_per_s"])),
                     ("orders persisted / s (rows in MariaDB)", fmt_int(st["persisted_per_s"])),
                     ("accepted, rows at the end of the run", f"{st['accepted']:,}, {st['rows_at_end']:,}"),
                     ("behind at the end (accepted − rows) / consumer lag gauge",
                      f"{st['behind_at_end']:,} / {fmt(st.get('consumer_lag_gauge_at_end'))}"),
                     ("then until every accepted order was in MariaDB", f"{st['drain_s']} s"),
                     ("p50 / p99 / max (ms, wrk)", f"{fmt(st['latency_ms']['p50'])} / {fmt(st['latency_ms']['p99'])} / "
                                                    f"{fmt(st['latency_ms']['max'], 1)}"),
                     ("CPU µs per order: gateway / Redis / Kafka / MariaDB / consumer",
                      " / ".join(fmt(c.get(k), 1) for k in ("server", "redis", "kafka", "mariadb", "consumer"))),
                     ("outcomes", outcome_text(st["outcomes"])),
                     ("socket errors / unexpected", f"{st['socket_errors']} / {st['unexpected']}")):
            L.append(f"| {a} | {b} |")
        L.append("\nThe correctness check of this sale (rows = accepted, no duplicates, verify) is in *Correctness*.\n")

    ol = [s for s in result["scenarios"] if s.get("kind") == "openloop"]
    if ol:
        L.append("## Open-loop latency\n")
        L.append(f"build/bench/openloop (bench/openloop.c): requests sent on a fixed schedule whatever the "
                 f"answers do, latency counted from when each was due (no coordinated omission), at "
                 f"{' and '.join(str(s['share_of_closed_loop_max_pct']) + ' %' for s in ol)} of this run's "
                 f"closed-loop maximum (contended-256, {fmt_int(ol[0]['closed_loop_max_rps'])} req/s); "
                 f"every request a new user, up to {ol[0]['connections']} keep-alive connections; the consumer "
                 f"stopped, as during the closed-loop run.\n")
        L.append("*sent at* is the requests over the time until the last one was written (below the target "
                 "rate when the generator fell behind its schedule); *longest send wait* is the longest a due "
                 "request waited for a free connection (part of its latency).\n")
        L.append("| scenario | target rate | sent at | sent | answered | unanswered | socket errors | longest send wait | p50 | p90 | p99 | p99.9 | max | statuses | gateway + Redis + Kafka per accepted order |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for s in ol:
            lat = s["latency_ms"]
            L.append(f"| {s['id']} | {fmt_int(s['target_rate'])}/s | {fmt_int(s['achieved_rate'])}/s | {s['sent']:,} | "
                     f"{s['answered']:,} | {s['unanswered']:,} | {s['socket_errors']} | "
                     f"{fmt(s.get('max_send_wait_ms'), 1)} ms | {fmt(lat['p50'])} | "
                     f"{fmt(lat['p90'])} | {fmt(lat['p99'])} | {fmt(lat['p999'])} | {fmt(lat['max'], 1)} | "
                     f"{outcome_text(s['outcomes'])} | {fmt(s.get('stack_cpu_us_per_accepted_order'), 1)} µs |")
        L.append("")

    sp = scenario(result, "spike")
    if sp:
        lat = sp["latency_ms"]
        L.append("## The 20:00 spike\n")
        L.append(f"A fresh sale with stock {sp['stock']:,}; {sp['users']:,} distinct users arriving at "
                 f"{fmt_int(sp['target_rate'])}/s (build/bench/openloop -n {sp['users']} -r {sp['target_rate']} "
                 f"-c {sp['connections']}), consumer running. *last row* is when a 20 ms poll of MariaDB first "
                 f"counted {sp['stock']:,} rows, from the moment the first request was due.\n")
        L.append("| figure | value |")
        L.append("|---|---|")
        for a, b in (("scheduled over / last request written at (rate sent at)",
                      f"{sp['send_seconds']} s / {fmt(sp.get('last_sent_s'), 3)} s ({fmt_int(sp['achieved_rate'])}/s)"),
                     ("longest a due request waited for a free connection", f"{fmt(sp.get('max_send_wait_ms'), 1)} ms"),
                     ("answered / unanswered / socket errors",
                      f"{sp['answered']:,} / {sp['unanswered']:,} / {sp['socket_errors']}"),
                     ("HTTP statuses", ", ".join(f"{k}: {v:,}" for k, v in sp["http_status"].items())),
                     ("outcomes (gateway)", outcome_text(sp["outcomes"])),
                     ("orders accepted (200) / rows in MariaDB", f"{sp['accepted']:,} / {sp['rows']:,}"),
                     ("latency p50 / p90 / p99 / p99.9 / max (ms)",
                      " / ".join(fmt(lat[k]) for k in ("p50", "p90", "p99", "p999", "max"))),
                     ("first request due → last answer", f"{sp['first_due_to_last_answer_s']} s"),
                     ("first request due → last row in MariaDB", f"{fmt(sp['first_request_to_last_row_s'], 3)} s"),
                     ("first accepted_at → last created_at (MariaDB's own clock)",
                      f"{fmt(sp['first_accept_to_last_row_s_mariadb'], 3)} s")):
            L.append(f"| {a} | {b} |")
        L.append("")
        L.append("| check | |")
        L.append("|---|---|")
        for name, ok in sp["checks"].items():
            L.append(f"| {name} | {'ok' if ok else '**FAILED**'} |")
        L.append("")
    return L


PROCESS_NAMES = {"server": "gateway", "redis": "Redis", "kafka": "broker", "mariadb": "MariaDB",
                 "consumer": "order-consumer"}
# Which profile explains a missed target, by the target's figure.
PROFILE_OF = {"contended-256": "contended-256", "contended-64": "contended-256", "consumer": "consumer"}
# The profiles, in the order they are shown: the floor first, then what stands on it.
PROFILE_ORDER = ("baseline-256", "contended-256", "consumer")


def profile_section(result):
    """Where the CPU went in the profiled runs: the explanation behind a missed CPU target."""
    profiles = result.get("profiles") or {}
    if not profiles:
        return []
    L = ["## Where the CPU goes\n",
         "The profiles behind the CPU and throughput targets (bench/cpuprofile.py). **baseline-256**: "
         "the bare evhttp server (bench/baseline.c) in a twin of baseline-256, what answering a request "
         "costs before any work is done. "
         "**contended-256**: a twin of that run right after it (same sale, same load, not counted), "
         f"with `perf record -a --call-graph dwarf` at 499 Hz (the gateway, Redis and the broker) for "
         f"{profiles.get('contended-256', {}).get('seconds', '?')} s. **consumer**: perf at 99 Hz (the "
         "consumer, MariaDB, Redis and the broker) for the first seconds of the consumer throughput run. A sample "
         "counts where the CPU was: in a system call (named by its libc wrapper; a socket write "
         "includes the loopback delivery to the reader), in other kernel work, or in a library or "
         "the process's own code. *µs per order* is the share times the process's CPU per order "
         "in that run. *inside* names the functions the most samples were within (a sample counts "
         "for every function on its stack). Thread shares come from /proc over the whole run.\n"]
    for name in sorted(profiles, key=lambda n: PROFILE_ORDER.index(n) if n in PROFILE_ORDER else 99):
        pr = profiles[name]
        per_order = pr.get("cpu_us_per_order", {})
        bare = name.startswith("baseline")
        unit = "request" if bare else "order"
        L.append(f"### {name}\n")
        for proc, b in pr.get("perf", {}).items():
            label = "the bare evhttp server" if bare else PROCESS_NAMES.get(proc, proc)
            if "error" in b:
                L.append(f"{label}: no profile ({b['error']}).\n")
                continue
            us = per_order.get(proc)
            L.append(f"**{label}** ({b['samples']:,} samples, {fmt(us, 1)} µs per {unit})\n")
            L.append(f"| where | share | µs per {unit} |")
            L.append("|---|---:|---:|")
            shown = [(c, v) for c, v in b["categories"] if v >= 0.01]
            for c, v in shown:
                L.append(f"| {c} | {v * 100:.1f} % | {fmt(us * v if us is not None else None, 1)} |")
            rest = 1 - sum(v for _, v in shown)
            if rest > 0.0005:
                L.append(f"| the rest, under 1 % each | {rest * 100:.1f} % | "
                         f"{fmt(us * rest if us is not None else None, 1)} |")
            L.append("")
            if b.get("within"):
                L.append("inside: " + ", ".join(f"`{f}` {v * 100:.0f} %" for f, v in b["within"]) + "\n")
        for proc, shares in pr.get("threads", {}).items():
            if shares:
                L.append(f"{PROCESS_NAMES.get(proc, proc)} threads: "
                         + ", ".join(f"{t} {v * 100:.0f} %" for t, v in shares[:8] if v >= 0.01) + "\n")
    return L


def forks_section(result):
    aof = result.get("redis_auto_aof_rewrite")
    forked = [s for s in result["scenarios"]
              if s.get("redis_forks") and (s["redis_forks"]["aof_rewrites"] or s["redis_forks"]["rdb_saves"]
                                           or s["redis_forks"]["in_progress"])]
    L = ["## Redis background rewrites\n"]
    text = ""
    if aof:
        text = (f"Automatic AOF rewrites were off during the run (`auto-aof-rewrite-percentage` "
                 f"{aof['shipped_percentage']} → 0, restored at the end); each scenario also compares "
                f"`aof_rewrites` and `rdb_saves` of INFO persistence before and after.")
    if forked:
        L.append(text + " Scenarios during which Redis forked (their figures include a rewrite): "
                 + ", ".join(f"{s['id']} ({s['redis_forks']['aof_rewrites']} AOF rewrites, "
                             f"{s['redis_forks']['rdb_saves']} RDB saves"
                             f"{', one running at the end' if s['redis_forks']['in_progress'] else ''})"
                             for s in forked) + ".\n")
    else:
        L.append(text + " No AOF rewrite or RDB save happened during any scenario.\n")
    return L


def plot(result, png):
    """Throughput and p99 per scenario, consumer orders/s against its target."""
    kinds = [("baseline", "baseline"), ("contended", "contended"), ("protection", "protection on"),
             ("soldout", "sold-out"), ("notstarted", "not-started")]
    tmp = Path(tempfile.mkdtemp(prefix="bench-plot."))
    try:
        with open(tmp / "http.dat", "w") as f:
            for kind, label in kinds:
                vals = []
                for key in ("rps", "p99"):
                    for conns in (64, 256):
                        s = scenario(result, f"{kind}-{conns}")
                        if s is None:
                            vals.append("NaN")
                        elif key == "rps":
                            vals.append(f"{s['rps']:.0f}")
                        else:
                            vals.append(f"{s['latency_ms']['p99']:.3f}")
                f.write(f'"{label}" {" ".join(vals)}\n')
        c = scenario(result, "consumer")
        e = scenario(result, "e2e")
        with open(tmp / "other.dat", "w") as f:
            f.write(f'"consumer orders/s" {c["orders_per_s"] if c else "NaN"}\n')
        target = result["targets"]["consumer_orders_per_s"]
        consumer_top = max(target, c["orders_per_s"] if c else 0) * 1.25
        p99_target = result["targets"]["contended_p99_ms_64"]
        e2e = (f"end to end p50 {e['latency_ms']['p50']:.0f} ms, p99 {e['latency_ms']['p99']:.0f} ms"
               if e and e["latency_ms"]["p99"] is not None else "end to end: –")
        script = f"""
set terminal pngcairo size 1500,520 font "sans,10"
set output "{png}"
set datafile missing "NaN"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top right
set xtics nomirror
set multiplot layout 1,3 title "Seckill make bench {result.get('started_at', '')}  ({result.get('machine', {}).get('nproc', '?')} CPUs, load generator on the same machine)"
set title "HTTP throughput (requests/s)"
set yrange [0:*]
plot "{tmp}/http.dat" using 2:xtic(1) title "64 connections" lc rgb "#4477aa", \\
     "" using 3 title "256 connections" lc rgb "#ee6677"
set title "p99 latency (ms, wrk)"
set logscale y
set yrange [0.1:*]
plot "{tmp}/http.dat" using 4:xtic(1) title "64 connections" lc rgb "#4477aa", \\
     "" using 5 title "256 connections" lc rgb "#ee6677", \\
     {p99_target} with lines dt 2 lc rgb "black" title "target p99 at 64 conn"
unset logscale y
set title "order-consumer into MariaDB (orders/s)\\n{e2e}"
set yrange [0:{consumer_top:.0f}]
set style histogram clustered gap 3
plot "{tmp}/other.dat" using 2:xtic(1) title "measured" lc rgb "#228833", \\
     {target} with lines dt 2 lc rgb "black" title "target"
unset multiplot
"""
        (tmp / "plot.gp").write_text(script)
        p = subprocess.run(["gnuplot", str(tmp / "plot.gp")], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"gnuplot failed: {p.stderr.strip()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result")
    ap.add_argument("--stamp", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--command", default="make bench")
    ap.add_argument("--cluster", help="bench/cluster.py's result, for the TOPOLOGY=cluster section")
    args = ap.parse_args()
    result = json.loads(Path(args.result).read_text())
    if args.cluster:
        result["cluster"] = json.loads(Path(args.cluster).read_text())
    result["command"] = args.command
    result["stamp"] = args.stamp
    evaluation = evaluate(result)
    result["evaluation"] = evaluation
    out = Path(args.results)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.stamp}.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(result, out / f"{args.stamp}.png")
    (out / f"{args.stamp}.md").write_text(markdown(result, evaluation, args.stamp, args.command,
                                                   f"{args.stamp}.png"))
    shutil.copyfile(out / f"{args.stamp}.json", out / "latest.json")
    shutil.copyfile(out / f"{args.stamp}.png", out / "latest.png")
    (out / "latest.md").write_text(markdown(result, evaluation, args.stamp, args.command, "latest.png"))
    met = sum(1 for e in evaluation if e["met"])
    print(f"report: {met} of {len(evaluation)} targets met; {out}/{args.stamp}.md")
    for e in evaluation:
        if not e["met"]:
            print(f"report: missed: {e['target']}: {e['value']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
