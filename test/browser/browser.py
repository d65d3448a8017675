"""Drives a real headless browser for webgres' tests.

Debian's chromium and chromium-driver, driven by selenium; nothing is ever
downloaded: the driver is named explicitly, so selenium-manager never runs
(and SE_MANAGER_PATH points it at a program that fails, should it try).

As a module:

    with serve_pages({"/index.html": html}) as origin, chromium() as driver:
        driver.get(origin + "/index.html")
        result = run_async(driver, "arguments[0](42);")

As a program, for TAP tests (test/t/BrowserTest.pm):

    $WEBGRES_PYTHON browser.py --page-port 8123 --page page.html --script check.js

serves page.html as http://127.0.0.1:8123/index.html, opens it, runs
check.js as an asynchronous script (it ends by calling
arguments[arguments.length - 1] with a JSON-able result) and prints that
result as JSON.  Exit status 2 and a message on stderr if anything fails.
"""
import argparse
import contextlib
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

# Any attempt to run selenium-manager fails at once instead of downloading.
os.environ["SE_MANAGER_PATH"] = "/bin/false"


@contextlib.contextmanager
def serve_pages(pages, host="127.0.0.1", port=0):
    """Serves pages ({path: html text}) over HTTP; yields the origin."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = pages.get(self.path.split("?")[0])
            if body is None:
                self.send_error(404)
                return
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer((host, port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "http://%s:%d" % (host, server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def chromium(timeout=60):
    """A headless Chromium under chromedriver, with a profile of its own."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="webgres-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run",
                "--no-default-browser-check", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--user-data-dir=" + profile):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        driver.set_page_load_timeout(timeout)
        driver.set_script_timeout(timeout)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def run_async(driver, script):
    """Runs script asynchronously in the page; returns what it passes to its callback."""
    return driver.execute_async_script(script)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--page-port", type=int, required=True)
    parser.add_argument("--page", required=True, help="HTML file served as /index.html")
    parser.add_argument("--script", required=True, help="asynchronous script run in the page")
    parser.add_argument("--timeout", type=int, default=60)
    args = parser.parse_args()
    with open(args.page) as f:
        page = f.read()
    with open(args.script) as f:
        script = f.read()
    try:
        with serve_pages({"/index.html": page}, port=args.page_port) as origin, \
                chromium(args.timeout) as driver:
            driver.get(origin + "/index.html")
            result = run_async(driver, script)
    except Exception as err:  # the TAP test shows why
        print("browser: %s: %s" % (type(err).__name__, err), file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
