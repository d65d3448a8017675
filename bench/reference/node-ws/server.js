'use strict';
// node-ws: the conventional WebSocket reference for webgres' websocket tier.
// Node.js `ws` plus the `pg` driver, talking to the same Postgres over its
// Unix socket: each message a client sends runs one statement from a pool
// of connections and its one value goes back as a text message, as a
// webgres route's on_message handler does.
//
//   node server.js            (settings from the environment)
//   PORT=8082 WORKERS=4 PGHOST=/path/to/socketdir PGPORT=5432 POOL=16
//
// WORKERS processes (cluster module) share the port; each has its own pool
// of POOL connections (as postgres to the database postgres unless PGUSER /
// PGDATABASE say otherwise).  Paths (the statement each message runs, with
// the message as $1):
//   /echo     SELECT $1::text                       (the message back)
//   /select   a one-row read of world by primary key, as JSON text

const cluster = require('node:cluster');
const http = require('node:http');
const os = require('node:os');

const PORT = Number(process.env.PORT || 8082);
const WORKERS = Number(process.env.WORKERS || os.availableParallelism());
const POOL = Number(process.env.POOL || 16);

if (cluster.isPrimary) {
  for (let i = 0; i < WORKERS; i++) cluster.fork();
  let stopping = false;
  cluster.on('exit', (w, code, signal) => {
    if (!stopping && !process.exitCode) {
      console.error(`node-ws: worker ${w.process.pid} died (${signal || code}); stopping`);
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
const { WebSocketServer } = require('ws');

const pool = new Pool({
  host: process.env.PGHOST,
  port: Number(process.env.PGPORT || 5432),
  user: process.env.PGUSER || 'postgres',
  database: process.env.PGDATABASE || 'postgres',
  max: POOL,
  // Kept open between messages however long the socket is quiet: a pool
  // that closed idle connections would pay for new backends mid-run.
  idleTimeoutMillis: 0,
});
pool.on('error', (err) => console.error(`node-ws: idle connection: ${err.message}`));

// The statement of each path; prepared once per connection (named), as a
// conventional app does.  The same SQL as the webgres routes' on_message.
const statements = {
  '/echo': { name: 'echo', text: 'SELECT $1::text AS v' },
  '/select': {
    name: 'select',
    text: "SELECT json_build_object('id', id, 'randomNumber', randomnumber)::text AS v FROM world WHERE id = $1::int",
  },
};

const server = http.createServer((req, res) => {
  res.writeHead(req.url === '/health' ? 200 : 426, { 'Content-Type': 'text/plain' });
  res.end(req.url === '/health' ? 'ok' : 'upgrade required');
});
const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
server.on('upgrade', (req, socket, head) => {
  const stmt = statements[req.url];
  if (!stmt) {
    socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => {
    ws.on('message', (data, isBinary) => {
      pool.query({ name: stmt.name, text: stmt.text, values: [isBinary ? data : data.toString()] })
        .then((r) => { for (const row of r.rows) if (row.v !== null) ws.send(row.v); })
        .catch((err) => { console.error(`node-ws: ${err.message}`); ws.close(1011); });
    });
    ws.on('error', () => {});
  });
});
server.listen(PORT, '127.0.0.1');
