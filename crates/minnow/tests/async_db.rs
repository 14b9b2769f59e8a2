//! The async handle (feature `tokio`): concurrent tasks, streamed scans and their back
//! pressure, typed errors, both runtime flavours, close and drop.

use std::ops::Bound;

use minnow::inspect::Internals;
use minnow::{
    AsyncDatabase, ColumnDef, ColumnType, Config, Database, Error, IndexDef, Scan, TableDef, Value,
};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .build()
        .unwrap()
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

/// `t(id U64 PK, a U64, pad Var(100))`, index `by_a(a)`.
fn def() -> TableDef {
    TableDef::new("t")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("a", ColumnType::U64))
        .column(ColumnDef::new("pad", ColumnType::Var(100)))
        .primary_key(&["id"])
        .index(IndexDef::new("by_a", &["a"]))
}

fn row(id: u64) -> Vec<Value> {
    vec![
        Value::UInt(id),
        Value::UInt(id % 10),
        Value::Bytes(vec![b'x'; 80]),
    ]
}

/// A database with `n` rows in `t`.
async fn loaded(dir: &std::path::Path, n: u64) -> Result<AsyncDatabase, Error> {
    let db = AsyncDatabase::create(dir, Config::default()).await?;
    db.create_table(def()).await?;
    db.load("t", (0..n).map(row)).await?;
    Ok(db)
}

/// Page fixes so far (hits and misses): how much of the table a scan touched.
async fn fixes(db: &AsyncDatabase) -> Result<u64, Error> {
    db.run(|db| {
        let s = db.buffer_pool()?.stats();
        Ok(s.hits + s.misses)
    })
    .await
}

#[test]
fn many_concurrent_tasks_share_one_database() -> TestResult {
    const TASKS: u64 = 16;
    const PER_TASK: u64 = 40;
    let dir = tempfile::tempdir()?;
    multi_thread().block_on(async {
        let db = AsyncDatabase::create(dir.path(), Config::default()).await?;
        db.create_table(def()).await?;
        let mut tasks = tokio::task::JoinSet::new();
        for t in 0..TASKS {
            let db = db.clone();
            tasks.spawn(async move {
                for i in 0..PER_TASK {
                    let id = t * PER_TASK + i;
                    db.insert("t", row(id)).await?;
                    assert_eq!(db.get("t", vec![Value::UInt(id)]).await?, Some(row(id)));
                    if i % 10 == 0 {
                        // Scans run while other tasks write: each sees its own rows.
                        let mine = Scan::range(
                            Bound::Included(vec![Value::UInt(t * PER_TASK)]),
                            Bound::Included(vec![Value::UInt(id)]),
                        );
                        let rows = db.scan("t", mine).await?.collect().await?;
                        assert_eq!(rows.len() as u64, i + 1);
                    }
                }
                db.update(
                    "t",
                    vec![Value::UInt(t * PER_TASK), Value::UInt(99), Value::text("u")],
                )
                .await?;
                Ok::<_, Error>(())
            });
        }
        while let Some(done) = tasks.join_next().await {
            done??;
        }
        assert_eq!(db.in_flight(), 0);
        assert_eq!(db.check().await?.rows["t"], TASKS * PER_TASK);
        let updated = db
            .scan_index(
                "t",
                "by_a",
                Scan::range(
                    Bound::Included(vec![Value::UInt(99)]),
                    Bound::Included(vec![Value::UInt(99)]),
                )
                .columns(&["id"]),
            )
            .await?;
        assert!(updated.is_covering());
        assert_eq!(updated.collect().await?.len() as u64, TASKS);
        db.close().await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    let db = Database::open(dir.path(), Config::default())?;
    assert_eq!(db.check()?.rows["t"], TASKS * PER_TASK);
    Ok(())
}

#[test]
fn a_scan_streams_more_rows_than_its_channel_holds() -> TestResult {
    const N: u64 = 3000;
    let dir = tempfile::tempdir()?;
    multi_thread().block_on(async {
        // 16 rows a batch, 2 batches in the channel: the table is ~90 times that.
        let db = loaded(dir.path(), N).await?.with_stream_buffer(16, 2);
        let mut rows = db.scan("t", Scan::all().columns(&["id"])).await?;
        let mut next = 0;
        while let Some(r) = rows.next().await {
            assert_eq!(r?, [Value::UInt(next)]);
            next += 1;
        }
        assert_eq!(next, N);
        // A stream that has returned its last row no longer holds the database: only `db`
        // stands in the way of closing the clone.
        let clone = db.clone();
        assert!(matches!(
            clone.close().await,
            Err(Error::InUse { handles: 1 })
        ));
        // Batches as they come, in reverse.
        let mut rows = db.scan("t", Scan::all().reverse().columns(&["id"])).await?;
        let mut seen = 0u64;
        while let Some(batch) = rows.next_batch().await {
            let batch = batch?;
            assert!(batch.len() <= 16);
            for r in batch {
                seen += 1;
                assert_eq!(r, [Value::UInt(N - seen)]);
            }
        }
        assert_eq!(seen, N);
        drop(rows);
        db.close().await?;
        Ok(())
    })
}

#[test]
fn dropping_a_stream_half_way_stops_its_blocking_side() -> TestResult {
    const N: u64 = 3000;
    let dir = tempfile::tempdir()?;
    multi_thread().block_on(async {
        let db = loaded(dir.path(), N).await?.with_stream_buffer(16, 2);

        let before = fixes(&db).await?;
        let all = db.scan("t", Scan::all()).await?.collect().await?;
        assert_eq!(all.len() as u64, N);
        let full = fixes(&db).await? - before;

        let before = fixes(&db).await?;
        let mut rows = db.scan("t", Scan::all()).await?;
        for id in 0..N / 2 {
            assert_eq!(rows.next().await.unwrap()?, row(id));
        }
        drop(rows);
        // The blocking side notices at its next send and lets go of its slot.
        while db.in_flight() > 0 {
            tokio::task::yield_now().await;
        }
        let half = fixes(&db).await? - before;
        // It read what was consumed plus at most a few batches, not the rest of the table.
        assert!(
            half < full * 3 / 4,
            "half-way scan fixed {half} pages, a full one {full}"
        );

        // A stream dropped before it was read at all also stops.
        let unread = db.scan("t", Scan::all()).await?;
        drop(unread);
        db.close().await?;
        Ok(())
    })
}

#[test]
fn errors_come_back_typed() -> TestResult {
    let dir = tempfile::tempdir()?;
    multi_thread().block_on(async {
        let db = loaded(dir.path(), 10).await?;
        assert!(matches!(
            db.insert("nope", row(1)).await,
            Err(Error::NoSuchTable { table }) if table == "nope"
        ));
        assert!(matches!(
            db.insert("t", row(3)).await,
            Err(Error::DuplicateKey { index, .. }) if index == "PRIMARY"
        ));
        assert!(matches!(
            db.insert("t", vec![Value::UInt(1)]).await,
            Err(Error::TypeMismatch { .. })
        ));
        assert!(matches!(
            db.update("t", row(77)).await,
            Err(Error::RowNotFound { .. })
        ));
        assert!(matches!(
            db.scan_index("t", "nope", Scan::all()).await,
            Err(Error::NoSuchIndex { index, .. }) if index == "nope"
        ));
        assert!(matches!(
            db.scan("t", Scan::all().columns(&["nope"])).await,
            Err(Error::NoSuchColumn { .. })
        ));
        assert!(matches!(
            db.create_table(def()).await,
            Err(Error::TableExists { .. })
        ));
        assert!(matches!(
            db.drop_index("t", "PRIMARY").await,
            Err(Error::DropPrimary { .. })
        ));
        assert!(matches!(
            db.load("t", (0..5).map(row)).await,
            Err(Error::TableNotEmpty { .. })
        ));
        assert!(!db.delete("t", vec![Value::UInt(77)]).await?);
        assert!(db.delete("t", vec![Value::UInt(9)]).await?);
        assert_eq!(db.tables().await?, ["t"]);
        assert_eq!(db.table_def("t").await?.name, "t");

        // close refuses while another handle or an open stream uses the database.
        let stream = db.scan("t", Scan::all()).await?;
        let clone = db.clone();
        assert!(matches!(
            clone.close().await,
            Err(Error::InUse { handles: 2 })
        ));
        let clone = db.clone();
        drop(stream);
        assert!(matches!(db.close().await, Err(Error::InUse { handles: 1 })));
        clone.close().await?;
        assert!(matches!(
            AsyncDatabase::open(dir.path().join("missing"), Config::default()).await,
            Err(Error::Directory { .. })
        ));
        Ok(())
    })
}

#[test]
fn a_current_thread_runtime_runs_the_engine_elsewhere() -> TestResult {
    let dir = tempfile::tempdir()?;
    let runtime_thread = std::thread::current().id();
    current_thread().block_on(async {
        let db = loaded(dir.path(), 500).await?.with_stream_buffer(8, 1);
        // The engine's thread is not the runtime's (its only) thread.
        let engine_thread = db.run(|_| Ok(std::thread::current().id())).await?;
        assert_ne!(engine_thread, runtime_thread);
        // A scan much larger than its channel completes: the blocking side parks in
        // `blocking_send` on its own thread while this one thread receives.
        let mut rows = db.scan("t", Scan::all()).await?;
        let reader = tokio::spawn(async move {
            let mut n = 0u64;
            while let Some(r) = rows.next().await {
                assert_eq!(r?, row(n));
                n += 1;
            }
            Ok::<_, Error>(n)
        });
        // Other tasks make progress on the same thread meanwhile.
        assert_eq!(db.get("t", vec![Value::UInt(7)]).await?, Some(row(7)));
        assert_eq!(reader.await??, 500);
        assert_eq!(db.count("t").await?, 500);
        db.close().await?;
        Ok(())
    })
}

#[test]
fn dropping_the_last_handle_closes_the_database_cleanly() -> TestResult {
    let dir = tempfile::tempdir()?;
    let rt = multi_thread();
    rt.block_on(async {
        let db = loaded(dir.path(), 100).await?;
        db.insert("t", row(100)).await?;
        drop(db);
        Ok::<_, Error>(())
    })?;
    // The runtime waits for its blocking tasks, the close among them.
    drop(rt);
    let db = Database::open(dir.path(), Config::default())?;
    assert_eq!(db.open_report().redo_groups, 0, "no clean shutdown");
    assert_eq!(db.check()?.rows["t"], 101);
    Ok(())
}

/// The statements beyond get/insert/update/delete: a unique-index read, named columns, typed
/// rows, a retried transaction and a sync, each on the blocking pool.
#[test]
fn statements_typed_rows_and_transactions_run_on_the_blocking_pool() -> TestResult {
    let dir = tempfile::tempdir()?;
    multi_thread().block_on(async {
        let db = AsyncDatabase::create(dir.path(), Config::default()).await?;
        db.create_table(
            TableDef::new("books")
                .column(ColumnDef::new("id", ColumnType::U64).auto_increment())
                .column(ColumnDef::new("isbn", ColumnType::Var(20)))
                .column(ColumnDef::new("qty", ColumnType::U32))
                .primary_key(&["id"])
                .index(IndexDef::unique("by_isbn", &["isbn"])),
        )
        .await?;
        // A tuple maps by position; id 0 asks for the next auto-increment value.
        let id = db.insert_row("books", (0u64, "978-0", 3u32)).await?;
        assert_eq!(id, Some(1));
        let found = db
            .get_by("books", "by_isbn", vec![Value::text("978-0")])
            .await?;
        // A key is any `ToKey` (here a `&str`; above, values).
        assert_eq!(db.get_by("books", "by_isbn", "978-0").await?, found);
        assert_eq!(
            found,
            Some(vec![Value::UInt(1), Value::text("978-0"), Value::UInt(3)])
        );
        assert!(
            db.update_columns(
                "books",
                vec![Value::UInt(1)],
                vec![("qty".into(), Value::UInt(2))]
            )
            .await?
        );
        assert!(
            !db.update_columns("books", 9u64, vec![("qty".into(), Value::UInt(2))])
                .await?
        );
        // Table handles own what they need, so one moves into the closure.
        let books = db.run(|db| db.table("books")).await?;
        let sold = db
            .transaction(move |tx| {
                let Some((id, isbn, qty)) = tx.get_row::<(u64, String, u32)>(&books, 1u64)? else {
                    return Ok(None);
                };
                tx.update(
                    &books,
                    &[Value::UInt(id), Value::text(&isbn), Value::from(qty - 1)],
                )?;
                Ok(Some(qty - 1))
            })
            .await?;
        assert_eq!(sold, Some(1));
        let row: Option<(u64, String, u32)> = db.get_row("books", 1u64).await?;
        assert_eq!(row, Some((1, "978-0".to_owned(), 1)));
        assert_eq!(
            db.get("books", 1u64).await?,
            Some(vec![Value::UInt(1), Value::text("978-0"), Value::UInt(1)])
        );
        let id = db.insert_row("books", (0u64, "978-1", 1u32)).await?;
        assert_eq!(id, Some(2));
        assert!(db.delete("books", 2u64).await?);
        assert!(!db.delete("books", vec![Value::UInt(2)]).await?);
        let lsn = db.sync().await?;
        assert_eq!(db.sync().await?, lsn, "nothing new to sync");
        db.close().await?;
        Ok(())
    })
}
