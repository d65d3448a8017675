#!/usr/bin/env python3
"""tfb_verify.py: checks a server's TechEmpower endpoints as TechEmpower's
verifier does (../shared/tfb/REQUIREMENTS.md §2), so that a reference is
measured only once it answers what the rules require.

    python3 bench/tfb_verify.py http://127.0.0.1:PORT

Checks, for /plaintext /json /db /queries /fortunes /updates
/cached-queries: status 200, the Server, Date (within 3 s of now),
Content-Type and Content-Length headers, and the body: the exact text, the
JSON shapes and the query cases (2, 0, foo, 501, empty: 2, 1, 1, 500, 1
objects), and the fortunes page as the verifier compares it (tags, and
text with its character references resolved, whitespace between tags
dropped). Prints one line per problem and exits 1 if any; prints "ok" and
exits 0 otherwise. Python 3 standard library only.
"""
import email.utils
import html.parser
import json
import sys
import time
import urllib.request

ACCEPT_JSON = "application/json,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7"
ACCEPT_HTML = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
ACCEPT_PLAIN = "text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7"
# the verifier's query cases: (value, expected length)
QUERY_CASES = [("2", 2), ("0", 1), ("foo", 1), ("501", 500), ("", 1)]
MAX_DATE_SKEW_S = 3
FORTUNES = (
    "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr>"
    "<tr><td>11</td><td>&lt;script&gt;alert(&quot;This should not be displayed in a browser alert box.&quot;);"
    "&lt;/script&gt;</td></tr>"
    "<tr><td>4</td><td>A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1</td></tr>"
    "<tr><td>5</td><td>A computer program does what you tell it to do, not what you want it to do.</td></tr>"
    "<tr><td>2</td><td>A computer scientist is someone who fixes things that aren&#39;t broken.</td></tr>"
    "<tr><td>8</td><td>A list is only as strong as its weakest link. — Donald Knuth</td></tr>"
    "<tr><td>0</td><td>Additional fortune added at request time.</td></tr>"
    "<tr><td>3</td><td>After enough decimal places, nobody gives a damn.</td></tr>"
    "<tr><td>7</td><td>Any program that runs right is obsolete.</td></tr>"
    "<tr><td>10</td><td>Computers make very fast, very accurate mistakes.</td></tr>"
    "<tr><td>6</td><td>Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen</td></tr>"
    "<tr><td>9</td><td>Feature: A bug with seniority.</td></tr>"
    "<tr><td>1</td><td>fortune: No such file or directory</td></tr>"
    "<tr><td>12</td><td>フレームワークのベンチマーク</td></tr></table></body></html>")

problems = []


class Normal(html.parser.HTMLParser):
    """A page as the verifier compares it: tags lower-cased without their
    attributes, text with its references resolved, whitespace-only text dropped."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []

    def handle_decl(self, decl):
        self.parts.append("<!%s>" % decl.lower())

    def handle_starttag(self, tag, attrs):
        self.parts.append("<%s>" % tag)

    def handle_endtag(self, tag):
        self.parts.append("</%s>" % tag)

    def handle_data(self, data):
        if data.strip():
            self.parts.append(data)


def normal(page):
    p = Normal()
    p.feed(page)
    p.close()
    return p.parts


def get(base, path, accept):
    req = urllib.request.Request(base + path, headers={"Accept": accept, "Host": "tfb-server"})
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def check_headers(path, status, headers, body, content_type):
    if status != 200:
        problems.append("%s: status %d" % (path, status))
    for h in ("Server", "Date", "Content-Type"):
        if headers.get(h) is None:
            problems.append("%s: no %s header" % (path, h))
    # a charset parameter is allowed (the verifier checks the media type),
    # but where the rules name one (fortunes) it must be there
    got = headers.get("Content-Type", "").lower().replace(" ", "")
    want = content_type.replace(" ", "")
    if got != want and (";" in want or got.split(";")[0] != want):
        problems.append("%s: Content-Type %r, not %r" % (path, headers.get("Content-Type"), content_type))
    if headers.get("Content-Length") != str(len(body)) and headers.get("Transfer-Encoding") != "chunked":
        problems.append("%s: Content-Length %r for %d bytes" % (path, headers.get("Content-Length"), len(body)))
    date = headers.get("Date")
    if date:
        skew = abs(email.utils.parsedate_to_datetime(date).timestamp() - time.time())
        if skew > MAX_DATE_SKEW_S:
            problems.append("%s: Date %r is %.0f s off" % (path, date, skew))


def check_world(path, w):
    keys = {k.lower(): v for k, v in w.items()} if isinstance(w, dict) else {}
    if set(keys) != {"id", "randomnumber"}:
        problems.append("%s: object %r is not {id, randomNumber}" % (path, w))
        return
    try:
        i, n = int(keys["id"]), int(keys["randomnumber"])
    except (TypeError, ValueError):
        problems.append("%s: %r does not hold integers" % (path, w))
        return
    if not (1 <= i <= 10000 and 1 <= n <= 10000):
        problems.append("%s: %r out of 1..10000" % (path, w))


def check_json(base, path, accept=ACCEPT_JSON):
    status, headers, body = get(base, path, accept)
    check_headers(path, status, headers, body, "application/json")
    try:
        return json.loads(body)
    except ValueError:
        problems.append("%s: body is not JSON: %r" % (path, body[:80]))
        return None


def main(base):
    status, headers, body = get(base, "/plaintext", ACCEPT_PLAIN)
    check_headers("/plaintext", status, headers, body, "text/plain")
    if body != b"Hello, World!":
        problems.append("/plaintext: body %r" % body[:80])
    if check_json(base, "/json") != {"message": "Hello, World!"}:
        problems.append("/json: not {\"message\": \"Hello, World!\"}")
    w = check_json(base, "/db")
    if w is not None:
        check_world("/db", w)
    for route, param in (("/queries", "queries"), ("/updates", "queries"), ("/cached-queries", "count")):
        for value, length in QUERY_CASES:
            path = "%s?%s=%s" % (route, param, value)
            arr = check_json(base, path)
            if not isinstance(arr, list) or len(arr) != length:
                problems.append("%s: not an array of %d" % (path, length))
                continue
            for w in arr[:5]:
                check_world(path, w)
    status, headers, body = get(base, "/fortunes", ACCEPT_HTML)
    check_headers("/fortunes", status, headers, body, "text/html; charset=utf-8")
    page = body.decode("utf-8", "replace")
    if normal(page) != normal(FORTUNES):
        problems.append("/fortunes: the page differs from TechEmpower's: %r" % page[:200])
    for p in problems:
        print(p)
    if not problems:
        print("ok")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1].rstrip("/")))
