"use strict";
// The create and edit forms. The checks are the API's own (the CLI's code): the form sends
// what was typed, and a refusal's message goes next to the field it names.
var SK = window.SK || (window.SK = {});

SK.forms = (function () {
  var v = SK.view;

  // The non-empty fields, as strings: the API reads each as the CLI reads its option.
  function values(form) {
    var body = {};
    Array.prototype.forEach.call(form.elements, function (el) {
      if (el.name && el.value.trim() !== "") body[el.name] = el.value.trim();
    });
    return body;
  }

  function clearMessages(form) {
    form.querySelectorAll(".error, .done").forEach(function (e) { e.textContent = ""; });
  }

  // The field the message names first ("stock: must be ..." or "... minOrder ..."), else "".
  function fieldNamed(form, message) {
    var best = "", at = Infinity;
    form.querySelectorAll(".error[data-for]").forEach(function (e) {
      var name = e.dataset.for;
      if (!name) return;
      var m = new RegExp("(^|[^A-Za-z])" + name + "([^A-Za-z]|$)").exec(message);
      if (m && m.index < at) { best = name; at = m.index; }
    });
    return best;
  }

  function showError(form, message) {
    var name = fieldNamed(form, message);
    form.querySelector('.error[data-for="' + name + '"]').textContent = message;
  }

  // Sends the form; calls done(answer) on success, else shows the API's message.
  function wire(form, send, done) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      clearMessages(form);
      send(values(form)).then(function (r) {
        if (r.success) done(r);
        else showError(form, r.message || "refused (HTTP " + r.code + ")");
      }).catch(SK.app.report);
    });
  }

  function fillCoupons(selected) {
    var sel = v.$("sale-form").elements.couponId;
    v.clear(sel);
    var cs = SK.list.coupons();
    Object.keys(cs).sort(function (a, b) { return b - a; }).forEach(function (id) {
      var o = document.createElement("option");
      o.value = id;
      o.textContent = id + " " + cs[id].name + " (" + cs[id].status + ")";
      sel.appendChild(o);
    });
    if (selected) sel.value = String(selected);
  }

  function init() {
    var cf = v.$("coupon-form"), sf = v.$("sale-form"), ef = v.$("edit-form");
    wire(cf, function (b) { return SK.api.post("/admin/coupons", b); }, function (r) {
      cf.querySelector(".done").textContent = "Coupon " + r.id + " created.";
      SK.list.load().then(function () { fillCoupons(r.id); }).catch(SK.app.report);
    });
    wire(sf, function (b) { return SK.api.post("/admin/activities", b); }, function (r) {
      sf.querySelector(".done").textContent = "Sale " + r.id + " created.";
      location.hash = "#/sale/" + r.id;
    });
    wire(ef, function (b) { return SK.api.patch("/admin/activities/" + SK.sale.id(), b); }, function () {
      ef.querySelector(".done").textContent = "Saved.";
      ef.reset();
    });
  }

  async function openNew() {
    await SK.list.load();
    fillCoupons();
  }

  return { init: init, openNew: openNew };
})();
