"""Load on the board (examples/board): many signed-in users holding event
streams while others post items at a steady rate; measures the time from a
write being sent to its delivery on every stream, and the write rate held.

    python3 bench/board_load.py --url https://localhost:8443 \
        --streams 300 --rates 20,100,300 --duration 15 --out results.json

Each rate is a step: writers post public items at that total rate (spread
over --writers sessions), every stream receives each item as an event, and
the delivery latency is the receipt time minus the time the POST was
sent: the write, its commit and NOTIFY, and the event's way to each
stream.  All clients run in this one process with asyncio,
over TLS, HTTP/1.1.
"""
import argparse
import asyncio
import json
import ssl
import statistics
import sys
import time
import uuid
from urllib.parse import urlparse

CTX = ssl.create_default_context()
CTX.check_hostname = False
CTX.verify_mode = ssl.CERT_NONE


class Conn:
    """One keep-alive HTTP/1.1 connection over TLS."""

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def open(self):
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port, ssl=CTX,
                                                                 server_hostname="localhost")

    async def request(self, method, path, body=None, headers=None):
        """Sends a request, reads the answer; returns (status, headers, body)."""
        data = json.dumps(body).encode() if body is not None else b""
        head = "%s %s HTTP/1.1\r\nHost: localhost:%d\r\n" % (method, path, self.port)
        for k, v in (headers or {}).items():
            head += "%s: %s\r\n" % (k, v)
        if body is not None:
            head += "Content-Type: application/json\r\n"
        head += "Content-Length: %d\r\n\r\n" % len(data)
        self.writer.write(head.encode() + data)
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        hdrs = {}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            k, _, v = line.decode().partition(":")
            hdrs.setdefault(k.strip().lower(), []).append(v.strip())
        n = int(hdrs.get("content-length", ["0"])[0])
        payload = await self.reader.readexactly(n) if n else b""
        return status, hdrs, payload


async def session(host, port, name, origin):
    """Signs a user up; returns (Conn, cookie header value)."""
    c = Conn(host, port)
    await c.open()
    status, hdrs, _ = await c.request("POST", "/api/signup", {"name": name, "password": "load-test-pass"},
                                      {"Origin": origin})
    if status != 201:
        raise RuntimeError("sign-up of %s answered %d" % (name, status))
    cookie = hdrs["set-cookie"][0].split(";")[0]
    return c, cookie


async def stream(host, port, cookie, received, ready):
    """Holds one event stream; records (item title, receipt time) per upsert event."""
    reader, writer = await asyncio.open_connection(host, port, ssl=CTX, server_hostname="localhost")
    writer.write(("GET /api/events HTTP/1.1\r\nHost: localhost:%d\r\nCookie: %s\r\n"
                  "Accept: text/event-stream\r\n\r\n" % (port, cookie)).encode())
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    ready.set_result(True) if not ready.done() else None
    buf = b""
    try:
        while True:
            # The stream is chunked: decode chunks, then split events at blank lines.
            size_line = await reader.readline()
            if not size_line:
                return
            size = int(size_line.strip() or b"0", 16)
            if size == 0:
                return
            buf += await reader.readexactly(size)
            await reader.readexactly(2)
            while b"\n\n" in buf:
                block, buf = buf.split(b"\n\n", 1)
                fields = dict(line.split(": ", 1) for line in block.decode(errors="replace").split("\n")
                              if ": " in line and not line.startswith(":"))
                if fields.get("event") == "upsert" and "data" in fields:
                    received.append((json.loads(fields["data"]).get("title", ""), time.monotonic()))
    finally:
        writer.close()


async def writer_loop(conn, cookie, origin, rate, duration, sent, errors):
    """Posts items at `rate` per second for `duration` seconds; records when each was sent."""
    interval = 1.0 / rate
    start = time.monotonic()
    n = 0
    while True:
        due = start + n * interval
        now = time.monotonic()
        if due - start >= duration:
            return
        if due > now:
            await asyncio.sleep(due - now)
        title = "load-" + uuid.uuid4().hex
        began = time.monotonic()
        status, _, _ = await conn.request("POST", "/api/items", {"title": title},
                                          {"Cookie": cookie, "Origin": origin})
        if status == 201:
            sent[title] = began
        else:
            errors.append(status)
        n += 1


async def main_async(args):
    u = urlparse(args.url)
    host, port = u.hostname, u.port or 443
    origin = "%s://%s" % (u.scheme, u.netloc)
    tag = uuid.uuid4().hex[:6]
    readers = []
    for i in range(args.users):
        readers.append(await session(host, port, "r%d_%s" % (i, tag), origin))
    writers = [await session(host, port, "w%d_%s" % (i, tag), origin) for i in range(args.writers)]
    received = []
    tasks, readies = [], []
    for i in range(args.streams):
        ready = asyncio.get_running_loop().create_future()
        readies.append(ready)
        tasks.append(asyncio.create_task(stream(host, port, readers[i % len(readers)][1], received, ready)))
    await asyncio.wait_for(asyncio.gather(*readies), 60)
    steps = []
    for rate in args.rates:
        received.clear()
        sent, errors = {}, []
        t0 = time.monotonic()
        await asyncio.gather(*[writer_loop(c, ck, origin, rate / len(writers), args.duration, sent, errors)
                               for c, ck in writers])
        elapsed = time.monotonic() - t0
        await asyncio.sleep(2.0)   # the last deliveries
        lat = [(t - sent[title]) * 1000 for title, t in received if title in sent]
        expected = len(sent) * args.streams
        lat.sort()
        q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else None  # noqa: E731
        steps.append({"target_rate": rate, "writes": len(sent), "write_errors": len(errors),
                      "write_rate": len(sent) / elapsed, "deliveries": len(lat), "expected": expected,
                      "p50_ms": q(0.50), "p99_ms": q(0.99), "max_ms": lat[-1] if lat else None,
                      "median_ms": statistics.median(lat) if lat else None})
        print(json.dumps(steps[-1]), flush=True)
    for t in tasks:
        t.cancel()
    return {"streams": args.streams, "users": args.users, "writers": args.writers,
            "duration_s": args.duration, "steps": steps}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", required=True)
    p.add_argument("--streams", type=int, default=300)
    p.add_argument("--users", type=int, default=20, help="accounts the streams are spread over")
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--rates", default="20,100,300", help="total writes per second, one step each")
    p.add_argument("--duration", type=float, default=15)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    args.rates = [float(r) for r in args.rates.split(",")]
    res = asyncio.run(main_async(args))
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
