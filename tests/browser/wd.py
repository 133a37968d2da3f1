"""A small W3C WebDriver client (standard library only) for headless
Chromium through Debian's chromedriver: start a driver on a free loopback
port, open a session with the flags Chromium needs here (root, no network:
see tests/browser/README in docs/http.md), navigate, find elements, type,
click, run JavaScript, read the browser's console log and take
screenshots.  Used by tests/browser/test_ui.py and scripts/screenshots.py.
"""
import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
CHROME_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--disable-extensions",
                "--disable-default-apps", "--hide-scrollbars",
                "--force-device-scale-factor=1"]


class Unavailable(Exception):
    """Chromium or chromedriver is missing or cannot start."""


def find(names):
    for n in names:
        p = shutil.which(n)
        if p:
            return p
    return None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Driver:
    def __init__(self, width=1280, height=800, timeout=30):
        chrome = os.environ.get("PARSA_CHROMIUM") or find(["chromium", "chromium-browser"])
        drv = os.environ.get("PARSA_CHROMEDRIVER") or find(["chromedriver"])
        if not chrome or not drv or not os.path.exists(chrome) or not os.path.exists(drv):
            raise Unavailable("chromium and chromedriver are not installed "
                              "(Debian packages chromium, chromium-driver; scripts/deps.sh)")
        self.port = free_port()
        self.profile = tempfile.mkdtemp(prefix="parsa-chrome-")
        self.log = open(os.path.join(self.profile, "driver.log"), "w")
        try:
            self.p = subprocess.Popen([drv, "--port=%d" % self.port, "--allowed-ips=127.0.0.1"],
                                      stdout=self.log, stderr=subprocess.STDOUT)
        except OSError as e:
            self.log.close()
            shutil.rmtree(self.profile, ignore_errors=True)
            raise Unavailable("cannot run %s: %s" % (drv, e))
        self.base = "http://127.0.0.1:%d" % self.port
        self.sid = None
        t0 = time.time()
        while True:
            try:
                if self._req("GET", "/status", timeout=2)["value"].get("ready"):
                    break
            except (OSError, ValueError):
                pass
            if self.p.poll() is not None or time.time() - t0 > 15:
                self.quit()
                raise Unavailable("chromedriver did not start")
            time.sleep(0.1)
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chrome,
                "args": CHROME_FLAGS + ["--user-data-dir=" + os.path.join(self.profile, "ud"),
                                        "--window-size=%d,%d" % (width, height)]},
            "goog:loggingPrefs": {"browser": "ALL"},
            "timeouts": {"implicit": 0, "pageLoad": timeout * 1000, "script": timeout * 1000},
        }}}
        try:
            self.sid = self._req("POST", "/session", caps, timeout=60)["value"]["sessionId"]
        except Exception as e:  # noqa: BLE001 - any failure: no browser here
            self.quit()
            raise Unavailable("chromium did not start: %s" % e)

    def _req(self, method, path, body=None, timeout=60):
        data = json.dumps(body).encode() if body is not None else None
        r = urllib.request.Request(self.base + path, data=data, method=method,
                                   headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(r, timeout=timeout) as f:
                return json.loads(f.read() or b"{}")
        except urllib.error.HTTPError as e:
            msg = e.read().decode(errors="replace")
            raise RuntimeError("webdriver %s %s: %s" % (method, path, msg[:600]))

    def cmd(self, method, path, body=None):
        return self._req(method, "/session/%s%s" % (self.sid, path), body)["value"]

    # ---- navigation and scripts ----

    def get(self, url):
        self.cmd("POST", "/url", {"url": url})

    def js(self, script, *args):
        return self.cmd("POST", "/execute/sync", {"script": script, "args": list(args)})

    def js_async(self, script, *args):
        return self.cmd("POST", "/execute/async", {"script": script, "args": list(args)})

    def wait(self, cond, timeout=30, what="condition", poll=0.05):
        t0 = time.time()
        while True:
            v = cond()
            if v:
                return v
            if time.time() - t0 > timeout:
                raise AssertionError("timed out waiting for %s" % what)
            time.sleep(poll)

    def wait_js(self, expr, timeout=30, what=None):
        return self.wait(lambda: self.js("return " + expr), timeout, what or expr)

    # ---- elements ----

    def find(self, css):
        v = self.cmd("POST", "/elements", {"using": "css selector", "value": css})
        return [Element(self, e[ELEMENT]) for e in v]

    def one(self, css, timeout=30):
        return self.wait(lambda: (self.find(css) or [None])[0], timeout, css)

    def text(self, css):
        return self.one(css).text()

    # ---- output ----

    def console(self):
        """The browser's console entries since the last call."""
        try:
            return self._req("POST", "/session/%s/se/log" % self.sid, {"type": "browser"})["value"]
        except RuntimeError:
            return self._req("POST", "/session/%s/log" % self.sid, {"type": "browser"})["value"]

    def screenshot(self, path):
        png = base64.b64decode(self.cmd("GET", "/screenshot"))
        with open(path, "wb") as f:
            f.write(png)

    def size(self, width, height):
        self.cmd("POST", "/window/rect", {"width": width, "height": height})

    def quit(self):
        if self.sid:
            try:
                self._req("DELETE", "/session/" + self.sid, timeout=20)
            except Exception:  # noqa: BLE001 - best effort
                pass
            self.sid = None
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


class Element:
    def __init__(self, d, eid):
        self.d, self.id = d, eid

    def _cmd(self, method, what, body=None):
        return self.d.cmd(method, "/element/%s/%s" % (self.id, what), body)

    def click(self):
        self._cmd("POST", "click", {})

    def send_keys(self, text):
        self._cmd("POST", "value", {"text": text})

    def clear(self):
        self._cmd("POST", "clear", {})

    def text(self):
        return self._cmd("GET", "text")

    def attr(self, name):
        return self._cmd("GET", "attribute/" + name)

    def prop(self, name):
        return self._cmd("GET", "property/" + name)
