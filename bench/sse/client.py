#!/usr/bin/env python3
"""Event-stream bench client: N subscribers on one channel, NOTIFY-to-delivery latency.

    client.py PORT PATH N EVENTS OUT.json -- NOTIFY-COMMAND...

Opens N connections to http://127.0.0.1:PORT/PATH (an event-stream route),
waits until every one has its response head, then runs NOTIFY-COMMAND (which
must send EVENTS notifications whose payload is the send time in
microseconds since the epoch, from the server's clock_timestamp()) and reads
every stream until each has EVENTS events or 30 s pass.  Latency is receive
time minus the payload's send time, for every (subscriber, event) pair.
Raw sockets and one epoll loop: the client's own cost per event is a recv()
and a search for "data: ".  Writes a JSON summary to OUT.json.
"""
import json
import selectors
import socket
import subprocess
import sys
import time


def percentile(sorted_vals, p):
    if not sorted_vals:
        return None
    k = min(len(sorted_vals) - 1, int(round(p / 100.0 * (len(sorted_vals) - 1))))
    return sorted_vals[k]


def main():
    port, path, n, events, out = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    cmd = sys.argv[sys.argv.index('--') + 1:]
    sel = selectors.DefaultSelector()
    req = ('GET %s HTTP/1.1\r\nHost: bench\r\n\r\n' % path).encode()
    conns = []
    t0 = time.time()
    for i in range(n):
        s = socket.create_connection(('127.0.0.1', port))
        s.sendall(req)
        s.setblocking(False)
        c = {'sock': s, 'buf': b'', 'head': False, 'got': 0}
        conns.append(c)
        sel.register(s, selectors.EVENT_READ, c)
    latencies = []
    heads = 0
    deadline = time.time() + 60
    while heads < n and time.time() < deadline:
        for key, _ in sel.select(0.5):
            c = key.data
            data = c['sock'].recv(65536)
            if not data:
                sel.unregister(c['sock'])
                continue
            c['buf'] += data
            if not c['head'] and b'\r\n\r\n' in c['buf']:
                c['head'] = True
                c['buf'] = c['buf'].split(b'\r\n\r\n', 1)[1]
                heads += 1
    subscribed_s = time.time() - t0
    if heads < n:
        print('only %d of %d streams opened' % (heads, n), file=sys.stderr)
    with open(out + '.subscribed', 'w') as f:
        f.write('%d\n' % heads)
    notifier = subprocess.Popen(cmd)
    done = 0
    deadline = time.time() + 30 + events * 0.2
    while done < heads and time.time() < deadline:
        for key, _ in sel.select(0.5):
            c = key.data
            try:
                data = c['sock'].recv(65536)
            except OSError:
                data = b''
            now_us = time.time() * 1e6
            if not data:
                sel.unregister(c['sock'])
                continue
            buf = c['buf'] + data
            start = 0
            while True:
                i = buf.find(b'data: ', start)
                if i < 0:
                    break
                j = buf.find(b'\n', i)
                if j < 0:
                    break
                latencies.append((now_us - int(buf[i + 6:j])) / 1000.0)
                c['got'] += 1
                if c['got'] == events:
                    done += 1
                start = j + 1
            c['buf'] = buf[start:]
    notifier.wait()
    latencies.sort()
    summary = {
        'subscribers': n, 'opened': heads, 'events': events,
        'delivered': len(latencies), 'expected': heads * events,
        'subscribe_s': round(subscribed_s, 2),
        'p50_ms': percentile(latencies, 50), 'p99_ms': percentile(latencies, 99),
        'max_ms': latencies[-1] if latencies else None,
    }
    for c in conns:
        c['sock'].close()
    with open(out, 'w') as f:
        json.dump(summary, f)
    print(json.dumps(summary))


if __name__ == '__main__':
    main()
