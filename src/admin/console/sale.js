"use strict";
// One sale: its figures every second from GET /admin/activities/{id} (activity show, whose
// numbers are counters Redis keeps: O(1) however many orders the sale has), the rates from
// the difference between two polls, the last minute on a chart, its actions and winners.
var SK = window.SK || (window.SK = {});

SK.sale = (function () {
  var v = SK.view;
  var POLL_MS = 1000, WINNERS_PAGE = 20;
  var current = null, show = null, timer = null, samples = [], polling = false;
  var couponStatus = null;  // its coupon's (INACTIVE: the sale is paused), asked after each action
  var winnersAfter = null;

  function id() { return current; }

  function stop() {
    if (timer) clearInterval(timer);
    timer = null;
    current = null;
  }

  function text(elId, value) { v.$(elId).textContent = value === null || value === undefined ? "?" : value; }

  // Orders the sale took so far: the ones still in flight, sold, and failed after acceptance.
  function taken(o) { return (o.PROCESSING || 0) + (o.SUCCESS || 0) + (o.FAILED || 0); }

  function render(a) {
    var paused = couponStatus === "INACTIVE";
    var status = paused && (a.status === "ACTIVE" || a.status === "PENDING") ? "PAUSED" : a.status;
    text("sale-title", "Sale " + a.id + (a.name ? ": " + a.name : ""));
    text("sale-meta", "coupon " + a.couponId + " (" + a.couponName + ", " + a.couponType + "), " +
         a.start + " to " + a.end + ", stock " + a.stock + ", per user " + a.perUser);
    text("fig-status", status);
    v.$("fig-status").className = "figure status-" + status;
    var r = a.redis || {}, o = r.orders || a.orders || {};
    text("fig-left", r.stockLeft);
    text("fig-processing", o.PROCESSING);
    text("fig-success", o.SUCCESS);
    text("fig-failed", o.FAILED);
    var now = Date.now(), prev = samples[samples.length - 1];
    var s = { t: now, left: r.stockLeft, taken: taken(o), failed: o.FAILED || 0, accepted: 0, failedRate: 0,
              refused: a.refused || {} };
    if (prev) {
      var dt = Math.max(0.001, (now - prev.t) / 1000);
      s.accepted = Math.max(0, Math.round((s.taken - prev.taken) / dt));
      s.failedRate = Math.max(0, Math.round((s.failed - prev.failed) / dt));
    }
    samples.push(s);
    while (samples.length && samples[0].t < now - SK.chart.WINDOW_MS) samples.shift();
    refusals(s, prev);
    text("fig-accepted", prev ? s.accepted : "…");
    text("fig-failed-rate", prev ? s.failedRate : "…");
    SK.chart.draw(v.$("chart"), samples, a.stock);
    // A sale that is over takes no pause and no cancel (the API would refuse them anyway).
    var over = a.status === "CANCELLED" || a.status === "ENDED" || a.archived;
    v.$("act-pause").disabled = paused || over;
    v.$("act-resume").disabled = !paused || over;
    v.$("act-cancel").disabled = over;
  }

  // Each reason the gateways refused buyers for (activity show's "refused", most first),
  // its total and its rate since the last poll.
  function refusals(s, prev) {
    var body = v.$("refusals").tBodies[0];
    v.clear(body);
    var reasons = Object.keys(s.refused);
    v.$("refusals-none").hidden = reasons.length > 0;
    reasons.forEach(function (reason) {
      var tr = document.createElement("tr");
      tr.dataset.reason = reason;
      v.cell(tr, reason);
      v.cell(tr, s.refused[reason], "num");
      var rate = "…";
      if (prev) {
        var dt = Math.max(0.001, (s.t - prev.t) / 1000);
        rate = Math.max(0, Math.round((s.refused[reason] - (prev.refused[reason] || 0)) / dt));
      }
      v.cell(tr, rate, "num");
      body.appendChild(tr);
    });
  }

  // One poll at a time: a slow answer is not overtaken by the next.
  async function poll() {
    if (polling || current === null) return;
    polling = true;
    var asked = current;
    try {
      var a = await SK.api.get("/admin/activities/" + asked);
      if (asked !== current) return;
      if (!a.success) { text("act-result", a.message); return; }
      show = a;
      render(a);
    } catch (e) {
      if (!(e instanceof SK.api.Unauthorized)) text("act-result", "poll failed: " + e.message);
    } finally {
      polling = false;
    }
  }

  // One coupon's status, not the whole list: the sale page must stay cheap to keep open.
  async function readCoupon() {
    if (!show) return;
    var c = await SK.api.get("/admin/coupons/" + show.couponId);
    couponStatus = c.success ? c.status : null;
  }

  function outcome(label, r) {
    text("act-result", label + ": " + (r.success ? "done" : (r.status || "") + " " + (r.message || "")));
  }

  async function act(label, path) {
    text("act-result", label + "…");
    var r = await SK.api.post(path);
    outcome(label, r);
    await readCoupon();
    await poll();
  }

  async function verify() {
    text("act-result", "verify…");
    var ul = v.$("verify-checks");
    v.clear(ul);
    var r = await SK.api.get("/admin/activities/" + current + "/verify");
    (r.checks || []).forEach(function (c) {
      var li = document.createElement("li");
      li.className = c.ok ? "ok" : "bad";
      li.dataset.check = c.id;
      li.textContent = c.id + " " + c.name + (c.detail ? ": " + c.detail : "");
      ul.appendChild(li);
    });
    text("act-result", r.checks ? "verify: " + (r.ok ? "every invariant holds" : "a check FAILED")
                                : "verify: " + (r.message || "failed"));
  }

  async function winners(first) {
    if (first) winnersAfter = null;
    var r = await SK.api.get("/admin/orders", { activityId: current, after: winnersAfter, limit: WINNERS_PAGE });
    var body = v.$("winners").tBodies[0];
    v.clear(body);
    if (!r.success) { text("act-result", r.message); return; }
    r.items.forEach(function (o) {
      var tr = document.createElement("tr");
      v.cell(tr, o.orderNo);
      v.cell(tr, o.userId, "num");
      v.cell(tr, o.status);
      v.cell(tr, o.acceptedAt);
      v.cell(tr, o.at);
      body.appendChild(tr);
    });
    winnersAfter = r.next === undefined ? null : r.next;
    v.$("winners-next").hidden = winnersAfter === null;
  }

  // Every page of the CSV export, one file: the header line once.
  async function exportCsv() {
    var after = null, out = "", pages = 0;
    do {
      var r = await SK.api.get("/admin/orders", { activityId: current, after: after, limit: 1000, format: "csv" });
      if (r.csv === undefined) { text("act-result", "export: " + r.message); return; }
      var csv = r.csv;
      if (pages++ > 0) csv = csv.slice(csv.indexOf("\n") + 1);
      out += csv;
      after = r.next;
    } while (after);
    var a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([out], { type: "text/csv" }));
    a.download = "sale-" + current + "-winners.csv";
    document.body.appendChild(a);
    a.click();
    a.remove();
    text("act-result", "export: " + (out.split("\n").filter(Boolean).length - 1) + " winners");
  }

  function guard(f) { return function () { f().catch(SK.app.report); }; }

  function init() {
    v.$("act-pause").addEventListener("click", guard(function () {
      return act("pause", "/admin/coupons/" + show.couponId + "/deactivate");
    }));
    v.$("act-resume").addEventListener("click", guard(function () {
      return act("resume", "/admin/coupons/" + show.couponId + "/activate");
    }));
    v.$("act-warmup").addEventListener("click", guard(function () {
      return act("warm-up", "/admin/activities/" + current + "/warmup");
    }));
    v.$("act-cancel").addEventListener("click", guard(function () {
      if (!confirm("Cancel sale " + current + "? Its unsold stock goes back to the coupon.")) return Promise.resolve();
      return act("cancel", "/admin/activities/" + current + "/cancel");
    }));
    v.$("act-verify").addEventListener("click", guard(verify));
    v.$("winners-first").addEventListener("click", guard(function () { return winners(true); }));
    v.$("winners-next").addEventListener("click", guard(function () { return winners(false); }));
    v.$("winners-csv").addEventListener("click", guard(exportCsv));
  }

  async function open(saleId) {
    stop();
    current = saleId;
    samples = [];
    show = null;
    couponStatus = null;
    text("act-result", "");
    v.clear(v.$("verify-checks"));
    await poll();
    await readCoupon();
    await poll();
    await winners(true);
    timer = setInterval(poll, POLL_MS);
  }

  return { init: init, open: open, stop: stop, id: id };
})();
