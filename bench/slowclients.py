#!/usr/bin/env python3
"""Clients that loop on a slow route, for the bench's mixed tier.

    slowclients.py N SECONDS URL

Starts N clients; each sends a GET, waits for the whole response (up to
TIMEOUT seconds), and sends the next, until SECONDS have passed.  Prints one
JSON line: how many responses were answered (2xx), refused (503), other
statuses, errors (timeouts, resets), and how many were still pending when
the time was up.
"""
import http.client
import json
import sys
import threading
import time
from urllib.parse import urlsplit

TIMEOUT = 60


def main():
    n, seconds, url = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    parts = urlsplit(url)
    path = parts.path + ('?' + parts.query if parts.query else '')
    stop_at = time.monotonic() + seconds
    lock = threading.Lock()
    counts = {'clients': n, 'answered': 0, 'refused': 0, 'other': 0, 'errors': 0, 'pending': 0}

    def count(key):
        with lock:
            counts[key] += 1

    def client():
        conn = None
        while time.monotonic() < stop_at:
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=TIMEOUT)
                conn.request('GET', path)
                status = conn.getresponse()
                status.read()
                if 200 <= status.status < 300:
                    count('answered')
                elif status.status == 503:
                    count('refused')
                else:
                    count('other')
            except Exception:
                count('errors')
                if conn is not None:
                    conn.close()
                conn = None
                time.sleep(0.1)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    time.sleep(max(0.0, stop_at - time.monotonic()))
    # A client in the middle of a request when the time is up is pending.
    deadline = time.monotonic() + 0.5
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    counts['pending'] = sum(1 for t in threads if t.is_alive())
    print(json.dumps(counts), flush=True)
    sys.stdout.flush()


if __name__ == '__main__':
    main()
