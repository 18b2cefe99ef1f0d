"use strict";
// Which section shows, and small DOM helpers. Text goes in with textContent only: names
// come from operators and must never become markup.
var SK = window.SK || (window.SK = {});

SK.view = (function () {
  var pages = ["login", "page-list", "page-new", "page-sale"];

  function $(id) { return document.getElementById(id); }

  function show(id) {
    pages.forEach(function (p) { $(p).hidden = p !== id; });
    $("nav").hidden = id === "login";
  }

  function showLogin(message) {
    if (SK.sale) SK.sale.stop();
    $("login-error").textContent = message || "";
    show("login");
    $("login-token").focus();
  }

  function cell(tr, text, cls) {
    var td = document.createElement("td");
    td.textContent = text === null || text === undefined ? "" : String(text);
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
  }

  return { $: $, show: show, showLogin: showLogin, cell: cell, clear: clear };
})();
