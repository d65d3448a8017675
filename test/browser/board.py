"""The board (examples/board) in a real headless browser, end to end.

    $WEBGRES_PYTHON board.py --url https://localhost:8443 --cert cert.pem --out DIR

Two browser sessions (two profiles, so two cookie jars) sign up as two
users; one adds a public and a private item; the other sees the public one
appear without reloading and never sees the private one.  Files attached
to items upload with a progress bar and read back byte for byte from the
other session, a private item's file only by its author.  Then: the page
came over HTTP/2, its static files come back 304 on reload, the export
downloads as CSV with the expected rows, a forged request from another
origin carrying the session cookie is refused.  Presence, over each page's
own WebSocket: each session sees both names in "looking now", bob typing in
his item's title shows "bob is typing..." on that item in alice's page, his
saved title reaches her; when he goes to another page, and when his tab
closes, he leaves her list.  Then logging out shows the login page, and
the consoles hold no errors.  A screenshot of each step goes to DIR.
Prints one line per check ("ok - ..." or "not ok - ..."); exits 1 if any
failed, 2 if the run itself broke.
"""
import argparse
import contextlib
import csv
import http.server
import io
import json
import os
import shutil
import ssl
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import CHROMEDRIVER, CHROMIUM  # noqa: E402  (also keeps selenium-manager off)

# Generous bound for page loads and every wait on a loaded machine: a
# check waits for its condition, never for time to pass.  How long a live
# update took is printed in its check's name, not asserted (a shared CI
# machine can be slow at any moment; docs/testing.md).
WAIT_S = 30.0
# How many checks run() makes; fewer means the scenario broke off.
CHECKS = 27

results = []


def check(ok, name):
    """Records and prints one check."""
    results.append(bool(ok))
    print(("ok - " if ok else "not ok - ") + name, flush=True)
    return ok


@contextlib.contextmanager
def browser(downloads):
    """A headless Chromium with its own profile, console and network logs kept."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="webgres-board-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1000,900",
                # The demo's certificate is self-signed for localhost.
                "--ignore-certificate-errors",
                "--user-data-dir=" + profile):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    options.add_experimental_option("prefs", {"download.default_directory": downloads,
                                              "download.prompt_for_download": False})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        driver.set_page_load_timeout(WAIT_S)
        driver.set_script_timeout(WAIT_S)
        driver.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_for(cond, timeout=WAIT_S, step=0.05):
    """Polls cond() until it is true or timeout seconds pass; returns its last value."""
    deadline = time.monotonic() + timeout
    value = cond()
    while not value and time.monotonic() < deadline:
        time.sleep(step)
        value = cond()
    return value


def shot(driver, out, name):
    """Saves a screenshot of the page as DIR/NN-name.png."""
    shot.n += 1
    driver.save_screenshot(os.path.join(out, "%02d-%s.png" % (shot.n, name)))


shot.n = 0


def visible(driver, element_id):
    """Whether an element is shown (not hidden)."""
    return driver.execute_script("const e = document.getElementById(arguments[0]);"
                                 "return !!e && !e.hidden;", element_id)


def item_titles(driver):
    """The titles on the board as the page shows them now."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#items .item h3')].map(e => e.textContent);")


def sign_up(driver, url, name, password):
    """Opens the board, checks the login page shows, and signs up."""
    driver.get(url + "/")
    wait_for(lambda: visible(driver, "login-view"))
    driver.find_element("id", "login-name").send_keys(name)
    driver.find_element("id", "login-password").send_keys(password)
    driver.find_element("id", "signup-button").click()
    return wait_for(lambda: visible(driver, "board-view") and
                    driver.execute_script("return document.getElementById('me').textContent") == name)


def add_item(driver, title, private, file=None):
    """Adds an item through the page's form, with a file to attach if given."""
    driver.find_element("id", "add-title").send_keys(title)
    if file is not None:
        driver.find_element("id", "add-file").send_keys(file)
    box = driver.find_element("id", "add-private")
    if box.is_selected() != private:
        box.click()
    driver.find_element("id", "add-button").click()


def attachment_link(driver, title):
    """The item's id and its attachment link's text, if the page shows one."""
    return driver.execute_script(
        "for (const li of document.querySelectorAll('#items .item')) {"
        "  if (li.querySelector('h3').textContent !== arguments[0]) continue;"
        "  const a = li.querySelector('a.attachment');"
        "  return a ? [li.dataset.id, a.textContent] : null; }"
        "return null;", title)


def fetch_file(driver, path):
    """GETs path in the session's page: [status, Content-Disposition, body as text]."""
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {credentials: 'same-origin'})"
        "  .then(r => r.text().then(t => done([r.status, r.headers.get('content-disposition'), t])))"
        "  .catch(e => done([0, null, String(e)]));", path)


def presence_names(driver):
    """The names the page shows as looking at the board now."""
    text = driver.execute_script("return document.getElementById('presence').textContent")
    prefix = "looking now: "
    return sorted(text[len(prefix):].split(", ")) if text.startswith(prefix) else []


def presence_socket(driver):
    """The page's presence WebSocket: [its URL, its readyState], or None."""
    return driver.execute_script(
        "return (typeof presence !== 'undefined' && presence instanceof WebSocket)"
        "  ? [presence.url, presence.readyState] : null;")


def item_part(driver, title, selector, prop="textContent"):
    """A property of an element inside the card of the item titled title."""
    return driver.execute_script(
        "for (const li of document.querySelectorAll('#items .item')) {"
        "  if (li.querySelector('h3').textContent !== arguments[0]) continue;"
        "  const e = li.querySelector(arguments[1]);"
        "  return e ? e[arguments[2]] : null; }"
        "return null;", title, selector, prop)


def severe_console(driver):
    """Console entries of level SEVERE (errors) since the last call."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


@contextlib.contextmanager
def other_origin(cert, key, page):
    """Serves page over HTTPS on another port of localhost: same site, other origin."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            data = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "https://localhost:%d" % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def run(args):
    """The whole scenario; checks are recorded in results."""
    url = args.url.rstrip("/")
    tag = uuid.uuid4().hex[:6]
    alice, bob = "alice_" + tag, "bob_" + tag
    public_title, private_title, marker_title = ("Public note " + tag, "Private note " + tag,
                                                 "Second public note " + tag)
    downloads = tempfile.mkdtemp(prefix="webgres-board-dl-")
    os.chmod(downloads, 0o777)
    with browser(downloads) as a, browser(downloads) as b:
        # A logged-out session gets the login page.
        a.get(url + "/")
        check(wait_for(lambda: visible(a, "login-view")), "a new session shows the login page")
        shot(a, args.out, "login")

        check(sign_up(a, url, alice, "correct horse 1"), "alice signs up and sees her board")
        check(sign_up(b, url, bob, "battery staple 2"), "bob signs up in another session")
        shot(b, args.out, "bob-empty-board")

        # HTTP/2 over TLS, as the browser negotiated it.
        proto = a.execute_script("return performance.getEntriesByType('navigation')[0].nextHopProtocol")
        check(proto == "h2", "the page came over HTTP/2 (nextHopProtocol %r)" % proto)

        # Alice adds a public item, then a private one, then another public
        # one: by the time bob sees the last, anything leaked would be there.
        # A mark left in bob's page shows it was never reloaded meanwhile.
        b.execute_script("window.webgresNotReloaded = true;")
        add_item(a, public_title, private=False)
        seen_at = time.monotonic()
        appeared = wait_for(lambda: public_title in item_titles(b), step=0.02)
        took = time.monotonic() - seen_at
        same_page = b.execute_script("return window.webgresNotReloaded === true;")
        check(appeared and same_page,
              "bob sees alice's public item without reloading (%.2f s after she added it)" % took)
        add_item(a, private_title, private=True)
        check(wait_for(lambda: private_title in item_titles(a)), "alice sees her private item")
        add_item(a, marker_title, private=False)
        check(wait_for(lambda: marker_title in item_titles(b)), "bob sees alice's second public item")
        check(private_title not in item_titles(b), "bob never sees alice's private item")
        shot(a, args.out, "alice-board")
        shot(b, args.out, "bob-board")
        after_reload_b = None
        b.refresh()
        wait_for(lambda: visible(b, "board-view") and marker_title in item_titles(b))
        after_reload_b = item_titles(b)
        check(private_title not in after_reload_b and public_title in after_reload_b,
              "after a reload bob's board holds the public items and not the private one")

        # Static files come back 304 on a reload: the browser revalidates
        # them with If-None-Match / If-Modified-Since.
        a.get_log("performance")
        a.refresh()
        seen = {"/app.js": [], "/style.css": []}

        def both_revalidated():
            for entry in a.get_log("performance"):
                msg = json.loads(entry["message"])["message"]
                if msg.get("method") == "Network.responseReceived":
                    res = msg["params"]["response"]
                    for suffix in seen:
                        if res["url"].split("?")[0].endswith(suffix):
                            seen[suffix].append(res["status"])
            return all(304 in v for v in seen.values())
        wait_for(both_revalidated)
        check(all(304 in v for v in seen.values()),
              "on reload app.js and style.css answer 304 (got %s)" % seen)

        # The export downloads and parses as CSV with alice's rows.
        for f in os.listdir(downloads):
            os.remove(os.path.join(downloads, f))
        a.find_element("id", "export").click()
        path = os.path.join(downloads, "board-items.csv")
        wait_for(lambda: os.path.exists(path) and os.path.getsize(path) > 0)
        rows = []
        if os.path.exists(path):
            with open(path, newline="") as f:
                rows = list(csv.DictReader(f))
        titles = sorted(r.get("title") for r in rows)
        check(titles == sorted([public_title, private_title, marker_title]),
              "the export downloads as CSV with alice's three items (%d rows)" % len(rows))
        check(all(set(r) >= {"id", "title", "body", "public", "created", "updated"} for r in rows) and
              {r["public"] for r in rows} == {"t", "f"},
              "the CSV has the columns and the public flag of each item")

        # No console errors in either session so far.
        errors = severe_console(a) + severe_console(b)
        check(not errors, "no console errors (%s)" % [e.get("message") for e in errors][:3])

        # Attachments: alice attaches a file to a new public item and to a
        # private one from the form, its upload showing progress; bob sees
        # the public one's file appear live and reads it back byte for
        # byte in his session; the private one's file is hers alone.
        attach_dir = tempfile.mkdtemp(prefix="webgres-board-files-")
        os.chmod(attach_dir, 0o755)
        content = "attached by %s\n%s" % (alice, "".join(chr(33 + i % 90) for i in range(300000)))
        files = {}
        for kind in ("public", "private"):
            files[kind] = os.path.join(attach_dir, "%s notes %s.txt" % (kind, tag))
            with open(files[kind], "w") as f:
                f.write(content + kind)
            os.chmod(files[kind], 0o644)
        file_title, secret_title = "With a file " + tag, "Private file " + tag
        add_item(a, file_title, private=False, file=files["public"])
        shown = wait_for(lambda: attachment_link(b, file_title))
        progress = a.execute_script("return document.getElementById('add-progress').value")
        link = attachment_link(b, file_title)
        check(shown and progress == 1 and link and link[1].startswith("public notes %s.txt" % tag),
              "bob sees the file alice attached appear live, her upload's progress at the end (%r, %r)"
              % (link, progress))
        got = fetch_file(b, "/api/items/%s/attachment" % link[0]) if link else [0, None, ""]
        check(got[0] == 200 and got[2] == content + "public" and
              got[1] == 'attachment; filename="public notes %s.txt"' % tag,
              "bob downloads it byte for byte, as an attachment with its name (%r, %r, %d bytes)"
              % (got[0], got[1], len(got[2])))
        add_item(a, secret_title, private=True, file=files["private"])
        wait_for(lambda: attachment_link(a, secret_title))
        secret = attachment_link(a, secret_title)
        mine = fetch_file(a, "/api/items/%s/attachment" % secret[0]) if secret else [0, None, ""]
        theirs = fetch_file(b, "/api/items/%s/attachment" % secret[0]) if secret else [0, None, ""]
        # Bob's console shows that 404, and nothing else may show there.
        expected = "/api/items/%s/attachment" % (secret[0] if secret else "?")
        others = [e.get("message") for e in severe_console(a) + severe_console(b)
                  if expected not in e.get("message", "")]
        check(mine[0] == 200 and mine[2] == content + "private" and theirs[0] == 404 and not others,
              "a private item's file: alice gets it, bob gets 404 (%r, %r; other console errors %s)"
              % (mine[0], theirs[0], others[:3]))
        shot(b, args.out, "bob-attachment")
        shutil.rmtree(attach_dir, ignore_errors=True)

        # A forged request: a page on another origin of the same site, so
        # that the browser sends alice's SameSite=Lax cookie with it.
        forged_title = "Forged " + tag
        page = """<!doctype html><title>elsewhere</title><script>
          window.forge = (done) => fetch(%s, {method: 'POST', credentials: 'include',
              headers: {'Content-Type': 'text/plain'}, body: JSON.stringify({title: %s})})
            .then(r => done('sent'), e => done('sent'));
        </script>""" % (json.dumps(url + "/api/items"), json.dumps(forged_title))
        # forge() returns once the response came back (refused or not), so
        # boards loaded afresh after it show whatever it created.
        with other_origin(args.cert, args.key, page) as evil:
            a.get(evil + "/")
            a.execute_async_script("window.forge(arguments[0]);")
        a.get(url + "/")
        b.refresh()
        loaded = all(wait_for(lambda d=d: visible(d, "board-view") and marker_title in item_titles(d))
                     for d in (a, b))
        check(loaded and forged_title not in item_titles(a) and forged_title not in item_titles(b),
              "a cross-site request carrying the session cookie created nothing")
        a.get_log("browser")  # the forged page's own CORS error is expected

        # Presence over a WebSocket: both pages (just loaded again above)
        # list both users, the list coming over each page's own socket.
        both = sorted([alice, bob])
        listed = all(wait_for(lambda d=d: presence_names(d) == both) for d in (a, b))
        sockets = [presence_socket(d) for d in (a, b)]
        check(listed and all(s and s[0] == url.replace("https://", "wss://") + "/api/presence" and s[1] == 1
                             for s in sockets),
              "alice and bob each see both looking now, over an open WebSocket (%r, %r; %r)"
              % (presence_names(a), presence_names(b), sockets))

        # Bob edits the title of an item of his; alice sees him typing in it.
        bob_title = "Bob's item " + tag
        add_item(b, bob_title, private=False)
        check(wait_for(lambda: bob_title in item_titles(a) and bob_title in item_titles(b)),
              "alice sees bob's new item")
        b.execute_script(
            "for (const li of document.querySelectorAll('#items .item'))"
            "  if (li.querySelector('h3').textContent === arguments[0]) li.querySelector('button.edit').click();",
            bob_title)
        wait_for(lambda: item_part(b, bob_title, ".edit-title", "value") is not None)
        field = b.find_element("css selector", "#items .edit-title")
        field.send_keys(" (edited)")
        typing = wait_for(lambda: item_part(a, bob_title, ".typing") == bob + " is typing\u2026")
        shot(a, args.out, "alice-sees-bob-typing")
        check(typing, "alice sees '%s is typing...' on the item bob is editing (%r)"
              % (bob, item_part(a, bob_title, ".typing")))
        field.send_keys("\n")
        check(wait_for(lambda: bob_title + " (edited)" in item_titles(a)),
              "bob saves the title from the card and alice sees it")

        # Bob goes to another page: Chromium keeps his board in its
        # back-forward cache, socket and all, unless the page closes it
        # when hidden; he is no longer looking, so he leaves alice's list.
        # Back again, he is in it again.
        b.get("about:blank")
        check(wait_for(lambda: presence_names(a) == [alice]),
              "when bob goes to another page he leaves alice's list (%r)" % presence_names(a))
        b.back()
        check(wait_for(lambda: presence_names(a) == both and presence_names(b) == both),
              "back on the board, he is in both lists again (%r, %r)" % (presence_names(a), presence_names(b)))

        # Bob's tab closes: he leaves alice's list.
        board_tab = b.current_window_handle
        b.switch_to.new_window("tab")
        blank_tab = b.current_window_handle
        b.switch_to.window(board_tab)
        b.close()
        b.switch_to.window(blank_tab)
        gone = wait_for(lambda: presence_names(a) == [alice])
        shot(a, args.out, "alice-alone")
        check(gone, "when bob's tab closes he leaves alice's list (%r)" % presence_names(a))

        # Logging out: the login page, and the session is gone.
        a.find_element("id", "logout").click()
        check(wait_for(lambda: visible(a, "login-view")), "logging out shows the login page")
        a.refresh()
        check(wait_for(lambda: visible(a, "login-view")), "and a reload still shows it")
        shot(a, args.out, "logged-out")
        errors = severe_console(a) + severe_console(b)
        check(not errors, "no console errors after logging out (%s)" % [e.get("message") for e in errors][:3])
    shutil.rmtree(downloads, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--cert", required=True, help="the server's certificate (PEM), for the other origin")
    parser.add_argument("--key", required=True, help="its key (PEM)")
    parser.add_argument("--out", required=True, help="directory for screenshots")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    try:
        run(args)
    except Exception as err:  # the TAP test shows why
        print("board: %s: %s" % (type(err).__name__, err), file=sys.stderr)
        return 2
    if len(results) != CHECKS:
        print("board: %d checks made, %d expected" % (len(results), CHECKS), file=sys.stderr)
        return 2
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
