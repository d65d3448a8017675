'use strict';
// node-pg: the conventional app-server reference for webgres. Plain Node.js
// `http` plus the `pg` driver, talking to the same Postgres over its Unix
// socket, serving the seven TechEmpower endpoints by TechEmpower's rules:
// one query per World row (pipelined by the pool, never merged), no ORDER BY
// on Fortune, a new randomNumber per updated row with one bulk UPDATE, and a
// read-through cache for /cached-queries.
//
//   node server.js            (settings from the environment)
//   PORT=8081 WORKERS=2 PGHOST=/path/to/socketdir PGPORT=5432 POOL=32
//
// WORKERS processes (cluster module) share the port; each has its own pool
// of POOL connections (as benchmarkdbuser to hello_world unless PGUSER /
// PGDATABASE say otherwise).

const cluster = require('node:cluster');
const http = require('node:http');
const os = require('node:os');

const PORT = Number(process.env.PORT || 8081);
const WORKERS = Number(process.env.WORKERS || os.availableParallelism());
const POOL = Number(process.env.POOL || 32);

if (cluster.isPrimary) {
  for (let i = 0; i < WORKERS; i++) cluster.fork();
  let stopping = false;
  cluster.on('exit', (w, code, signal) => {
    if (!stopping && !process.exitCode) {
      console.error(`node-pg: worker ${w.process.pid} died (${signal || code}); stopping`);
      process.exitCode = 1;
      for (const id in cluster.workers) cluster.workers[id].kill();
    }
  });
  const stop = () => {
    stopping = true;
    for (const id in cluster.workers) cluster.workers[id].kill();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  return;
}

const { Pool } = require('pg');
const pool = new Pool({
  host: process.env.PGHOST,
  port: Number(process.env.PGPORT || 5432),
  user: process.env.PGUSER || 'benchmarkdbuser',
  password: process.env.PGPASSWORD || 'benchmarkdbpass',
  database: process.env.PGDATABASE || 'hello_world',
  max: POOL,
});
// A restarted or crashed server breaks idle connections: the pool drops them.
pool.on('error', (err) => console.error(`node-pg: idle connection: ${err.message}`));

const randomId = () => 1 + Math.floor(Math.random() * 10000);
const clamp = (q) => {
  const n = Number.parseInt(q, 10);
  if (!Number.isFinite(n) || n < 1) return 1;
  return n > 500 ? 500 : n;
};

const worldQuery = (id) => pool.query({
  name: 'world', text: 'SELECT id, randomnumber FROM world WHERE id = $1', values: [id],
}).then((r) => ({ id: r.rows[0].id, randomNumber: r.rows[0].randomnumber }));

// A small read-through cache with expiry: entries load themselves on a miss.
class Cache {
  constructor(load, ttlMs) { this.load = load; this.ttl = ttlMs; this.map = new Map(); }
  async get(key) {
    const e = this.map.get(key);
    if (e && e.expires > Date.now()) return e.value;
    const value = await this.load(key);
    this.map.set(key, { value, expires: Date.now() + this.ttl });
    return value;
  }
  fill(entries) {
    const expires = Date.now() + this.ttl;
    for (const [k, v] of entries) this.map.set(k, { value: v, expires });
  }
}
const worldCache = new Cache(worldQuery, 3600 * 1000);
const cacheReady = pool.query('SELECT id, randomnumber FROM world').then((r) =>
  worldCache.fill(r.rows.map((w) => [w.id, { id: w.id, randomNumber: w.randomnumber }])));

const escapes = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (s) => s.replace(/[&<>"']/g, (c) => escapes[c]);
const byMessage = (a, b) => (a.message < b.message ? -1 : a.message > b.message ? 1 : 0);

function send(res, status, type, body) {
  res.writeHead(status, {
    Server: 'node-pg',
    'Content-Type': type,
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}
const json = (res, obj) => send(res, 200, 'application/json', JSON.stringify(obj));

const routes = {
  '/plaintext': (req, res) => send(res, 200, 'text/plain', 'Hello, World!'),
  '/json': (req, res) => json(res, { message: 'Hello, World!' }),
  '/db': async (req, res) => json(res, await worldQuery(randomId())),
  '/queries': async (req, res, q) => {
    const n = clamp(q.get('queries'));
    const reads = [];
    for (let i = 0; i < n; i++) reads.push(worldQuery(randomId()));
    json(res, await Promise.all(reads));
  },
  '/fortunes': async (req, res) => {
    const r = await pool.query({ name: 'fortune', text: 'SELECT id, message FROM fortune' });
    const rows = r.rows.slice();
    rows.push({ id: 0, message: 'Additional fortune added at request time.' });
    rows.sort(byMessage);
    let html = '<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>'
      + '<tr><th>id</th><th>message</th></tr>';
    for (const f of rows) html += `<tr><td>${f.id}</td><td>${escapeHtml(f.message)}</td></tr>`;
    html += '</table></body></html>';
    send(res, 200, 'text/html; charset=utf-8', html);
  },
  '/updates': async (req, res, q) => {
    const n = clamp(q.get('queries'));
    const reads = [];
    for (let i = 0; i < n; i++) reads.push(worldQuery(randomId()));
    const worlds = await Promise.all(reads);
    const byId = new Map();
    for (const w of worlds) { w.randomNumber = randomId(); byId.set(w.id, w.randomNumber); }
    const ids = [...byId.keys()].sort((a, b) => a - b);   // one lock order: no deadlocks
    const values = [];
    let cases = '';
    ids.forEach((id, i) => { cases += ` WHEN $${2 * i + 1} THEN $${2 * i + 2}`; values.push(id, byId.get(id)); });
    const list = ids.map((_, i) => `$${2 * i + 1}`).join(', ');
    await pool.query({
      name: `update${ids.length}`,
      text: `UPDATE world SET randomnumber = CASE id${cases} ELSE randomnumber END WHERE id IN (${list})`,
      values,
    });
    json(res, worlds);
  },
  '/cached-queries': async (req, res, q) => {
    await cacheReady;
    const n = clamp(q.get('count'));
    const out = [];
    for (let i = 0; i < n; i++) out.push(await worldCache.get(randomId()));
    json(res, out);
  },
};

const server = http.createServer((req, res) => {
  const qmark = req.url.indexOf('?');
  const path = qmark < 0 ? req.url : req.url.slice(0, qmark);
  const route = req.method === 'GET' ? routes[path] : undefined;
  if (!route) return send(res, 404, 'text/plain', 'Not Found');
  const q = new URLSearchParams(qmark < 0 ? '' : req.url.slice(qmark + 1));
  Promise.resolve(route(req, res, q)).catch((err) => {
    if (!res.headersSent) send(res, 500, 'text/plain', 'Internal Server Error');
    console.error(`node-pg: ${path}: ${err.message}`);
  });
});
server.keepAliveTimeout = 65000;
server.listen(PORT, '127.0.0.1');
