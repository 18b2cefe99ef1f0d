"""The operators' files are checked by their own tools and against the binaries:
deploy/prometheus passes `promtool check rules`, `promtool check config` and its unit
tests (`promtool test rules`: every alert has a case where it fires and one where it
stays silent, and a runbook); both live /metrics pages (gateway and consumer, during a
sale) pass `promtool check metrics`; and every PromQL expression of the rules and of the
Grafana dashboard names only metrics that those live pages export (or recording rules
the rules define), so a renamed metric cannot leave an alert or a panel silently empty."""

import json
import re
import subprocess
from pathlib import Path

import pytest
import requests
import yaml

from stack import ROOT, poll_until

PROM = Path(ROOT, "deploy/prometheus")
RULES = PROM / "seckill-rules.yml"
RULE_TESTS = PROM / "seckill-rules.test.yml"
DASHBOARD = Path(ROOT, "deploy/grafana/seckill.json")

CONF_OVERRIDES = {"seckill.sale-stats-interval-ms": "100"}

# PromQL words that are not metric names: keywords, and the aggregations, which may stand
# before their `by (...)` rather than before their parenthesis.
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset", "inf", "nan", "sum", "min", "max", "avg", "count", "group", "stddev",
            "stdvar", "topk", "bottomk", "quantile", "count_values"}


def promtool(*args, stdin=None):
    return subprocess.run(["promtool", *args], input=stdin, capture_output=True, text=True, timeout=120)


def rules():
    return [r for g in yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"] for r in g["rules"]]


def metric_names(expr):
    """The metric (and recording rule) names an expression selects."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)            # strings (label values, regexes)
    e = re.sub(r"\{[^}]*\}", "", e)                          # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                         # ranges and subqueries
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", e)
    e = re.sub(r"\$\w+", "", e)                              # Grafana variables
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word = m.group(0)
        if e[m.end():].lstrip().startswith("("):            # a function
            continue
        if word.lower() in KEYWORDS or re.fullmatch(r"\d.*", word):
            continue
        names.add(word)
    return names


def dashboard_exprs():
    d = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exprs = [(p["title"], t["expr"]) for p in d["panels"] for t in p["targets"]]
    for v in d["templating"]["list"]:
        if v["type"] == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            m = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", q)
            assert m, f"variable {v['name']}: {q!r} is not label_values(metric, label)"
            exprs.append((f"variable {v['name']}", m.group(1)))
    return d, exprs


def exported(text):
    """Every sample name a Prometheus text page can carry, from its TYPE lines."""
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            names.add(name)
            if kind in ("histogram", "summary"):
                names.update({name + "_bucket", name + "_sum", name + "_count"})
    return names


@pytest.fixture(scope="module")
def pages(ctl, gateway, consumer, api, ids):
    """Both live /metrics pages during a sale with one accepted order, once the gateway
    shows the sale's gauges."""
    sale = ctl.create_sale(5)
    assert api.execute(ids(), sale.activity_id).code == 200
    gw_url = f"{gateway.base_url}/metrics"
    poll_until(lambda: f'seckill_sale_stock{{activity="{sale.activity_id}"}}' in requests.get(gw_url, timeout=10).text,
               20, "the sale's gauges on the gateway's /metrics")
    cons_url = f"http://127.0.0.1:{consumer.conf.get('consumer.metrics-port')}/metrics"
    return {"gateway": requests.get(gw_url, timeout=10).text, "consumer": requests.get(cons_url, timeout=10).text}


def test_promtool_checks_the_rules_and_the_scrape_config():
    r = promtool("check", "rules", str(RULES))
    assert r.returncode == 0, r.stdout + r.stderr
    r = promtool("check", "config", str(PROM / "prometheus.yml"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_promtool_unit_tests_of_the_rules_pass():
    r = promtool("test", "rules", str(RULE_TESTS))
    assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout + r.stderr


def test_every_alert_has_a_runbook_and_cases_that_fire_and_stay_silent():
    alerts = {r["alert"]: r for r in rules() if "alert" in r}
    assert len(alerts) >= 10, sorted(alerts)
    for name, rule in alerts.items():
        runbook = rule.get("annotations", {}).get("runbook", "")
        assert len(runbook.split()) >= 15, f"{name}: runbook too short to say what it means and what to do"
        assert rule["labels"]["severity"] in ("critical", "warning"), name
    fired, silent = set(), set()
    for case in yaml.safe_load(RULE_TESTS.read_text(encoding="utf-8"))["tests"]:
        for t in case.get("alert_rule_test", []):
            (fired if t.get("exp_alerts") else silent).add(t["alertname"])
    assert fired == set(alerts), f"alerts without a firing case: {set(alerts) - fired}"
    assert silent == set(alerts), f"alerts without a silent case: {set(alerts) - silent}"


@pytest.mark.parametrize("page", ["gateway", "consumer"])
def test_promtool_check_metrics_passes_on_the_live_page(pages, page):
    r = promtool("check", "metrics", stdin=pages[page])
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), f"{page}: {r.stdout}{r.stderr}"


def test_every_expression_names_only_exported_metrics(pages):
    names = exported(pages["gateway"]) | exported(pages["consumer"])
    for must in ("seckill_sale_imbalance", "seckill_sale_oldest_reservation_seconds", "seckill_consumer_lag",
                 "seckill_execute_duration_seconds_bucket"):
        assert must in names, f"{must} not on the live pages"
    recorded = {r["record"] for r in rules() if "record" in r}
    _, panels = dashboard_exprs()
    exprs = [(r.get("alert") or r["record"], r["expr"]) for r in rules()] + panels
    for where, expr in exprs:
        used = metric_names(expr)
        assert used, f"{where}: {expr!r} selects no metric"
        unknown = used - names - recorded
        assert not unknown, f"{where}: {expr!r} names {sorted(unknown)}, which no binary exports"


def test_the_expression_reader_sees_every_name():
    """The check above is only as good as metric_names: it must find names inside
    aggregations, binary operations and ranges, and skip labels, functions and keywords."""
    assert metric_names('sum by (le) (rate(a_bucket{x="y",z=~"$v"}[5m])) > on () group_left b + 1') == {"a_bucket", "b"}
    assert metric_names("histogram_quantile(0.99, sum by (le) (rate(c[$__rate_interval])))") == {"c"}
    assert metric_names("x > ignoring (activity) group_left y and deriv(rec:z:sum[5m]) > 0") == {"x", "y", "rec:z:sum"}


def test_the_dashboard_shows_one_sale_at_a_glance():
    d, _ = dashboard_exprs()
    variables = {v["name"]: v for v in d["templating"]["list"]}
    assert "activity" in variables, "no activity template variable"
    per_sale = [t["expr"] for p in d["panels"] for t in p["targets"] if "$activity" in t["expr"]]
    assert per_sale, "no panel follows the activity variable"
    for expr in per_sale:
        assert re.search(r'activity=~"\$activity"', expr), expr
    titles = " | ".join(p["title"] for p in d["panels"]).lower()
    for topic in ("status", "stock", "p99", "kafka", "lag", "rows/s", "reservation", "rollback"):
        assert topic in titles, f"no panel about {topic}: {titles}"
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids)), "panel ids repeat"
