#!/usr/bin/env python3
"""idleconns.py: memory an idle keep-alive connection costs the server.

    idleconns.py PORT N PID...

Opens N connections to 127.0.0.1:PORT, sends one GET /plaintext on each
and reads its response, so each is an ordinary idle keep-alive connection,
then reads the VmRSS of the given server processes and the kernel's TCP
socket buffer memory (/proc/net/sockstat) and slab (/proc/meminfo,
machine-wide, so approximate) before and after.  Prints one JSON
object.  Must run with an open file limit above N (bench/run.sh raises it).

Python 3 standard library only.
"""
import json
import os
import resource
import socket
import sys
import time

REQUEST = b"GET /plaintext HTTP/1.1\r\nHost: tfb-server\r\nConnection: keep-alive\r\n\r\n"


def rss_kib(pids):
    out = {}
    for p in pids:
        try:
            with open("/proc/%s/status" % p) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        out[p] = int(line.split()[1])
        except OSError:
            pass
    return out


def tcp_mem_pages():
    with open("/proc/net/sockstat") as f:
        for line in f:
            if line.startswith("TCP:"):
                parts = line.split()
                return int(parts[parts.index("mem") + 1])
    return 0


def slab_kib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Slab:"):
                return int(line.split()[1])
    return 0


def main(argv):
    port, n, pids = int(argv[1]), int(argv[2]), argv[3:]
    before, mem_before, slab_before = rss_kib(pids), tcp_mem_pages(), slab_kib()
    socks, failed = [], 0
    deadline = time.time() + 60
    for _ in range(n):
        if time.time() > deadline:
            break
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(REQUEST)
            got = b""
            while b"\r\n\r\n" not in got or not got.endswith(b"Hello, World!"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
            socks.append(s)
        except OSError:
            failed += 1
    time.sleep(0.5)
    after, mem_after, slab_after = rss_kib(pids), tcp_mem_pages(), slab_kib()
    common = sorted(set(before) & set(after))
    delta = sum(after[p] - before[p] for p in common)
    page = os.sysconf("SC_PAGE_SIZE")
    held = len(socks)
    print(json.dumps({
        "connections": held, "failed": failed,
        "nofile_soft": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
        "rss_before_kib": before, "rss_after_kib": after, "rss_delta_kib": delta,
        "server_bytes_per_connection": round(delta * 1024 / held) if held else None,
        "tcp_mem_pages_before": mem_before, "tcp_mem_pages_after": mem_after,
        "kernel_buffer_bytes_per_connection_both_ends": round((mem_after - mem_before) * page / held) if held else None,
        "slab_delta_kib": slab_after - slab_before,
        "kernel_slab_bytes_per_connection_both_ends": round((slab_after - slab_before) * 1024 / held) if held else None,
    }))
    for s in socks:
        s.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
