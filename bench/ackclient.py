#!/usr/bin/env python3
"""ackclient.py: the durability probe of the soak tier.

Sends GET /bench/ack/<id> to webgres over one keep-alive connection, with a
new id for every attempt (ids are never reused, because an insert whose
answer was lost may still have committed). The route inserts the id into
table bench_ack and answers 200 only after its transaction committed. Every
id that got a 200 is written to ACKED, one per line. Connection failures
(restarts, crashes) are retried every 20 ms; the client stops when STOPFILE
exists or after MAX_SECONDS.

    ackclient.py PORT ACKED STOPFILE [MAX_SECONDS]

At the end it prints a JSON summary: attempts, acknowledged, statuses,
connection errors.
"""
import http.client
import json
import os
import sys
import time


def main():
    port = int(sys.argv[1])
    acked_path, stopfile = sys.argv[2], sys.argv[3]
    max_seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 600.0
    deadline = time.monotonic() + max_seconds
    statuses, conn_errors, attempts, acked = {}, 0, 0, 0
    conn = None
    next_id = 1
    with open(acked_path, "w") as out:
        while time.monotonic() < deadline and not os.path.exists(stopfile):
            ident = next_id
            next_id += 1
            attempts += 1
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/bench/ack/%d" % ident,
                             headers={"Connection": "keep-alive"})
                resp = conn.getresponse()
                resp.read()
                statuses[str(resp.status)] = statuses.get(str(resp.status), 0) + 1
                if resp.status == 200:
                    out.write("%d\n" % ident)
                    out.flush()
                    acked += 1
                if resp.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException):
                conn_errors += 1
                if conn is not None:
                    conn.close()
                conn = None
                time.sleep(0.02)
    print(json.dumps({"attempts": attempts, "acknowledged": acked,
                      "statuses": statuses, "connection_errors": conn_errors}))


if __name__ == "__main__":
    main()
