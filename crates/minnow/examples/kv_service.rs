//! A tiny key-value service on tokio, backed by minnow through [`minnow::AsyncDatabase`].
//!
//! It listens on a localhost TCP port and speaks a line protocol:
//!
//! ```text
//! PUT <key> <value>   ->  OK                      (key: u64; value: text without spaces)
//! GET <key>           ->  VALUE <value> | NONE
//! SCAN <from> <n>     ->  ROW <key> <value> ... then END   (at most n rows, keys >= from)
//! QUIT                ->  the server closes the connection
//! anything else       ->  ERR <message>
//! ```
//!
//! To run to completion by itself (in CI), the program starts the server, then drives it
//! with concurrent clients that write keys, read them back and scan ranges, checks every
//! answer, prints the throughput, shuts the server down and closes the database:
//!
//! ```text
//! cargo run -p minnow --example kv_service --features tokio
//! ```
//!
//! Every connection is one async task; none of them ever blocks a worker thread on the
//! engine, because every `AsyncDatabase` call runs on tokio's blocking pool.

use std::ops::Bound;
use std::time::Instant;

use minnow::{AsyncDatabase, ColumnDef, ColumnType, Config, Error, Scan, TableDef, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const CLIENTS: u64 = 8;
const KEYS_PER_CLIENT: u64 = 100;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let dir = tempfile::tempdir()?;
    let db = AsyncDatabase::create(dir.path(), Config::default()).await?;
    db.create_table(
        TableDef::new("kv")
            .column(ColumnDef::new("k", ColumnType::U64))
            .column(ColumnDef::new("v", ColumnType::Var(64)))
            .primary_key(&["k"]),
    )
    .await?;

    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let server = tokio::spawn(serve(listener, db.clone(), stop_rx));
    println!("kv_service listening on {addr}");

    let start = Instant::now();
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        clients.push(tokio::spawn(client(addr, c)));
    }
    let mut requests = 0;
    for c in clients {
        requests += c.await??;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{CLIENTS} clients, {requests} requests in {secs:.2} s: {:.0} requests/s",
        requests as f64 / secs
    );

    stop_tx.send(true)?;
    server.await??;
    let report = db.check().await?;
    println!("check: {} rows in table kv", report.rows["kv"]);
    if report.rows["kv"] != CLIENTS * KEYS_PER_CLIENT {
        return Err("wrong row count".into());
    }
    db.close().await?;
    println!("closed cleanly");
    Ok(())
}

/// Accepts connections until told to stop, then waits for the open ones to finish.
async fn serve(
    listener: TcpListener,
    db: AsyncDatabase,
    mut stop: watch::Receiver<bool>,
) -> Result<(), BoxError> {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (socket, _) = accepted?;
                conns.spawn(connection(socket, db.clone()));
            }
            _ = stop.changed() => break,
        }
    }
    while let Some(done) = conns.join_next().await {
        done??;
    }
    Ok(())
}

/// One client connection: a request per line, answered in order.
async fn connection(socket: TcpStream, db: AsyncDatabase) -> Result<(), BoxError> {
    let (read, mut write) = socket.into_split();
    let mut lines = BufReader::new(read).lines();
    while let Some(line) = lines.next_line().await? {
        let words: Vec<&str> = line.split_whitespace().collect();
        let reply = match words.as_slice() {
            ["QUIT"] => break,
            ["PUT", k, v] => put(&db, k, v).await,
            ["GET", k] => get(&db, k).await,
            ["SCAN", from, n] => scan(&db, from, n).await,
            _ => Ok(format!("ERR unknown request `{line}`\n")),
        };
        let reply = reply.unwrap_or_else(|e| format!("ERR {e}\n"));
        write.write_all(reply.as_bytes()).await?;
    }
    Ok(())
}

fn parse_u64(s: &str) -> Result<u64, BoxError> {
    s.parse()
        .map_err(|_| format!("`{s}` is not a number").into())
}

/// Insert, or update when the key exists (two autocommit statements, each atomic; a
/// concurrent PUT of the same key may win between them).
async fn put(db: &AsyncDatabase, k: &str, v: &str) -> Result<String, BoxError> {
    let row = vec![Value::UInt(parse_u64(k)?), Value::text(v)];
    match db.insert("kv", row.clone()).await {
        Err(Error::DuplicateKey { .. }) => db.update("kv", row).await?,
        other => other?,
    };
    Ok("OK\n".into())
}

async fn get(db: &AsyncDatabase, k: &str) -> Result<String, BoxError> {
    Ok(
        match db.get("kv", vec![Value::UInt(parse_u64(k)?)]).await? {
            Some(row) => format!("VALUE {}\n", show(&row[1])),
            None => "NONE\n".into(),
        },
    )
}

/// Streams the rows into the reply: the scan never holds more than a few batches.
async fn scan(db: &AsyncDatabase, from: &str, n: &str) -> Result<String, BoxError> {
    let range = Scan::range(
        Bound::Included(vec![Value::UInt(parse_u64(from)?)]),
        Bound::Unbounded,
    )
    .limit(usize::try_from(parse_u64(n)?)?);
    let mut rows = db.scan("kv", range).await?;
    let mut reply = String::new();
    while let Some(row) = rows.next().await {
        let row = row?;
        reply.push_str(&format!("ROW {} {}\n", show(&row[0]), show(&row[1])));
    }
    reply.push_str("END\n");
    Ok(reply)
}

fn show(v: &Value) -> String {
    match v {
        Value::UInt(n) => n.to_string(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        other => format!("{other:?}"),
    }
}

/// A client's end of a connection.
struct Conn {
    lines: tokio::io::Lines<BufReader<tokio::net::tcp::OwnedReadHalf>>,
    write: tokio::net::tcp::OwnedWriteHalf,
}

impl Conn {
    /// Sends a request and reads the first line of its answer.
    async fn ask(&mut self, req: String) -> Result<String, BoxError> {
        self.write.write_all(req.as_bytes()).await?;
        self.line().await
    }

    async fn line(&mut self) -> Result<String, BoxError> {
        self.lines
            .next_line()
            .await?
            .ok_or_else(|| "server hung up".into())
    }
}

/// One client: PUT its keys, GET each back, SCAN its range; checks every answer and
/// returns how many requests it made.
async fn client(addr: std::net::SocketAddr, c: u64) -> Result<u64, BoxError> {
    let (read, write) = TcpStream::connect(addr).await?.into_split();
    let mut conn = Conn {
        lines: BufReader::new(read).lines(),
        write,
    };
    let keys = c * KEYS_PER_CLIENT..(c + 1) * KEYS_PER_CLIENT;
    let mut requests = 0;
    for k in keys.clone() {
        expect(conn.ask(format!("PUT {k} value-{k}\n")).await?, "OK")?;
        requests += 1;
    }
    for k in keys.clone() {
        let want = format!("VALUE value-{k}");
        expect(conn.ask(format!("GET {k}\n")).await?, &want)?;
        requests += 1;
    }
    expect(conn.ask(format!("GET {}\n", u64::MAX)).await?, "NONE")?;
    expect(
        conn.ask("FROB\n".into()).await?,
        "ERR unknown request `FROB`",
    )?;
    requests += 2;
    // The scan's answer is one line per row, then END.
    let first = conn
        .ask(format!("SCAN {} {KEYS_PER_CLIENT}\n", keys.start))
        .await?;
    expect(first, &format!("ROW {0} value-{0}", keys.start))?;
    for k in keys.start + 1..keys.end {
        expect(conn.line().await?, &format!("ROW {k} value-{k}"))?;
    }
    expect(conn.line().await?, "END")?;
    requests += 1;
    conn.write.write_all(b"QUIT\n").await?;
    Ok(requests)
}

fn expect(got: String, want: &str) -> Result<(), BoxError> {
    if got == want {
        Ok(())
    } else {
        Err(format!("expected `{want}`, got `{got}`").into())
    }
}
