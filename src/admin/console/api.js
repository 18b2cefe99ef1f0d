"use strict";
// The one way the pages reach seckill-admin: every call carries the token as the bearer
// header, and a 401 forgets it and shows the login. The token lives in this tab's
// sessionStorage only, never in a URL or a cookie, so it is neither logged by a proxy nor
// sent by the browser on its own.
var SK = window.SK || (window.SK = {});

SK.api = (function () {
  var KEY = "seckill-admin-token";

  function Unauthorized() { this.message = "a valid admin token is required"; }

  function token() { return sessionStorage.getItem(KEY); }
  function login(t) { sessionStorage.setItem(KEY, t); }
  function logout() { sessionStorage.removeItem(KEY); }

  // The answer's JSON with its HTTP code as `code`; a CSV answer as {code, csv, next}.
  async function call(method, path, body) {
    var t = token();
    if (!t) {
      SK.view.showLogin("");
      throw new Unauthorized();
    }
    var init = { method: method, cache: "no-store", headers: { "Authorization": "Bearer " + t } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    var r = await fetch(path, init);
    if (r.status === 401) {
      logout();
      SK.view.showLogin("The token was refused: enter the admin token again.");
      throw new Unauthorized();
    }
    if ((r.headers.get("Content-Type") || "").indexOf("text/csv") === 0)
      return { code: r.status, csv: await r.text(), next: r.headers.get("X-Next-Cursor") };
    var j;
    try {
      j = await r.json();
    } catch (e) {
      j = { success: false, message: "HTTP " + r.status + " without a JSON answer" };
    }
    j.code = r.status;
    return j;
  }

  function query(params) {
    var parts = [];
    Object.keys(params).forEach(function (k) {
      if (params[k] !== undefined && params[k] !== null && params[k] !== "")
        parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(params[k]));
    });
    return parts.length ? "?" + parts.join("&") : "";
  }

  return {
    Unauthorized: Unauthorized, token: token, login: login, logout: logout, query: query,
    get: function (path, params) { return call("GET", path + query(params || {})); },
    post: function (path, body) { return call("POST", path, body); },
    patch: function (path, body) { return call("PATCH", path, body); },
  };
})();
