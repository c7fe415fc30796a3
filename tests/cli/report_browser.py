#!/usr/bin/python3
"""report_browser.py: drives headless Chromium through chromedriver's W3C WebDriver HTTP API
(urllib only) to test a page `opperf report` wrote, as a person would use it: the page loads with
no console error, sorting a column reorders the rows, the filter hides rows, clicking a case shows
its roofline, counters and top-down; plus the checks a test asks for (--expect ...). Also takes a
screenshot (--screenshot FILE.png). Used by tests/cli/test_report.sh and for docs/report.png.

usage: report_browser.py REPORT.html [--expect peer,trend,changes,sweep,roofline,topdown,escape]
                         [--select OP] [--screenshot OUT.png] [--width W --height H]
Exit 0 when every check passed, 1 with a FAIL line per failed check, 2 when the browser or the
driver could not be started."""
import argparse
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class Driver:
    """A chromedriver process and one headless Chromium session; close() ends both."""

    def __init__(self, width, height):
        self.proc = None
        self.sid = None
        drv = shutil.which("chromedriver") or "/usr/bin/chromedriver"
        browser = shutil.which("chromium") or "/usr/bin/chromium"
        if not os.path.exists(drv) or not os.path.exists(browser):
            raise RuntimeError("chromium and chromium-driver are not installed (scripts/install-deps.sh)")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log = open(os.environ.get("REPORT_BROWSER_LOG", os.devnull), "w")
        # A session of its own: close() kills chromedriver and the browsers it started together.
        self.proc = subprocess.Popen([drv, "--port=%d" % self.port], stdout=self.log, stderr=self.log,
                                     start_new_session=True)
        deadline = time.time() + 60
        while True:
            try:
                if self.call("GET", "/status", timeout=5).get("ready"):
                    break
            except (OSError, urllib.error.URLError, ValueError):
                pass
            if time.time() > deadline or self.proc.poll() is not None:
                raise RuntimeError("chromedriver did not start")
            time.sleep(0.2)
        args = ["--headless=new", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--window-size=%d,%d" % (width, height), "--hide-scrollbars"]
        if os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": browser, "args": args},
            "goog:loggingPrefs": {"browser": "ALL"},
            "timeouts": {"script": 60000, "pageLoad": 120000}}}}
        self.sid = self.call("POST", "/session", caps, timeout=120)["sessionId"]

    def call(self, method, path, body=None, timeout=120):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read().decode()).get("value")
        except urllib.error.HTTPError as e:
            raise RuntimeError("%s %s: %s" % (method, path, e.read().decode(errors="replace")[:400]))

    def s(self, method, path, body=None):
        return self.call(method, "/session/%s%s" % (self.sid, path), body)

    def js(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find(self, css):
        return self.s("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def click(self, css):
        self.s("POST", "/element/%s/click" % self.find(css), {})

    def type(self, css, text):
        eid = self.find(css)
        self.s("POST", "/element/%s/clear" % eid, {})
        self.s("POST", "/element/%s/value" % eid, {"text": text})

    def console(self):
        """The browser's console entries since the last call."""
        return self.s("POST", "/se/log", {"type": "browser"}) or []

    def close(self):
        try:
            if self.sid:
                self.call("DELETE", "/session/%s" % self.sid, timeout=30)
        except Exception:
            pass
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except Exception:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except Exception:
                    pass
                self.proc.wait()
        self.log.close()


# The order of the rows on screen: each visible row's case index (data-i).
VISIBLE = ("return Array.from(document.querySelectorAll('#cases-table tbody tr'))"
           ".filter(r => !r.classList.contains('hidden')).map(r => +r.dataset.i);")
# The cases as the page decoded them (strings from the string table), without the page's own
# search text.
CASES = "return window.opperf.cases.map(c => Object.assign({}, c, {_text: undefined}));"


def run_checks(d, path, expect, select_op):
    fails = []

    def check(cond, what):
        if not cond:
            fails.append(what)
            print("FAIL: " + what)

    d.s("POST", "/url", {"url": "file://" + os.path.abspath(path)})
    for _ in range(600):
        if d.js("return document.body && document.body.getAttribute('data-ready');") == "1":
            break
        time.sleep(0.1)
    else:
        check(False, "the page never finished drawing (body[data-ready]); console: %s" % d.console())
        return fails
    errors = [e for e in d.console() if e.get("level") in ("SEVERE", "ERROR")]
    check(not errors, "console errors on load: %s" % errors)
    cases = d.js(CASES)
    order0 = d.js(VISIBLE)
    check(len(order0) == len(cases) and len(cases) > 1, "table rows %d, cases %d" % (len(order0), len(cases)))

    # --- sorting by the time column: descending first (a number), then ascending ---
    def med(i):
        t = cases[i].get("t")
        return t[0] if t else None
    d.click("#cases-table th[data-col=time]")
    order1 = d.js(VISIBLE)
    meds = [med(i) for i in order1 if med(i) is not None]
    check(meds == sorted(meds, reverse=True), "time sort (descending) not in order: %s" % meds[:10])
    check(order1 != order0, "sorting by time did not reorder the rows")
    check(d.js("return document.querySelector('#cases-table th[data-col=time]').getAttribute('aria-sort');") == "descending",
          "aria-sort not set on the sorted column")
    d.click("#cases-table th[data-col=time]")
    meds = [med(i) for i in d.js(VISIBLE) if med(i) is not None]
    check(meds == sorted(meds), "time sort (ascending, second click) not in order: %s" % meds[:10])
    d.click("#cases-table th[data-col=op]")
    ops = [cases[i]["op"] for i in d.js(VISIBLE)]
    # in the page's order: natural (numbers by value), as the browser's collation has it
    bad = d.js("var o = arguments[0]; for (var i = 1; i < o.length; i++) "
               "if (o[i - 1].localeCompare(o[i], undefined, {numeric: true}) > 0) return [o[i - 1], o[i]]; return null;", ops)
    check(bad is None and len(set(ops)) > 1 or len(set(x["op"] for x in cases)) == 1, "operator sort out of order at %s" % bad)

    # --- filtering hides rows; a -word excludes ---
    op = select_op or cases[0]["op"]
    d.type("#filter", op)
    vis = d.js(VISIBLE)
    check(0 < len(vis) < len(cases), "filter '%s' shows %d of %d rows" % (op, len(vis), len(cases)))
    check(all(op in (cases[i]["op"] + " " + cases[i]["spec"]).lower() or op in json.dumps(cases[i]).lower() for i in vis),
          "filter '%s' shows a row without it" % op)
    count = d.js("return document.getElementById('count').textContent;")
    check(count.startswith("%d of %d" % (len(vis), len(cases))), "count line '%s'" % count)
    d.type("#filter", "-" + op)
    vis2 = d.js(VISIBLE)
    check(len(vis2) == len(cases) - len(vis), "filter '-%s' shows %d rows, expected %d" % (op, len(vis2), len(cases) - len(vis)))
    d.type("#filter", op)

    # --- clicking a case shows its roofline, counters and top-down ---
    first = d.js(VISIBLE)[0]
    d.click("#cases-table tbody tr[data-i='%d']" % first)
    c = cases[first]
    title = d.js("var h = document.querySelector('#detail h2'); return h ? h.textContent : null;")
    check(title is not None and c["op"] in title, "clicking a case shows no detail (%s)" % title)
    check(d.js("return document.querySelector('#cases-table tbody tr.selected') !== null;"), "the clicked row is not marked")
    npts = d.js("return document.querySelectorAll('#detail svg .pt').length;")
    nsel = d.js("return document.querySelectorAll('#detail svg .pt.sel').length;")
    want_pts = len([x for x in cases if x["op"] == c["op"] and (x.get("m") or {}).get("gflops", 0) > 0
                    and x.get("flops", 0) > 0 and x.get("bytes", 0) > 0])
    check(npts == want_pts and npts > 0, "roofline points %d, expected %d" % (npts, want_pts))
    check(nsel == 1, "selected points on the roofline: %d" % nsel)
    ctr = d.js("return Array.from(document.querySelectorAll('#counters tbody tr')).map(r => Array.from(r.cells).map(x => x.textContent));")
    check(len(ctr) == len(c.get("ctr", [])) and len(ctr) > 0, "counter rows %d, the case has %d" % (len(ctr), len(c.get("ctr", []))))
    for row, e in zip(ctr, c.get("ctr", [])):
        if e["status"] in ("counted", "scaled", "partial"):
            continue
        check(row[1].startswith(e["status"]) and row[1] != "0", "uncounted %s shows '%s'" % (e["name"], row[1]))
        if e.get("reason"):
            check(e["reason"] in row[1], "uncounted %s lacks its reason: '%s'" % (e["name"], row[1]))
    if "roofline" in expect:
        nceil = d.js("return document.querySelectorAll('#detail svg path.ceil').length;")
        check(nceil >= 2, "roofline ceilings drawn: %d" % nceil)
        lab = d.js("return Array.from(document.querySelectorAll('#detail svg text')).map(t => t.textContent).join('|');")
        for want in expect.get("roofline_labels", []):
            check(want in lab, "roofline lacks the ceiling '%s' (%s)" % (want, lab))
    if "topdown" in expect:
        # the point of another case with top-down: click it in the chart
        td = [i for i, x in enumerate(cases) if x.get("td")]
        check(bool(td), "no case with a topdown object in the data")
        if td:
            d.type("#filter", "")
            d.click("#cases-table tbody tr[data-i='%d']" % td[0])
            txt = d.js("var t = document.getElementById('topdown'); return t ? t.textContent : '';")
            tdo = cases[td[0]]["td"]
            if tdo.get("available"):
                check("retiring" in txt and "backend bound" in txt, "top-down breakdown missing: %s" % txt[:200])
                check(d.js("return document.querySelectorAll('#topdown .td-bar > div').length;") == len(tdo["level1"]), "top-down bar")
            else:
                check("not available: " + tdo.get("reason", "") in txt, "top-down reason missing: %s" % txt[:200])
    if "escape" in expect:
        check(d.js("return window.__opperf_injected === undefined;"), "a </script> in the data ran as script")
        msgs = [x.get("msg", "") for x in cases]
        check(any("</script>" in m for m in msgs), "the </script> message did not survive as text")
        cell = d.js("return Array.from(document.querySelectorAll('#cases-table td')).some(td => td.textContent.indexOf('</script>') >= 0);")
        check(cell, "the </script> message is not shown as text in the table")
    if "peer" in expect:
        cells = d.js("return Array.from(document.querySelectorAll('#cases-table tbody td .ratio')).map(s => [s.textContent, getComputedStyle(s).backgroundColor]);")
        check(len(cells) > 0, "no ours/peer ratio cells")
        check(all(t.strip() for t, _ in cells), "a ratio cell without its number")
        check(any(bg not in ("rgba(0, 0, 0, 0)", "transparent") for _, bg in cells), "ratio cells are not coloured")
        check(d.js("return document.querySelector('#cases-table th[data-col=peer]') !== null;"), "no ours/peer column")
    if "trend" in expect:
        n = d.js("return document.querySelectorAll('#regressions-table tbody tr').length;")
        check(n > 0, "no regression rows")
        check(d.js("return document.querySelectorAll('#regressions-table svg.spark path').length;") == n, "a regression row without its trend line")
        ratios = d.js("return Array.from(document.querySelectorAll('#regressions-table tbody tr td:nth-child(4)')).map(t => parseFloat(t.textContent));")
        check(ratios == sorted(ratios, reverse=True), "regressions not sorted by ratio: %s" % ratios[:10])
        # a case's detail carries its trend chart
        d.type("#filter", "")
        d.click("#cases-table tbody tr[data-i='%d']" % d.js(VISIBLE)[0])
        check(d.js("return Array.from(document.querySelectorAll('#detail svg text')).some(t => t.textContent.indexOf('trend across') === 0);"),
              "the case detail has no trend chart")
    if "changes" in expect:
        check(d.js("return document.querySelectorAll('#regressions-table .change').length;") > 0, "change points not marked")
    elif "trend" in expect:
        check(d.js("return document.querySelectorAll('.change').length;") == 0, "change points marked without any in the input")
    if "sweep" in expect:
        npath = d.js("return document.querySelectorAll('#sweeps svg path').length;")
        check(npath >= 1, "no sweep line drawn")
        d.js("var s = document.querySelector('#sweeps select'); s.value = s.options[s.options.length - 1].value; s.dispatchEvent(new Event('change'));")
        check(d.js("return document.querySelectorAll('#sweeps svg circle').length;") > 0, "sweep metric switch drew nothing")
    errors = [e for e in d.console() if e.get("level") in ("SEVERE", "ERROR")]
    check(not errors, "console errors while using the page: %s" % errors)
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--expect", default="")
    ap.add_argument("--ceiling", action="append", default=[], help="a roofline label the chart must show")
    ap.add_argument("--select", default=None, help="operator to filter for and click")
    ap.add_argument("--screenshot", default=None)
    ap.add_argument("--no-checks", action="store_true")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1000)
    a = ap.parse_args()
    expect = {k: True for k in a.expect.split(",") if k}
    expect["roofline_labels"] = a.ceiling
    try:
        d = Driver(a.width, a.height)
    except Exception as e:
        print("report_browser: cannot start the browser: %s" % e)
        return 2
    try:
        if a.no_checks:
            d.s("POST", "/url", {"url": "file://" + os.path.abspath(a.page)})
            fails = []
            if a.select:
                d.type("#filter", a.select)
                d.click("#cases-table tbody tr:not(.hidden)")
                d.js("window.scrollTo(0, 0);")
        else:
            fails = run_checks(d, a.page, expect, a.select)
        if a.screenshot:
            png = base64.b64decode(d.s("GET", "/screenshot"))
            with open(a.screenshot, "wb") as f:
                f.write(png)
    finally:
        d.close()
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
