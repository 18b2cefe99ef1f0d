"""The operator console (issue 29, docs/console.md) in a real browser: headless Chromium
(Debian's chromium and chromium-driver, scripts/install-deps.sh --browser) driven with
Selenium against seckill-admin, a gateway and a consumer on the real services. Each page
is saved as a screenshot in the module's directory (the test's tmp dir)."""

import csv
import io
import shutil
import threading
import time

import pytest
import requests
# Imported, never skipped when missing: test/requirements.txt has selenium, and
# scripts/venv.sh installs it; a venv without it is a broken one.
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from adminhttp import Admin
from sales import wait_for_consumer
from stack import free_port, poll_until

TOKEN = "console-t0k3n-for-the-browser-tests-0123456789"
CONF_OVERRIDES = {"admin.port": free_port(), "admin.token": TOKEN}
CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WAIT = 20


@pytest.fixture(scope="module")
def admin(admin_server):
    return Admin(f"http://127.0.0.1:{admin_server.port}", TOKEN)


@pytest.fixture(scope="module")
def shots(logdir):
    d = logdir / "screenshots"
    d.mkdir(exist_ok=True)
    return d


@pytest.fixture(scope="module")
def browser(admin_server, logdir):
    for path in (CHROMIUM, DRIVER):
        assert shutil.which(path), f"{path} is missing: bash scripts/install-deps.sh --browser"
    downloads = logdir / "downloads"
    downloads.mkdir(exist_ok=True)
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,1400", f"--user-data-dir={logdir / 'chromium-profile'}"):
        opts.add_argument(arg)
    opts.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                           "download.prompt_for_download": False})
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(DRIVER, log_output=str(logdir / "chromedriver.log")), options=opts)
    d.downloads = downloads
    d.base = f"http://127.0.0.1:{admin_server.port}/console/"
    yield d
    d.quit()


def wait(d, predicate, what, timeout=WAIT):
    """The page redraws its tables and figures every second: an element read while it is
    replaced is read again."""
    return WebDriverWait(d, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda _: predicate(), message=what)


def row_texts(d, css):
    """The rows' text in one call, at one instant (never half of an old table)."""
    return d.execute_script("return Array.from(document.querySelectorAll(arguments[0]))"
                            ".map(function (r) { return r.textContent; });", css)


def el(d, css):
    return d.find_element(By.CSS_SELECTOR, css)


def visible(d, css):
    found = d.find_elements(By.CSS_SELECTOR, css)
    return bool(found) and found[0].is_displayed()


def text(d, css):
    return el(d, css).text.strip()


def log_in(d, token):
    d.get(d.base)
    wait(d, lambda: visible(d, "#login"), "the login")
    el(d, "#login-token").send_keys(token)
    el(d, "#login-submit").click()


def fill(d, form, values):
    for name, value in values.items():
        field = el(d, f"#{form} [name={name}]")
        if field.tag_name == "select":
            Select(field).select_by_value(str(value))
        else:
            field.clear()
            field.send_keys(str(value))


def csp_violations(d):
    return [e["message"] for e in d.get_log("browser") if "Content Security Policy" in e["message"]]


def audit_rows(mysql):
    return int(mysql.scalar("SELECT COUNT(*) FROM admin_audit"))


def test_pages_are_served_without_the_token_with_their_policy(admin):
    for path, ctype in (("/console/", "text/html"), ("/console/api.js", "text/javascript"),
                        ("/console/console.css", "text/css")):
        r = requests.get(admin.base_url + path, timeout=10)
        assert r.status_code == 200 and r.headers["Content-Type"].startswith(ctype), (path, r.headers)
        csp = r.headers["Content-Security-Policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp and "unsafe" not in csp, csp
        assert r.headers["X-Content-Type-Options"] == "nosniff"
    page = requests.get(admin.base_url + "/console/", timeout=10).text
    assert "<script>" not in page and "http" not in page.replace("http-equiv", ""), "an inline or remote script"
    r = requests.get(admin.base_url + "/console", allow_redirects=False, timeout=10)
    assert r.status_code == 301 and r.headers["Location"] == "/console/"
    assert requests.get(admin.base_url + "/console/../admin/stats", timeout=10).status_code in (401, 404)
    assert requests.get(admin.base_url + "/console/nothing.js", timeout=10).status_code == 404
    assert requests.post(admin.base_url + "/console/", timeout=10).status_code == 405


def test_a_wrong_token_shows_the_login_again_and_reaches_no_route(browser, admin_server, mysql, shots):
    d = browser
    audits = audit_rows(mysql)
    coupons = int(mysql.scalar("SELECT COUNT(*) FROM coupon"))
    log_in(d, "wrong" + TOKEN)
    wait(d, lambda: "refused" in text(d, "#login-error"), "the login to say the token was refused")
    assert visible(d, "#login") and not visible(d, "#nav")
    assert d.execute_script("return sessionStorage.getItem('seckill-admin-token')") is None
    # A write asked with a wrong token straight from the page's own client.
    d.execute_script("sessionStorage.setItem('seckill-admin-token', arguments[0]);"
                     "SK.api.post('/admin/coupons', {name: 'never', type: 'CASH', amount: '1.00',"
                     " total: '5', start: 'now', end: '+1d'}).catch(function () {});", "x" * 40)
    wait(d, lambda: d.execute_script("return sessionStorage.getItem('seckill-admin-token')") is None,
         "the 401 to forget the token")
    assert visible(d, "#login")
    d.save_screenshot(str(shots / "login.png"))
    assert int(mysql.scalar("SELECT COUNT(*) FROM coupon")) == coupons
    assert audit_rows(mysql) == audits, "a request with a wrong token ran a command"
    assert "POST /admin/coupons -> 401" in admin_server.log_text(), "the admin's log of the refusal"
    assert "POST /admin/coupons -> 201" not in admin_server.log_text()
    cookies = d.get_cookies()
    assert not cookies, cookies


def test_login_shows_the_sales_and_coupons(browser, admin, shots):
    coupon = admin.create_coupon(50, name="listed coupon")
    sale = admin.create_activity(coupon, 7)
    d = browser
    log_in(d, TOKEN)
    wait(d, lambda: visible(d, "#page-list") and d.find_elements(By.CSS_SELECTOR, f"#sales tr[data-id='{sale}']"),
         "the sale in the list")
    row = [c.text for c in el(d, f"#sales tr[data-id='{sale}']").find_elements(By.TAG_NAME, "td")]
    assert row[0] == str(sale) and row[2] == str(coupon) and row[3] == "ACTIVE", row
    assert row[6:9] == ["7", "0", "7"], row
    assert el(d, f"#coupons tr[data-id='{coupon}']")
    assert admin.post(f"/admin/coupons/{coupon}/deactivate").code == 200
    d.refresh()
    wait(d, lambda: d.find_elements(By.CSS_SELECTOR, f"#sales tr[data-id='{sale}'] td.status"),
         "the list after a reload (the token kept in the tab)")
    assert text(d, f"#sales tr[data-id='{sale}'] td.status") == "PAUSED"
    d.save_screenshot(str(shots / "list.png"))
    assert not csp_violations(d)
    assert "token" not in d.current_url and TOKEN not in d.current_url


def test_a_bad_form_value_shows_its_error_and_creates_nothing(browser, mysql, shots):
    d = browser
    d.get(d.base + "#/new")
    wait(d, lambda: visible(d, "#page-new"), "the form")
    coupons = int(mysql.scalar("SELECT COUNT(*) FROM coupon"))
    fill(d, "coupon-form", {"name": "bad total", "type": "CASH", "amount": "5.00", "total": "lots"})
    el(d, "#coupon-form button[type=submit]").click()
    wait(d, lambda: text(d, "#coupon-form .error[data-for=total]"), "the error next to total")
    message = text(d, "#coupon-form .error[data-for=total]")
    assert "total" in message, message
    assert int(mysql.scalar("SELECT COUNT(*) FROM coupon")) == coupons
    # The same message the API gives (the CLI's checks, not the page's).
    api = Admin(d.base.replace("/console/", ""), TOKEN)
    r = api.post("/admin/coupons", {"name": "bad total", "type": "CASH", "amount": "5.00", "total": "lots",
                                   "start": "now", "end": "+30d"})
    assert r.code == 400 and r["message"] == message, (r, message)

    # The sale's form likewise: a stock the CLI refuses, no sale made.
    wait(d, lambda: el(d, "#sale-form [name=couponId]").get_attribute("value"), "a coupon to choose")
    sales = int(mysql.scalar("SELECT COUNT(*) FROM seckill_activity"))
    fill(d, "sale-form", {"name": "bad stock", "stock": "-3"})
    el(d, "#sale-form button[type=submit]").click()
    wait(d, lambda: text(d, "#sale-form .error[data-for=stock]"), "the error next to stock")
    assert "stock" in text(d, "#sale-form .error[data-for=stock]")
    assert not text(d, "#sale-form .error[data-for=name]")
    assert int(mysql.scalar("SELECT COUNT(*) FROM seckill_activity")) == sales
    d.save_screenshot(str(shots / "form-error.png"))

    # Buckets: more than the CLI allows is refused next to its field; a good count makes a
    # bucketed sale (of a coupon of its own: the one chosen may be paused by another test).
    r = api.post("/admin/coupons", {"name": "for buckets", "type": "CASH", "amount": "5.00", "total": 100,
                                   "start": "now", "end": "+30d"})
    assert r.code == 201, repr(r)
    d.refresh()
    wait(d, lambda: d.find_elements(By.CSS_SELECTOR, f'#sale-form option[value="{r["id"]}"]'), "the new coupon")
    fill(d, "sale-form", {"couponId": r["id"], "name": "bucketed", "stock": "30", "buckets": "40"})
    el(d, "#sale-form button[type=submit]").click()
    wait(d, lambda: text(d, "#sale-form .error[data-for=buckets]"), "the error next to buckets")
    assert "buckets" in text(d, "#sale-form .error[data-for=buckets]")
    assert int(mysql.scalar("SELECT COUNT(*) FROM seckill_activity")) == sales
    fill(d, "sale-form", {"buckets": "3"})
    el(d, "#sale-form button[type=submit]").click()
    wait(d, lambda: d.current_url.split("#")[-1].startswith("/sale/"), "the bucketed sale's page")
    shown = api.get(f"/admin/activities/{int(d.current_url.rsplit('/', 1)[1])}")
    assert shown["name"] == "bucketed" and len(shown["redis"]["buckets"]) == 3, shown


def test_a_sale_from_the_form_run_live_paused_verified_exported_and_cancelled(
        browser, admin, gateway, consumer, api, mysql, redis, conf, ids, shots):
    d = browser
    d.get(d.base + "#/new")
    wait(d, lambda: visible(d, "#page-new"), "the form")
    fill(d, "coupon-form", {"name": "console coupon", "type": "CASH", "amount": "10.00", "minOrder": "100.00",
                            "total": "500"})
    el(d, "#coupon-form button[type=submit]").click()
    wait(d, lambda: "created" in text(d, "#coupon-form .done"), "the coupon created")
    coupon = int(text(d, "#coupon-form .done").split()[1])
    assert mysql.scalar(f"SELECT name FROM coupon WHERE id = {coupon}") == "console coupon"
    wait(d, lambda: el(d, "#sale-form [name=couponId]").get_attribute("value") == str(coupon),
         "the new coupon chosen for the sale")
    stocks = 120
    fill(d, "sale-form", {"name": "console sale", "stock": stocks, "perUser": 1})
    el(d, "#sale-form button[type=submit]").click()
    wait(d, lambda: d.current_url.split("#")[-1].startswith("/sale/"), "the sale's page")
    sale = int(d.current_url.rsplit("/", 1)[1])
    wait(d, lambda: text(d, "#fig-left") == str(stocks), "the sale's stock")
    d.save_screenshot(str(shots / "sale-created.png"))

    # The gateway must know the sale before the load.
    poll_until(lambda: api.stock(sale) == stocks if api.get(f"/seckill/stock/{sale}").code == 200 else False,
               15, "the gateway to see the sale")
    stop = threading.Event()
    sold = []

    def load():
        while not stop.is_set() and len(sold) < stocks:
            r = api.execute(ids(), sale)
            if r.code == 200:
                sold.append(r)
            time.sleep(0.02)

    seen, rates = [], []
    t = threading.Thread(target=load, daemon=True)
    t.start()
    try:
        deadline = time.time() + 60
        while time.time() < deadline and (not seen or seen[-1] > 0):
            left = text(d, "#fig-left")
            if left.isdigit() and (not seen or int(left) != seen[-1]):
                seen.append(int(left))
            rate = text(d, "#fig-accepted")
            if rate.isdigit():
                rates.append(int(rate))
            time.sleep(0.25)
        d.save_screenshot(str(shots / "sale-live.png"))
    finally:
        stop.set()
        t.join(30)
    assert len(seen) >= 3 and seen == sorted(seen, reverse=True) and seen[-1] == 0, seen
    assert max(rates) > 0, rates
    assert len(sold) == stocks
    wait_for_consumer(mysql, redis, conf, sale, expected_rows=stocks, consumer=consumer)
    wait(d, lambda: text(d, "#fig-success") == str(stocks) and text(d, "#fig-processing") == "0",
         "every order SUCCESS on the page")

    # Refusals by reason: buyers arriving after the sell-out, over a few seconds, show as
    # OUT_OF_STOCK with a rate while they come and the total the buyers were told.
    late, late_rates = [], []

    def arrive():
        for _ in range(40):
            late.append(api.execute(ids(), sale))
            time.sleep(0.1)

    t = threading.Thread(target=arrive, daemon=True)
    t.start()
    while t.is_alive():
        # One script call: the table is rebuilt every poll, so an element found may be gone.
        rate = row_texts(d, '#refusals tr[data-reason="OUT_OF_STOCK"] td:nth-child(3)')
        if rate and rate[0].isdigit():
            late_rates.append(int(rate[0]))
        time.sleep(0.25)
    t.join()
    assert all(r["status"] == "OUT_OF_STOCK" for r in late), late
    wait(d, lambda: row_texts(d, '#refusals tr[data-reason="OUT_OF_STOCK"] td:nth-child(2)') == [str(len(late))],
         "the refusals' total on the page")
    assert row_texts(d, "#refusals tbody tr td:first-child") == ["OUT_OF_STOCK"]
    assert max(late_rates, default=0) > 0, late_rates
    d.save_screenshot(str(shots / "sale-refusals.png"))

    # Pause and resume: the coupon's status, which the gateway obeys.
    el(d, "#act-pause").click()
    wait(d, lambda: text(d, "#fig-status") == "PAUSED", "the sale paused")
    assert mysql.scalar(f"SELECT status FROM coupon WHERE id = {coupon}") == "INACTIVE"
    d.save_screenshot(str(shots / "sale-paused.png"))
    el(d, "#act-resume").click()
    wait(d, lambda: text(d, "#fig-status") == "ACTIVE", "the sale resumed")
    assert mysql.scalar(f"SELECT status FROM coupon WHERE id = {coupon}") == "ACTIVE"

    # Verify as a checklist.
    el(d, "#act-verify").click()
    wait(d, lambda: "every invariant holds" in text(d, "#act-result"), "verify to pass", timeout=60)
    checks = d.find_elements(By.CSS_SELECTOR, "#verify-checks li")
    ids_shown = [c.get_attribute("data-check") for c in checks]
    assert {"I1", "I2", "I3", "I4", "I5"} <= set(ids_shown), ids_shown
    assert all(c.get_attribute("class") == "ok" for c in checks)
    d.save_screenshot(str(shots / "sale-verified.png"))

    # Winners: a page of 20, the next one, and the whole CSV.
    el(d, "#winners-first").click()
    wait(d, lambda: len(row_texts(d, "#winners tbody tr")) == 20, "the first page")
    first = row_texts(d, "#winners tbody tr")
    el(d, "#winners-next").click()
    wait(d, lambda: row_texts(d, "#winners tbody tr") not in ([], first), "the second page")
    assert not set(first) & set(row_texts(d, "#winners tbody tr"))
    el(d, "#winners-csv").click()
    name = d.downloads / f"sale-{sale}-winners.csv"
    wait(d, lambda: name.exists() and name.stat().st_size > 0, "the CSV download")
    rows = list(csv.DictReader(io.StringIO(name.read_text())))
    orders = {r[0] for r in mysql.rows(f"SELECT order_no FROM seckill_order WHERE activity_id = {sale}")}
    assert len(rows) == stocks and {r["orderNo"] for r in rows} == orders, (len(rows), rows[:2])

    # Edit (the window) and cancel.
    fill(d, "edit-form", {"name": "console sale renamed"})
    el(d, "#edit-form button[type=submit]").click()
    wait(d, lambda: "console sale renamed" in text(d, "#sale-title"), "the new name")
    el(d, "#act-cancel").click()
    d.switch_to.alert.accept()
    wait(d, lambda: text(d, "#fig-status") == "CANCELLED", "the sale cancelled")
    assert mysql.scalar(f"SELECT status FROM seckill_activity WHERE id = {sale}") == "CANCELLED"
    assert not el(d, "#act-cancel").is_enabled() and not el(d, "#act-pause").is_enabled()
    d.save_screenshot(str(shots / "sale-cancelled.png"))
    assert not csp_violations(d), csp_violations(d)
