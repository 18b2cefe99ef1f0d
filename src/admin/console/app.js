"use strict";
// The login and the pages by the URL's fragment (#/, #/new, #/sale/ID): the fragment
// never reaches the server, and never holds the token.
var SK = window.SK || (window.SK = {});

SK.app = (function () {
  var v = SK.view;

  function report(e) {
    if (e instanceof SK.api.Unauthorized) return;  // the login is showing already
    v.$("act-result").textContent = "error: " + (e && e.message ? e.message : e);
    console.error(e);
  }

  function route() {
    if (!SK.api.token()) { v.showLogin(""); return; }
    var h = location.hash || "#/";
    var m = /^#\/sale\/(\d+)$/.exec(h);
    if (m) {
      v.show("page-sale");
      SK.sale.open(m[1]).catch(report);
    } else if (h === "#/new") {
      SK.sale.stop();
      v.show("page-new");
      SK.forms.openNew().catch(report);
    } else {
      SK.sale.stop();
      v.show("page-list");
      SK.list.load().catch(report);
    }
  }

  function init() {
    v.$("login-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var t = v.$("login-token").value.trim();
      v.$("login-token").value = "";
      if (!t) return;
      SK.api.login(t);
      // The page asked for decides: a refused token comes back here with a message.
      route();
    });
    v.$("logout").addEventListener("click", function () {
      SK.api.logout();
      v.showLogin("");
    });
    SK.list.init();
    SK.forms.init();
    SK.sale.init();
    window.addEventListener("hashchange", route);
    route();
  }

  return { init: init, report: report };
})();

SK.app.init();
