//! [`AsyncDatabase`]: a handle for services built on tokio (feature `tokio`).
//!
//! ## Why the engine must not run on an async worker thread
//!
//! Every call of the engine blocks its thread: a `get` may wait for a page read from disk, an
//! `insert` may wait for the redo log to be synced (`flush_log_at_trx_commit = 1`), a scan
//! reads leaf after leaf, `check` reads every page. An async runtime runs thousands of tasks
//! on a few worker threads (one, on a current-thread runtime) and switches between them only
//! where a task `.await`s. A task that calls the engine directly holds its worker for the
//! whole call, so every other task queued on that worker (accepting connections, answering
//! other clients, timers) waits behind one fsync:
//!
//! ```text
//!  worker 0:  [task A: insert ......... fsync .........][B][C][D]   B, C, D wait for A's fsync
//!  blocking:
//!
//!  worker 0:  [A][B][C][D][A resumes]                                A awaits; B, C, D run
//!  blocking:     [A's insert ... fsync ...]
//! ```
//!
//! ## spawn_blocking and channels
//!
//! tokio keeps a second pool of threads for exactly this: [`tokio::task::spawn_blocking`]
//! runs a closure there and returns a future of its result. Every method of
//! [`AsyncDatabase`] packs its arguments into owned values (a table name as a `String`, rows
//! as `Vec<Value>`), moves them with a clone of the [`Database`] handle (one `Arc`: the
//! engine is `Send + Sync`, so any thread may call it) into such a closure, and awaits it. The
//! calling task gives its worker back while the engine works.
//!
//! A scan would not fit one closure: collecting a whole table into a `Vec` before returning
//! holds the whole table in memory. Instead [`AsyncDatabase::scan`] starts a blocking task
//! that iterates the engine's [`crate::Rows`] and sends rows in batches through a bounded
//! [`tokio::sync::mpsc`] channel; the async side receives them from a [`RowStream`]. The
//! channel's bound is the **back pressure**: when the consumer is slow the channel fills,
//! `blocking_send` parks the blocking thread (not an async worker), and at most
//! `batches × rows_per_batch` rows wait in memory ([`AsyncDatabase::with_stream_buffer`]).
//! Dropping the `RowStream` closes the channel; the blocking task's next send fails and it
//! stops reading, so an abandoned scan does not read the rest of the table.
//!
//! ```text
//!   blocking thread                      bounded channel                async task
//!   Rows::next() -> batch of rows  ==>  [batch][batch][    ]  ==>  RowStream::next().await
//!   (parks in blocking_send when full)                           (drop: the sender stops)
//! ```
//!
//! ## Lifetime: handles, in-flight calls, close
//!
//! [`AsyncDatabase`] is `Clone` (one `Arc`): give a clone to each task. Every blocking task
//! holds a permit of a semaphore while it uses the database, so [`AsyncDatabase::close`] can
//! wait, without blocking a worker, until calls already started have finished, and then
//! closes the database on the blocking pool. It refuses with [`Error::InUse`] while other
//! handles or unfinished [`RowStream`]s exist. If the last handle is simply dropped inside a
//! runtime, the database is closed on the blocking pool as well (errors ignored, as for
//! [`Database`]'s own drop).
//!
//! Dropping the future of a call (a timeout, a `select!` that took another branch) does
//! **not** undo or stop the statement: it runs to completion on the blocking pool, and its
//! result is discarded, as a client that hangs up after sending a statement.

use std::path::Path;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use crate::CheckReport;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::row::ToKey;
use crate::schema::{IndexDef, TableDef};
use crate::table::Scan;
use minnow_btree::record::Value;
use minnow_redo::Durability;

/// The most blocking tasks one database runs at once through its async handles; a call
/// beyond it waits (asynchronously) for a slot. tokio's blocking pool has 512 threads by
/// default, so this bound is never the one that binds in practice.
const MAX_IN_FLIGHT: u32 = 1 << 20;

/// Rows per batch a scan sends through its channel, by default.
pub const DEFAULT_ROWS_PER_BATCH: usize = 256;

/// Batches a scan's channel holds, by default.
pub const DEFAULT_BATCHES: usize = 4;

/// What every handle shares: the database and the gate that counts calls in flight.
struct Shared {
    /// `None` only while being closed or dropped.
    db: Option<Database>,
    gate: Arc<Semaphore>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The last handle went away without `close`. Dropping a `Database` flushes every dirty
        // page: do that on the blocking pool when inside a runtime, not on a worker.
        if let (Some(db), Ok(rt)) = (self.db.take(), tokio::runtime::Handle::try_current()) {
            drop(rt.spawn_blocking(move || drop(db)));
        }
    }
}

/// What a blocking task holds while it uses the database. Fields drop in order: the
/// database reference first, then the permit, so once `close` holds every permit no task
/// holds the database.
struct Lease {
    db: Database,
    _permit: OwnedSemaphorePermit,
}

fn join_error(e: tokio::task::JoinError) -> Error {
    Error::TaskFailed {
        reason: e.to_string(),
    }
}

/// An owned, cloneable handle on a [`Database`] for async code: every call runs the engine
/// on tokio's blocking pool ([`tokio::task::spawn_blocking`]) and scans stream through
/// bounded channels (see the module docs of `async_db`). Tables are named per call: a
/// [`crate::Table`] handle could travel between tasks, but its calls block, so it belongs
/// inside [`AsyncDatabase::run`].
///
/// Needs a tokio runtime (either flavour) and the crate feature `tokio`.
///
/// ```
/// use minnow::{AsyncDatabase, ColumnDef, ColumnType, Config, Scan, TableDef, Value};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// rt.block_on(async {
///     let dir = tempfile::tempdir()?;
///     let db = AsyncDatabase::create(dir.path(), Config::default()).await?;
///     db.create_table(
///         TableDef::new("kv")
///             .column(ColumnDef::new("k", ColumnType::U64))
///             .column(ColumnDef::new("v", ColumnType::Var(32)))
///             .primary_key(&["k"]),
///     )
///     .await?;
///
///     // Many tasks, one database: each gets a clone of the handle.
///     let mut tasks = Vec::new();
///     for k in 0..8u64 {
///         let db = db.clone();
///         tasks.push(tokio::spawn(async move {
///             db.insert("kv", vec![Value::UInt(k), Value::text("hello")]).await
///         }));
///     }
///     for t in tasks {
///         t.await??;
///     }
///     assert_eq!(
///         db.get("kv", vec![Value::UInt(3)]).await?,
///         Some(vec![Value::UInt(3), Value::text("hello")])
///     );
///
///     // A scan streams rows; it never holds more than a few batches in memory.
///     let mut rows = db.scan("kv", Scan::all().columns(&["k"])).await?;
///     let mut n = 0;
///     while let Some(row) = rows.next().await {
///         assert_eq!(row?, [Value::UInt(n)]);
///         n += 1;
///     }
///     assert_eq!(n, 8);
///     drop(rows);
///     db.close().await?;
///     Ok(())
/// })
/// # }
/// ```
#[derive(Clone)]
pub struct AsyncDatabase {
    shared: Arc<Shared>,
    rows_per_batch: usize,
    batches: usize,
}

impl std::fmt::Debug for AsyncDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncDatabase")
            .field("db", &self.shared.db)
            .field("in_flight", &self.in_flight())
            .field("rows_per_batch", &self.rows_per_batch)
            .field("batches", &self.batches)
            .finish()
    }
}

impl AsyncDatabase {
    /// Wraps an open database.
    pub fn new(db: Database) -> AsyncDatabase {
        AsyncDatabase {
            shared: Arc::new(Shared {
                db: Some(db),
                gate: Arc::new(Semaphore::new(MAX_IN_FLIGHT as usize)),
            }),
            rows_per_batch: DEFAULT_ROWS_PER_BATCH,
            batches: DEFAULT_BATCHES,
        }
    }

    /// [`Database::create`] on the blocking pool.
    pub async fn create(dir: impl AsRef<Path>, config: crate::Config) -> Result<AsyncDatabase> {
        let dir = dir.as_ref().to_path_buf();
        let db = tokio::task::spawn_blocking(move || Database::create(dir, config))
            .await
            .map_err(join_error)??;
        Ok(AsyncDatabase::new(db))
    }

    /// [`Database::open`] (recovery included) on the blocking pool.
    pub async fn open(dir: impl AsRef<Path>, config: crate::Config) -> Result<AsyncDatabase> {
        let dir = dir.as_ref().to_path_buf();
        let db = tokio::task::spawn_blocking(move || Database::open(dir, config))
            .await
            .map_err(join_error)??;
        Ok(AsyncDatabase::new(db))
    }

    /// This handle with scans that send `rows_per_batch` rows per message through a channel
    /// of `batches` messages (each at least 1): at most about `rows_per_batch × (batches +
    /// 2)` rows of one scan are in memory at once (the channel's, the one being filled and
    /// the one being read). Larger batches cost fewer wake-ups; smaller ones less memory.
    pub fn with_stream_buffer(mut self, rows_per_batch: usize, batches: usize) -> AsyncDatabase {
        self.rows_per_batch = rows_per_batch.max(1);
        self.batches = batches.max(1);
        self
    }

    /// Blocking tasks of this database running or queued now (calls in flight, scans whose
    /// blocking side has not stopped yet).
    pub fn in_flight(&self) -> usize {
        (MAX_IN_FLIGHT as usize).saturating_sub(self.shared.gate.available_permits())
    }

    /// A permit and the database, for one blocking task.
    async fn lease(&self) -> Result<Lease> {
        let db = self.shared.db.clone().ok_or(Error::TaskFailed {
            reason: "the database is being closed".into(),
        })?;
        let permit = Arc::clone(&self.shared.gate)
            .acquire_owned()
            .await
            .map_err(|e| Error::TaskFailed {
                reason: e.to_string(),
            })?;
        Ok(Lease {
            db,
            _permit: permit,
        })
    }

    /// Runs `f` with the database on the blocking pool and returns its result: for work the
    /// other methods do not cover, such as several statements in one go or
    /// [`Database::open_report`]. `f` may block; it must not call back into async code.
    ///
    /// ```
    /// # use minnow::{AsyncDatabase, Config};
    /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
    /// # let dir = tempfile::tempdir()?;
    /// let db = AsyncDatabase::create(dir.path(), Config::default()).await?;
    /// let page = db.run(|db| Ok(db.config()?.page_size.bytes())).await?;
    /// assert_eq!(page, 16384);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn run<T, F>(&self, f: F) -> Result<T>
    where
        F: FnOnce(&Database) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let lease = self.lease().await?;
        tokio::task::spawn_blocking(move || {
            // The whole lease moves in (not just `lease.db`): the permit lives as long as
            // the task.
            let lease = lease;
            f(&lease.db)
        })
        .await
        .map_err(join_error)?
    }

    /// [`Database::create_table`]; returns the definition as stored.
    pub async fn create_table(&self, def: TableDef) -> Result<TableDef> {
        self.run(move |db| Ok(db.create_table(def)?.def().clone()))
            .await
    }

    /// [`Database::tables`].
    pub async fn tables(&self) -> Result<Vec<String>> {
        self.run(|db| db.tables()).await
    }

    /// [`Database::table_def`].
    pub async fn table_def(&self, table: &str) -> Result<TableDef> {
        let table = table.to_owned();
        self.run(move |db| db.table_def(&table)).await
    }

    /// [`Database::check`].
    pub async fn check(&self) -> Result<CheckReport> {
        self.run(|db| db.check()).await
    }

    /// [`Database::create_index`].
    pub async fn create_index(&self, table: &str, index: IndexDef) -> Result<Durability> {
        let table = table.to_owned();
        self.run(move |db| db.create_index(&table, index)).await
    }

    /// [`Database::drop_table`].
    pub async fn drop_table(&self, table: &str) -> Result<()> {
        let table = table.to_owned();
        self.run(move |db| db.drop_table(&table)).await
    }

    /// [`Database::drop_index`].
    pub async fn drop_index(&self, table: &str, index: &str) -> Result<()> {
        let (table, index) = (table.to_owned(), index.to_owned());
        self.run(move |db| db.drop_index(&table, &index)).await
    }

    /// [`crate::Table::get`] on table `table`.
    pub async fn get(
        &self,
        table: &str,
        key: impl ToKey + Send + 'static,
    ) -> Result<Option<Vec<Value>>> {
        let table = table.to_owned();
        self.run(move |db| db.table(&table)?.get(&key)).await
    }

    /// [`crate::Table::count`] on table `table`.
    pub async fn count(&self, table: &str) -> Result<u64> {
        let table = table.to_owned();
        self.run(move |db| db.table(&table)?.count()).await
    }

    /// [`crate::Table::insert`] on table `table`.
    pub async fn insert(&self, table: &str, row: Vec<Value>) -> Result<()> {
        let table = table.to_owned();
        self.run(move |db| db.table(&table)?.insert(&row)).await
    }

    /// [`crate::Table::update`] on table `table`.
    pub async fn update(&self, table: &str, row: Vec<Value>) -> Result<()> {
        let table = table.to_owned();
        self.run(move |db| db.table(&table)?.update(&row)).await
    }

    /// [`crate::Table::delete`] on table `table`; false if there was no such row.
    pub async fn delete(&self, table: &str, key: impl ToKey + Send + 'static) -> Result<bool> {
        let table = table.to_owned();
        self.run(move |db| db.table(&table)?.delete(&key)).await
    }

    /// [`crate::Table::get_by`] on table `table`: the row whose key in unique secondary
    /// index `index` is `key`.
    pub async fn get_by(
        &self,
        table: &str,
        index: &str,
        key: impl ToKey + Send + 'static,
    ) -> Result<Option<Vec<Value>>> {
        let (table, index) = (table.to_owned(), index.to_owned());
        self.run(move |db| db.table(&table)?.get_by(&index, &key))
            .await
    }

    /// [`crate::Table::update_columns`] on table `table`; false if there was no such row.
    pub async fn update_columns(
        &self,
        table: &str,
        key: impl ToKey + Send + 'static,
        changes: Vec<(String, Value)>,
    ) -> Result<bool> {
        let table = table.to_owned();
        self.run(move |db| {
            let changes: Vec<(&str, Value)> = changes
                .iter()
                .map(|(name, value)| (name.as_str(), value.clone()))
                .collect();
            db.table(&table)?.update_columns(&key, &changes)
        })
        .await
    }

    /// [`crate::Table::get_row`] on table `table`: the row with primary key `key`, read
    /// into `T`.
    pub async fn get_row<T, K>(&self, table: &str, key: K) -> Result<Option<T>>
    where
        T: crate::FromRow + Send + 'static,
        K: ToKey + Send + 'static,
    {
        let table = table.to_owned();
        self.run(move |db| db.table(&table)?.get_row(key)).await
    }

    /// [`crate::Table::insert_row`] on table `table`; the auto-increment value the row got.
    pub async fn insert_row<R>(&self, table: &str, row: R) -> Result<Option<u64>>
    where
        R: crate::ToRow + Send + 'static,
    {
        let table = table.to_owned();
        self.run(move |db| db.table(&table)?.insert_row(&row)).await
    }

    /// [`Database::transaction`]: `f` runs on the blocking pool as one transaction,
    /// committed when it returns `Ok`, run again after a deadlock or lock wait timeout
    /// ([`Error::is_retryable`]). `f` is blocking code, like every statement it calls.
    pub async fn transaction<T, F>(&self, f: F) -> Result<T>
    where
        F: FnMut(&mut crate::Transaction) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        self.run(move |db| db.transaction(f)).await
    }

    /// [`Database::sync`]: everything committed so far made durable; the LSN it reached.
    pub async fn sync(&self) -> Result<u64> {
        self.run(|db| db.sync()).await
    }

    /// [`crate::Table::load`] on table `table`. The rows are produced on the blocking
    /// thread as the load consumes them, so an iterator that generates them
    /// (`(0..n).map(...)`) is never held in memory whole.
    pub async fn load<I>(&self, table: &str, rows: I) -> Result<Durability>
    where
        I: IntoIterator<Item = Vec<Value>> + Send + 'static,
    {
        let table = table.to_owned();
        self.run(move |db| db.table(&table)?.load(rows)).await
    }

    /// [`crate::Table::scan`] on table `table`, streamed: the rows come through a
    /// [`RowStream`]. An error opening the scan (no such table, a bad bound) is returned
    /// here; an error while reading is the stream's last item.
    pub async fn scan(&self, table: &str, scan: Scan) -> Result<RowStream> {
        self.stream(table.to_owned(), None, scan).await
    }

    /// [`crate::Table::scan_index`] on index `index` of table `table`, streamed like
    /// [`AsyncDatabase::scan`].
    pub async fn scan_index(&self, table: &str, index: &str, scan: Scan) -> Result<RowStream> {
        self.stream(table.to_owned(), Some(index.to_owned()), scan)
            .await
    }

    async fn stream(&self, table: String, index: Option<String>, scan: Scan) -> Result<RowStream> {
        let lease = self.lease().await?;
        let (tx, rx) = mpsc::channel(self.batches);
        let (opened_tx, opened_rx) = oneshot::channel();
        let n = self.rows_per_batch;
        // Detached: the task ends when the scan does or when the stream is dropped.
        drop(tokio::task::spawn_blocking(move || {
            let lease = lease;
            produce(&lease.db, &table, index.as_deref(), scan, n, &tx, opened_tx)
        }));
        let covering = opened_rx.await.map_err(|_| Error::TaskFailed {
            reason: "the scan's blocking task ended before opening the scan".into(),
        })??;
        Ok(RowStream {
            rx,
            batch: Vec::new().into_iter(),
            covering,
            handle: Some(Arc::clone(&self.shared)),
        })
    }

    /// Closes the database cleanly ([`Database::close`]) once calls already started have
    /// finished, without blocking a worker. Fails with [`Error::InUse`] while other clones
    /// of this handle or unfinished [`RowStream`]s exist; the database then stays open for them.
    /// A [`Database`] clone taken out through [`AsyncDatabase::run`] does not count: like
    /// every handle of the database, it is closed too ([`Database::close`]).
    pub async fn close(self) -> Result<()> {
        let mut shared = Arc::try_unwrap(self.shared).map_err(|s| Error::InUse {
            handles: Arc::strong_count(&s) - 1,
        })?;
        // Every blocking task holds a permit until it has let go of the database: holding
        // all of them means none is left (abandoned scans included, which stop at their
        // next send).
        let _all = Arc::clone(&shared.gate)
            .acquire_many_owned(MAX_IN_FLIGHT)
            .await
            .map_err(|e| Error::TaskFailed {
                reason: e.to_string(),
            })?;
        let Some(db) = shared.db.take() else {
            return Ok(());
        };
        tokio::task::spawn_blocking(move || db.close())
            .await
            .map_err(join_error)?
    }
}

/// The blocking side of a scan: opens it, reports the outcome on `opened`, then sends rows
/// in batches of `n` until the scan ends, fails (the error is the last message) or the
/// receiver is gone.
fn produce(
    db: &Database,
    table: &str,
    index: Option<&str>,
    scan: Scan,
    n: usize,
    tx: &mpsc::Sender<Result<Vec<Vec<Value>>>>,
    opened: oneshot::Sender<Result<bool>>,
) {
    let rows = db.table(table).and_then(|t| match index {
        None => t.scan(scan),
        Some(i) => t.scan_index(i, scan),
    });
    let rows = match rows {
        Ok(rows) => {
            if opened.send(Ok(rows.is_covering())).is_err() {
                return; // The caller's future was dropped.
            }
            rows
        }
        Err(e) => {
            let _ = opened.send(Err(e));
            return;
        }
    };
    let mut batch = Vec::with_capacity(n);
    for row in rows {
        match row {
            Ok(row) => {
                batch.push(row);
                if batch.len() == n {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(n));
                    // Parks this (blocking-pool) thread while the channel is full; fails
                    // once the RowStream is dropped, which ends the scan.
                    if tx.blocking_send(Ok(full)).is_err() {
                        return;
                    }
                }
            }
            Err(e) => {
                if !batch.is_empty() && tx.blocking_send(Ok(batch)).is_err() {
                    return;
                }
                let _ = tx.blocking_send(Err(e));
                return;
            }
        }
    }
    if !batch.is_empty() {
        let _ = tx.blocking_send(Ok(batch));
    }
}

/// The rows of an [`AsyncDatabase::scan`] or [`AsyncDatabase::scan_index`], arriving in
/// batches from a blocking task through a bounded channel. Dropping it stops the scan.
/// Until it is dropped or has returned its last row, it counts as a handle for
/// [`AsyncDatabase::close`].
pub struct RowStream {
    rx: mpsc::Receiver<Result<Vec<Vec<Value>>>>,
    batch: std::vec::IntoIter<Vec<Value>>,
    covering: bool,
    /// Counts as a handle for `close` until the scan has ended.
    handle: Option<Arc<Shared>>,
}

impl std::fmt::Debug for RowStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowStream")
            .field("buffered", &self.batch.len())
            .field("covering", &self.covering)
            .finish()
    }
}

impl RowStream {
    /// The next row, `None` at the end of the scan. After an error the stream ends.
    pub async fn next(&mut self) -> Option<Result<Vec<Value>>> {
        loop {
            if let Some(row) = self.batch.next() {
                return Some(Ok(row));
            }
            match self.recv().await? {
                Ok(batch) => self.batch = batch.into_iter(),
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// The rows buffered or the next batch, as they came from the engine: fewer wake-ups
    /// than [`RowStream::next`] for a consumer that handles rows in bulk. `None` at the end.
    pub async fn next_batch(&mut self) -> Option<Result<Vec<Vec<Value>>>> {
        let buffered: Vec<_> = self.batch.by_ref().collect();
        if !buffered.is_empty() {
            return Some(Ok(buffered));
        }
        self.recv().await
    }

    /// The next message; at the end, lets go of the database handle.
    async fn recv(&mut self) -> Option<Result<Vec<Vec<Value>>>> {
        let msg = self.rx.recv().await;
        if msg.is_none() {
            self.handle = None;
        }
        msg
    }

    /// Every remaining row in one `Vec`. This holds the whole result in memory: bound the
    /// scan with [`Scan::limit`] when the table may be large.
    pub async fn collect(mut self) -> Result<Vec<Vec<Value>>> {
        let mut out = Vec::new();
        while let Some(batch) = self.next_batch().await {
            out.extend(batch?);
        }
        Ok(out)
    }

    /// [`crate::Rows::is_covering`] of the underlying scan.
    pub fn is_covering(&self) -> bool {
        self.covering
    }
}
