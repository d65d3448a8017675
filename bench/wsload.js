'use strict';
// WebSocket load generator of the bench's websocket tier (bench/websocket.sh),
// built on the `ws` package that bench/reference/node-ws installs.  One
// coordinating process forks PROCS client processes, each holding its share
// of the sockets; they report to it over IPC.  Sockets are spread over the
// loopback source addresses 127.0.0.2, .3, ... (SOCKETS_PER_ADDR each), so
// that 20,000 of them never run out of ephemeral ports.  Every wait has a
// deadline; the result is one JSON line on stdout.
//
//   node wsload.js echo   URL SOCKETS DURATION_S PROCS KIND
//       each socket sends a message, waits for its reply, repeats, for
//       DURATION_S; KIND echo (a text that must come back unchanged) or
//       select (a random id 1..10000 whose world row must come back).
//       Prints messages, rate a second, reply latency p50/p99, errors.
//   node wsload.js fanout URL SOCKETS NOTIFIES PROCS CHANNEL
//       opens SOCKETS on a route listening on CHANNEL, then NOTIFIES times:
//       notifies CHANNEL (pg_notify, over PGHOST/PGPORT) with its send time
//       as the payload and waits until every socket has it; per NOTIFY, the
//       time until the LAST socket received it.  Prints p50/p99/max.
//   node wsload.js idle   URL SOCKETS IDLE_TIMEOUT_MS PROCS SILENT
//       opens SOCKETS that answer pings (ws does) and SILENT that do not,
//       reads the webgres workers' memory (VmRSS, Pss from /proc) before and
//       after; then sets webgres.websocket_idle_timeout to IDLE_TIMEOUT_MS
//       and the ping interval to 2/5 of it (ALTER SYSTEM, reload: opening
//       thousands of sockets takes longer than a short timeout, and the
//       sockets opened first would be pinged while the client is busy
//       opening the rest), holds them three timeouts and until every open
//       answering socket was pinged twice, then restarts the workers
//       (pg_terminate_backend: the supervisor starts new ones) and counts
//       the close codes each socket got.
//
// Times are process.hrtime (CLOCK_MONOTONIC), the same clock in every
// process of the machine, so a child's receive time and the coordinator's
// send time subtract.

const { fork } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const NODE_WS = path.join(__dirname, 'reference', 'node-ws', 'node_modules');
const WebSocket = require(path.join(NODE_WS, 'ws'));

const SOCKETS_PER_ADDR = 5000;
const OPEN_AT_ONCE = 256;          // handshakes in flight per process
const OPEN_TIMEOUT_MS = 120000;    // for every socket of a process to open
const FANOUT_TIMEOUT_MS = 10000;   // for one NOTIFY to reach every socket
const now = () => process.hrtime.bigint();
const ms = (ns) => Number(ns) / 1e6;

function quantile(sorted, q) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

// ---- child: holds its sockets, does what the coordinator asks ----

function child(url, count, first, silent) {
  const socks = [];
  const closes = {};
  let opened = 0; let failed = 0; let started = 0;
  const pings = [];
  const send = (m) => process.send(m);

  function openOne() {
    const i = started++;
    const local = `127.0.0.${2 + Math.floor((first + i) / SOCKETS_PER_ADDR)}`;
    const ws = new WebSocket(url, {
      localAddress: local, perMessageDeflate: false, autoPong: !(i < silent),
      skipUTF8Validation: true, handshakeTimeout: OPEN_TIMEOUT_MS,
    });
    ws.idx = i;
    pings[i] = 0;
    socks[i] = ws;
    ws.on('open', () => {
      opened++;
      if (started < count) openOne();
      if (opened + failed === count) send({ t: 'ready', opened, failed });
    });
    ws.on('ping', () => { pings[i]++; });
    ws.on('error', () => {});
    ws.on('close', (code) => {
      if (ws.wasOpen) {
        closes[code] = (closes[code] || 0) + 1;
        if (i < silent) closes[`silent_${code}`] = (closes[`silent_${code}`] || 0) + 1;
      } else {
        failed++;
        if (started < count) openOne();
        if (opened + failed === count) send({ t: 'ready', opened, failed });
      }
    });
    ws.once('open', () => { ws.wasOpen = true; });
  }
  for (let k = 0; k < Math.min(OPEN_AT_ONCE, count); k++) openOne();

  // fan-out: per NOTIFY sequence number, how many sockets have it and the last time
  const fan = new Map();
  function onFanMessage(data) {
    const t = now();
    const s = data.toString();
    const seq = s.slice(0, s.indexOf(':'));
    let e = fan.get(seq);
    if (!e) { e = { n: 0, first: t, last: 0n }; fan.set(seq, e); }
    e.n++;
    if (t > e.last) e.last = t;
    if (e.n === opened) {
      send({ t: 'fan', seq, first: e.first.toString(), last: e.last.toString(), n: e.n });
      fan.delete(seq);
    }
  }

  process.on('message', (m) => {
    if (m.t === 'fanout') {
      for (const ws of socks) ws.on('message', onFanMessage);
      send({ t: 'listening' });
    } else if (m.t === 'fan-report') {
      // a NOTIFY timed out: how many of this process's sockets it reached
      const e = fan.get(m.seq);
      send({ t: 'fan', seq: m.seq, first: e ? e.first.toString() : '0', last: e ? e.last.toString() : '0', n: e ? e.n : 0 });
      fan.delete(m.seq);
    } else if (m.t === 'echo') {
      runEcho(socks.filter((w) => w.readyState === WebSocket.OPEN), m.ms, m.kind);
    } else if (m.t === 'pings') {
      let min = Infinity; let open = 0;
      for (const ws of socks) {
        if (ws.idx < silent || ws.readyState !== WebSocket.OPEN) continue;
        open++;
        min = Math.min(min, pings[ws.idx]);
      }
      send({ t: 'pings', min: min === Infinity ? 0 : min, open });
    } else if (m.t === 'ping-all') {
      for (const ws of socks) if (ws.readyState === WebSocket.OPEN) ws.ping();
      send({ t: 'ping-all' });
    } else if (m.t === 'reset-pings') {
      pings.fill(0);
      send({ t: 'reset-pings' });
    } else if (m.t === 'closes') {
      // open: not closed yet (a socket whose close came is CLOSING until its 'close')
      send({ t: 'closes', closes, open: socks.filter((w) => w.readyState !== WebSocket.CLOSED).length });
    } else if (m.t === 'exit') {
      for (const ws of socks) ws.terminate();
      process.exit(0);
    }
  });

  function runEcho(open, durMs, kind) {
    const lat = [];
    let messages = 0; let errors = 0; let active = open.length;
    const end = now() + BigInt(durMs) * 1000000n;
    const finish = () => {
      if (--active > 0) return;
      lat.sort((a, b) => a - b);
      send({ t: 'echo', messages, errors, lat: lat.filter((_, k) => k % 10 === 0) });
    };
    for (const ws of open) {
      let sent; let expect;
      const next = () => {
        if (now() >= end) { finish(); return; }
        if (kind === 'select') {
          expect = 1 + Math.floor(Math.random() * 10000);
          sent = now();
          ws.send(String(expect));
        } else {
          expect = `hello webgres ${ws.idx} ${messages}`;
          sent = now();
          ws.send(expect);
        }
      };
      ws.on('message', (data) => {
        lat.push(ms(now() - sent));
        const s = data.toString();
        let ok;
        if (kind === 'select') {
          try { ok = JSON.parse(s).id === expect; } catch (e) { ok = false; }
        } else ok = s === expect;
        if (ok) messages++; else errors++;
        next();
      });
      ws.on('close', () => { errors++; });
      next();
    }
  }
}

// ---- coordinator ----

function spawn(url, sockets, procs, silent) {
  const kids = [];
  let first = 0;
  for (let p = 0; p < procs; p++) {
    const n = Math.floor(sockets / procs) + (p < sockets % procs ? 1 : 0);
    const s = Math.floor(silent / procs) + (p < silent % procs ? 1 : 0);
    const k = fork(__filename, ['child', url, String(n + s), String(first), String(s)]);
    first += n + s;
    k.inbox = [];
    k.waiters = [];
    k.on('message', (m) => {
      const w = k.waiters.findIndex((x) => x.match(m));
      if (w >= 0) k.waiters.splice(w, 1)[0].resolve(m); else k.inbox.push(m);
    });
    kids.push(k);
  }
  return kids;
}

// The next message of type t (and sequence number seq, if given) from kid
// k, or null after timeoutMs.
function recv(k, t, timeoutMs, seq) {
  const match = (m) => m.t === t && (seq === undefined || m.seq === seq);
  const i = k.inbox.findIndex(match);
  if (i >= 0) return Promise.resolve(k.inbox.splice(i, 1)[0]);
  return new Promise((resolve) => {
    const w = { match, resolve };
    const timer = setTimeout(() => {
      k.waiters.splice(k.waiters.indexOf(w), 1);
      resolve(null);
    }, timeoutMs);
    w.resolve = (m) => { clearTimeout(timer); resolve(m); };
    k.waiters.push(w);
  });
}
const all = (kids, t, timeoutMs, seq) => Promise.all(kids.map((k) => recv(k, t, timeoutMs, seq)));
// Asks every kid for a report of type t and waits for them.
function ask(kids, t, timeoutMs) {
  const replies = all(kids, t, timeoutMs);
  kids.forEach((k) => k.send({ t }));
  return replies;
}

async function ready(kids) {
  const t0 = now();
  const r = await all(kids, 'ready', OPEN_TIMEOUT_MS);
  const opened = r.reduce((a, m) => a + (m ? m.opened : 0), 0);
  const failed = r.reduce((a, m) => a + (m ? m.failed : 0), 0);
  return { opened, failed, open_s: ms(now() - t0) / 1000 };
}

function pgClient() {
  const { Client } = require(path.join(NODE_WS, 'pg'));
  return new Client({ host: process.env.PGHOST, port: Number(process.env.PGPORT),
    user: process.env.PGUSER || 'postgres', database: process.env.PGDATABASE || 'postgres' });
}

async function echo(url, sockets, durS, procs, kind) {
  const kids = spawn(url, sockets, procs, 0);
  const r = await ready(kids);
  kids.forEach((k) => k.send({ t: 'echo', ms: durS * 1000, kind }));
  const res = await all(kids, 'echo', durS * 1000 + 30000);
  const messages = res.reduce((a, m) => a + (m ? m.messages : 0), 0);
  const errors = res.reduce((a, m) => a + (m ? m.errors : 1), 0);
  const lat = [].concat(...res.map((m) => (m ? m.lat : []))).sort((a, b) => a - b);
  kids.forEach((k) => k.send({ t: 'exit' }));
  return { sockets, opened: r.opened, failed: r.failed, seconds: durS, messages, errors,
    rate: messages / durS, p50_ms: quantile(lat, 0.5), p99_ms: quantile(lat, 0.99) };
}

async function fanout(url, sockets, notifies, procs, channel) {
  const kids = spawn(url, sockets, procs, 0);
  const r = await ready(kids);
  const pg = pgClient();
  await pg.connect();
  kids.forEach((k) => k.send({ t: 'fanout' }));
  await all(kids, 'listening', 10000);
  const times = []; const firsts = []; let missed = 0; let partial = 0;
  // CPU time of the webgres workers and of the client processes over the
  // NOTIFYs: which side a NOTIFY's fan-out costs most
  const workers = (await pg.query(
    "SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres worker'")).rows.map((x) => x.pid);
  const cpu0 = { server: cpuTicks(workers), client: cpuTicks(kids.map((k) => k.pid)) };
  // The first NOTIFY is a warm-up (every LISTEN in effect), not counted.
  for (let i = 0; i <= notifies; i++) {
    const seq = String(i);
    const sent = now();
    await pg.query('SELECT pg_notify($1, $2)', [channel, `${seq}:${sent}`]);
    let rep = await all(kids, 'fan', FANOUT_TIMEOUT_MS, seq);
    if (rep.some((m) => m === null)) {
      kids.forEach((k, j) => { if (rep[j] === null) k.send({ t: 'fan-report', seq }); });
      const late = await all(kids.filter((_, j) => rep[j] === null), 'fan', 5000, seq);
      let j = 0;
      rep = rep.map((m) => m || late[j++]);
      partial++;
    }
    const got = rep.reduce((a, m) => a + (m ? m.n : 0), 0);
    if (i === 0) continue;
    if (got < r.opened) missed += r.opened - got;
    const last = rep.reduce((a, m) => (m && BigInt(m.last) > a ? BigInt(m.last) : a), 0n);
    times.push(ms(last - sent));
    const first = rep.reduce((a, m) => (m && m.first !== '0' && (a === 0n || BigInt(m.first) < a) ? BigInt(m.first) : a), 0n);
    firsts.push(ms(first - sent));
  }
  const cpu = { server: cpuTicks(workers) - cpu0.server, client: cpuTicks(kids.map((k) => k.pid)) - cpu0.client };
  await pg.end();
  kids.forEach((k) => k.send({ t: 'exit' }));
  times.sort((a, b) => a - b);
  return { sockets, opened: r.opened, failed: r.failed, open_s: r.open_s, notifies,
    deliveries_missed: missed, notifies_not_everywhere: partial,
    p50_ms: quantile(times, 0.5), p99_ms: quantile(times, 0.99), max_ms: times[times.length - 1],
    first_p50_ms: quantile(firsts.sort((a, b) => a - b), 0.5),
    workers_cpu_ms_per_notify: (cpu.server * 1000) / CLK_TCK / notifies,
    client_cpu_ms_per_notify: (cpu.client * 1000) / CLK_TCK / notifies };
}

// utime + stime of the processes, in clock ticks
const CLK_TCK = 100;
function cpuTicks(pids) {
  let t = 0;
  for (const pid of pids) {
    try {
      const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
      t += Number(f[11]) + Number(f[12]);
    } catch (e) { /* gone */ }
  }
  return t;
}

// Sum over the webgres workers of VmRSS and Pss, kB.
function workerMemory(pids) {
  let rss = 0; let pss = 0;
  for (const pid of pids) {
    const st = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    rss += Number(/VmRSS:\s+(\d+)/.exec(st)[1]);
    const sm = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    pss += Number(/^Pss:\s+(\d+)/m.exec(sm)[1]);
  }
  return { rss_kb: rss, pss_kb: pss };
}

async function idle(url, sockets, idleTimeoutMs, procs, silent) {
  const holdMs = 3 * idleTimeoutMs;
  const pg = pgClient();
  await pg.connect();
  const pidsOf = async () => (await pg.query(
    "SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres worker'")).rows.map((x) => x.pid);
  const pids = await pidsOf();
  const before = workerMemory(pids);
  const kids = spawn(url, sockets, procs, silent);
  const r = await ready(kids);
  const after = workerMemory(pids);
  // A setting takes effect on silence already past: every socket first
  // sends a ping (a frame, so life), so that none starts the hold silent.
  await ask(kids, 'ping-all', 10000);
  await pg.query(`ALTER SYSTEM SET webgres.websocket_idle_timeout = '${idleTimeoutMs}ms'`);
  await pg.query(`ALTER SYSTEM SET webgres.websocket_ping_interval = '${Math.floor(idleTimeoutMs * 2 / 5)}ms'`);
  await pg.query('SELECT pg_reload_conf()');
  await ask(kids, 'reset-pings', 10000);
  const t0 = now();
  // Held for holdMs and until every answering socket was pinged twice.
  let p;
  for (;;) {
    p = await ask(kids, 'pings', 10000);
    const minPings = Math.min(...p.map((m) => (m ? m.min : 0)));
    if (ms(now() - t0) >= holdMs && minPings >= 2) break;
    if (ms(now() - t0) >= holdMs * 4) break;
    await new Promise((res) => setTimeout(res, 250));
  }
  const heldMs = ms(now() - t0);
  const minPings = Math.min(...p.map((m) => (m ? m.min : 0)));
  const openAfterHold = p.reduce((a, m) => a + (m ? m.open : 0), 0);
  const held = await ask(kids, 'closes', 10000);
  const heldCloses = {};
  for (const m of held) for (const [c, n] of Object.entries(m ? m.closes : {})) heldCloses[c] = (heldCloses[c] || 0) + n;
  // The restart: every worker terminated; the supervisor starts new ones.
  const tr = now();
  await pg.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'webgres worker'");
  let c;
  for (;;) {
    c = await ask(kids, 'closes', 10000);
    if (c.every((m) => m && m.open === 0) || ms(now() - tr) > 30000) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  const closedInMs = ms(now() - tr);
  const closes = {};
  for (const m of c) for (const [code, n] of Object.entries(m ? m.closes : {})) closes[code] = (closes[code] || 0) + n;
  for (const [code, n] of Object.entries(heldCloses)) closes[code] -= n;
  await pg.query('ALTER SYSTEM RESET webgres.websocket_idle_timeout');
  await pg.query('ALTER SYSTEM RESET webgres.websocket_ping_interval');
  await pg.query('SELECT pg_reload_conf()');
  await pg.end();
  kids.forEach((k) => k.send({ t: 'exit' }));
  return { sockets, silent, idle_timeout_ms: idleTimeoutMs, opened: r.opened, failed: r.failed, open_s: r.open_s, workers: pids.length,
    memory_before: before, memory_open: after,
    rss_kb_per_socket: (after.rss_kb - before.rss_kb) / r.opened,
    pss_kb_per_socket: (after.pss_kb - before.pss_kb) / r.opened,
    held_ms: heldMs, min_pings_per_socket: minPings, answering_open_after_hold: openAfterHold,
    closes_during_hold: heldCloses, closes_on_restart: closes, restart_closed_all_ms: closedInMs };
}

async function main() {
  const [mode, url, a, b, c, d] = process.argv.slice(2);
  if (mode === 'child') { child(url, Number(a), Number(b), Number(c)); return; }
  let r;
  if (mode === 'echo') r = await echo(url, Number(a), Number(b), Number(c), d || 'echo');
  else if (mode === 'fanout') r = await fanout(url, Number(a), Number(b), Number(c), d);
  else if (mode === 'idle') r = await idle(url, Number(a), Number(b), Number(c), Number(d || 0));
  else { console.error('usage: see the head of bench/wsload.js'); process.exit(2); }
  console.log(JSON.stringify(r));
  setTimeout(() => process.exit(0), 500);
}
main().catch((e) => { console.error(e); process.exit(1); });
