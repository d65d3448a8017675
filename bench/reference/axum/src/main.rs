//! axum-pg: the Rust app-server reference for webgres, built the way
//! TechEmpower's axum + tokio-postgres entry is: one single-threaded tokio
//! runtime per core, each with its own SO_REUSEPORT listener and its own
//! Postgres connection holding prepared statements; the queries of one
//! request are pipelined on that connection (each its own Bind/Execute/Sync,
//! never merged), and /updates writes its rows in one batched UPDATE.
//!
//!   PORT=8082 THREADS=2 PGHOST=/socket/dir PGPORT=5432 axum-pg
//!
//! THREADS defaults to the number of cores. PGUSER, PGPASSWORD and
//! PGDATABASE default to TechEmpower's benchmarkdbuser/benchmarkdbpass and
//! hello_world. Endpoints: /plaintext /json /db /queries?queries=N
//! /fortunes /updates?queries=N /cached-queries?count=N.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::future::try_join_all;
use serde::Serialize;
use tokio_postgres::{Client, NoTls, Statement};

/// TechEmpower's clamp of the query count: 1..=500.
const MAX_QUERIES: usize = 500;
/// World ids run from 1 to this.
const WORLD_ROWS: i32 = 10_000;
const SERVER_NAME: HeaderValue = HeaderValue::from_static("axum");

#[derive(Serialize, Clone, Copy)]
struct World {
    id: i32,
    #[serde(rename = "randomNumber")]
    random_number: i32,
}

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

/// One runtime's connection and its prepared statements, plus the process's cache.
struct Db {
    client: Client,
    world: Statement,
    fortune: Statement,
    update: Statement,
    cache: Arc<quick_cache::sync::Cache<i32, World>>,
}

type AppState = Arc<Db>;

/// A response with the headers every TechEmpower test checks (Date comes from hyper).
fn respond(content_type: &'static str, body: impl Into<axum::body::Body>) -> Response {
    let mut r = Response::new(body.into());
    let h = r.headers_mut();
    h.insert(header::SERVER, SERVER_NAME);
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn json<T: Serialize>(value: &T) -> Response {
    respond("application/json", serde_json::to_vec(value).expect("serialisable"))
}

fn fail(err: tokio_postgres::Error) -> Response {
    eprintln!("axum-pg: {err}");
    (StatusCode::INTERNAL_SERVER_ERROR, [(header::SERVER, SERVER_NAME)], "Internal Server Error").into_response()
}

fn random_id() -> i32 {
    fastrand::i32(1..=WORLD_ROWS)
}

/// The count of the first `queries=` or `count=` parameter, clamped as TechEmpower says.
fn count(raw: Option<String>) -> usize {
    let raw = raw.unwrap_or_default();
    let value = raw
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "queries" || *k == "count")
        .map(|(_, v)| v)
        .unwrap_or("");
    value.parse::<usize>().unwrap_or(1).clamp(1, MAX_QUERIES)
}

async fn world(db: &Db, id: i32) -> Result<World, tokio_postgres::Error> {
    let row = db.client.query_one(&db.world, &[&id]).await?;
    Ok(World { id: row.get(0), random_number: row.get(1) })
}

/// n worlds, each read by its own query; the queries are pipelined on the connection.
async fn worlds(db: &Db, n: usize) -> Result<Vec<World>, tokio_postgres::Error> {
    try_join_all((0..n).map(|_| world(db, random_id()))).await
}

async fn plaintext() -> Response {
    respond("text/plain", "Hello, World!")
}

async fn json_handler() -> Response {
    json(&Message { message: "Hello, World!" })
}

async fn db_handler(State(db): State<AppState>) -> Response {
    match world(&db, random_id()).await {
        Ok(w) => json(&w),
        Err(e) => fail(e),
    }
}

async fn queries(State(db): State<AppState>, RawQuery(q): RawQuery) -> Response {
    match worlds(&db, count(q)).await {
        Ok(ws) => json(&ws),
        Err(e) => fail(e),
    }
}

/// HTML-escapes s onto out.
fn escape(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
}

async fn fortunes(State(db): State<AppState>) -> Response {
    let rows = match db.client.query(&db.fortune, &[]).await {
        Ok(rows) => rows,
        Err(e) => return fail(e),
    };
    let mut list: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    list.push((0, "Additional fortune added at request time.".to_owned()));
    // byte order of UTF-8 is code-point order, which TechEmpower's page assumes
    list.sort_by(|a, b| a.1.cmp(&b.1));
    let mut html = String::with_capacity(2048);
    html.push_str("<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr>");
    for (id, message) in &list {
        html.push_str("<tr><td>");
        html.push_str(&id.to_string());
        html.push_str("</td><td>");
        escape(&mut html, message);
        html.push_str("</td></tr>");
    }
    html.push_str("</table></body></html>");
    respond("text/html; charset=utf-8", html)
}

async fn updates(State(db): State<AppState>, RawQuery(q): RawQuery) -> Response {
    let mut ws = match worlds(&db, count(q)).await {
        Ok(ws) => ws,
        Err(e) => return fail(e),
    };
    for w in ws.iter_mut() {
        w.random_number = random_id();
    }
    // one write per distinct id, in id order: concurrent updates lock rows
    // in one order and cannot deadlock
    let mut rows: Vec<(i32, i32)> = ws.iter().map(|w| (w.id, w.random_number)).collect();
    rows.sort_by_key(|r| r.0);
    rows.dedup_by_key(|r| r.0);
    let ids: Vec<i32> = rows.iter().map(|r| r.0).collect();
    let numbers: Vec<i32> = rows.iter().map(|r| r.1).collect();
    // a repeated id answers the number written last for it
    for w in ws.iter_mut() {
        let i = ids.binary_search(&w.id).expect("id present");
        w.random_number = numbers[i];
    }
    match db.client.execute(&db.update, &[&ids, &numbers]).await {
        Ok(_) => json(&ws),
        Err(e) => fail(e),
    }
}

async fn cached_queries(State(db): State<AppState>, RawQuery(q): RawQuery) -> Response {
    let n = count(q);
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let id = random_id();
        // read-through: a miss loads the row and keeps it
        match db.cache.get_or_insert_async(&id, world(&db, id)).await {
            Ok(w) => out.push(w),
            Err(e) => return fail(e),
        }
    }
    json(&out)
}

async fn connect() -> Result<Client, tokio_postgres::Error> {
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_owned());
    let mut cfg = tokio_postgres::Config::new();
    cfg.host(&env("PGHOST", "/var/run/postgresql"))
        .port(env("PGPORT", "5432").parse().expect("PGPORT is a port number"))
        .user(&env("PGUSER", "benchmarkdbuser"))
        .password(env("PGPASSWORD", "benchmarkdbpass"))
        .dbname(&env("PGDATABASE", "hello_world"));
    let (client, conn) = cfg.connect(NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            eprintln!("axum-pg: connection lost: {e}");
            std::process::exit(1);
        }
    });
    Ok(client)
}

/// One core's server: its runtime, listener and connection.
fn serve(addr: SocketAddr, cache: Arc<quick_cache::sync::Cache<i32, World>>, fill: bool) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async move {
        let client = connect().await.expect("connect to Postgres");
        let world = client.prepare("SELECT id, randomnumber FROM world WHERE id = $1").await.expect("prepare");
        let fortune = client.prepare("SELECT id, message FROM fortune").await.expect("prepare");
        let update = client
            .prepare(
                "UPDATE world SET randomnumber = v.r \
                 FROM unnest($1::int[], $2::int[]) AS v(id, r) WHERE world.id = v.id",
            )
            .await
            .expect("prepare");
        if fill {
            for row in client.query("SELECT id, randomnumber FROM world", &[]).await.expect("fill the cache") {
                let w = World { id: row.get(0), random_number: row.get(1) };
                cache.insert(w.id, w);
            }
        }
        let db = Arc::new(Db { client, world, fortune, update, cache });
        let app = Router::new()
            .route("/plaintext", get(plaintext))
            .route("/json", get(json_handler))
            .route("/db", get(db_handler))
            .route("/queries", get(queries))
            .route("/fortunes", get(fortunes))
            .route("/updates", get(updates))
            .route("/cached-queries", get(cached_queries))
            .with_state(db);
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
        sock.set_reuse_address(true).expect("SO_REUSEADDR");
        sock.set_reuse_port(true).expect("SO_REUSEPORT");
        sock.set_nodelay(true).expect("TCP_NODELAY");
        sock.set_nonblocking(true).expect("non-blocking");
        sock.bind(&addr.into()).expect("bind");
        sock.listen(4096).expect("listen");
        let listener = tokio::net::TcpListener::from_std(sock.into()).expect("listener");
        axum::serve(listener, app).await.expect("serve");
    });
}

fn main() {
    let port: u16 = std::env::var("PORT").unwrap_or_else(|_| "8082".into()).parse().expect("PORT is a port number");
    let threads = std::env::var("THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let cache = Arc::new(quick_cache::sync::Cache::new(WORLD_ROWS as usize));
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let cache = cache.clone();
            std::thread::spawn(move || serve(addr, cache, i == 0))
        })
        .collect();
    for h in handles {
        if h.join().is_err() {
            std::process::exit(1);
        }
    }
}
