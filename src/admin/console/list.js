"use strict";
// The coupons and the sales, page by page from GET /admin/coupons and /admin/activities. A
// sale whose coupon is deactivated sells nothing: it shows as PAUSED.
var SK = window.SK || (window.SK = {});

SK.list = (function () {
  var v = SK.view;
  var coupons = {};  // id -> coupon row, for the sales' PAUSED and the sale form's choices
  var MAX_PAGES = 50;

  function saleStatus(a) {
    var c = coupons[a.couponId];
    if (c && c.status === "INACTIVE" && (a.status === "ACTIVE" || a.status === "PENDING")) return "PAUSED";
    return a.status;
  }

  function addCoupon(c) {
    var tr = document.createElement("tr");
    tr.dataset.id = c.id;
    v.cell(tr, c.id, "num");
    v.cell(tr, c.name);
    v.cell(tr, c.type);
    v.cell(tr, c.status, "status-" + c.status);
    v.cell(tr, c.validFrom);
    v.cell(tr, c.validUntil);
    v.cell(tr, c.total, "num");
    v.cell(tr, c.issued, "num");
    v.cell(tr, c.used, "num");
    v.$("coupons").tBodies[0].appendChild(tr);
  }

  function addSale(a) {
    var tr = document.createElement("tr");
    tr.dataset.id = a.id;
    var idCell = v.cell(tr, "");
    var link = document.createElement("a");
    link.href = "#/sale/" + a.id;
    link.textContent = String(a.id);
    idCell.appendChild(link);
    v.cell(tr, a.name);
    v.cell(tr, a.couponId, "num");
    var st = saleStatus(a);
    v.cell(tr, st, "status status-" + st);
    v.cell(tr, a.start);
    v.cell(tr, a.end);
    v.cell(tr, a.stock, "num");
    v.cell(tr, a.sold, "num");
    v.cell(tr, a.stock - a.sold, "num");
    v.cell(tr, a.perUser, "num");
    v.$("sales").tBodies[0].appendChild(tr);
  }

  // Every page (ids ascending, 1000 a page), shown newest first: the sale of tonight is
  // the one an operator looks for. Sales and coupons number thousands, not millions.
  async function all(path) {
    var items = [], after = null, pages = 0;
    do {
      var r = await SK.api.get(path, { after: after, limit: 1000 });
      if (!r.success) throw new Error(r.message);
      items = items.concat(r.items);
      after = r.next === undefined ? null : r.next;
    } while (after !== null && ++pages < MAX_PAGES);
    return items.reverse();
  }

  async function load() {
    var cs = await all("/admin/coupons"), sales = await all("/admin/activities");
    coupons = {};
    cs.forEach(function (c) { coupons[c.id] = c; });
    v.clear(v.$("coupons").tBodies[0]);
    v.clear(v.$("sales").tBodies[0]);
    cs.forEach(addCoupon);
    sales.forEach(addSale);
  }

  function init() {}

  return { init: init, load: load, coupons: function () { return coupons; } };
})();
