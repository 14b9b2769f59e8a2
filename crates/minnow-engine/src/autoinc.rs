//! AUTO_INCREMENT: the per-table counter, the AUTO-INC table lock, the three lock modes, and
//! how the counter survives a crash.
//!
//! ## The counter and the two locks
//!
//! A table with an AUTO_INCREMENT column (`ColumnDef::auto_increment`) has one
//! counter, `next`: the value the next row that asks for one gets (1 in a new table). A row
//! asks by carrying NULL or 0 in the column; a row that carries a larger explicit value moves
//! `next` past it. Values are never given back: a failed insert, or a reservation a
//! statement does not use up, leaves a **gap**.
//!
//! InnoDB guards the counter with two locks, and so does minnow ([`AutoInc`]):
//!
//! - the **AUTO-INC lock**, a table-level lock an insert statement may hold until it ends;
//! - a **light mutex** around `next` itself, held only while values are taken.
//!
//! `innodb_autoinc_lock_mode` (`AutoIncLockMode`) says which statement takes what:
//!
//! ```text
//!  mode            simple insert (row count known)     bulk insert (count unknown)
//!  0 traditional   AUTO-INC lock to statement end      AUTO-INC lock to statement end
//!  1 consecutive   AUTO-INC lock while reserving n     AUTO-INC lock to statement end
//!  2 interleaved   mutex per value                     mutex per value
//!
//!  two concurrent 3-row statements A and B:
//!  0:  A=1,2,3  B=4,5,6   (B waits for A to finish)
//!  1:  A=1,2,3  B=4,5,6   (both run; each reserved its block first)
//!  2:  A=1,3,5  B=2,4,6   (values taken as rows are inserted: any interleaving)
//! ```
//!
//! A "simple insert" is `Table::insert`, or `Table::insert_many` of an
//! iterator whose `size_hint` is exact (a `Vec`, a slice, a mapped range); any other iterator
//! is a "bulk insert", like `INSERT ... SELECT` or `LOAD DATA`, and so is
//! `Table::load`. In mode 1 a simple insert, at its first row that asks for a
//! value, reserves one value per row of the statement, even for rows that bring their own
//! ("mixed-mode inserts"), and the unused ones are lost, as in InnoDB. Rows beyond what an
//! iterator's size hint promised take values one at a time.
//!
//! ## What the modes cost
//!
//! Writers of different rows run in parallel (row locks, see the `minnow` crate docs,
//! "Concurrency"), so the AUTO-INC lock is what decides an insert-heavy table's throughput,
//! as in InnoDB: in mode 0 a second insert into the table waits for the AUTO-INC lock until
//! the first statement ends (see [`AutoIncStatus::lock_waits`]), in mode 1 it waits only for
//! the reservation, and in mode 2 the two statements' values interleave and the inserts run
//! side by side. `Table::insert_many` runs each row as its own statement (each row
//! is atomic; the statement is not). Experiment E7 measures the difference. Lock order is
//! always AUTO-INC lock, then the statement's latches (the `minnow` crate's
//! `trx::WriteGuard`), then the counter mutex.
//!
//! ## Surviving a crash
//!
//! InnoDB 5.7 recomputed the counter at startup from the largest value in the index, so a
//! deleted largest row's value came back after a restart; 8.0 writes the counter to the redo
//! log whenever it changes. minnow does the 8.0 thing through the dictionary: a small record
//! per table, key `"\0autoinc "` + table name, value a 16-byte big-endian **high-water mark**
//! `P` (every value ever handed out is below `P`). When taking values would pass `P`, the
//! record is updated first, to the new `next` plus [`PERSIST_AHEAD`], in a mini-transaction
//! of the dictionary B-tree. That redo precedes the row's in the log, so a row durable after
//! a crash implies a mark above it: an acknowledged value is never handed out again, even if
//! its row was deleted. `open` starts the counter at `P`, so a crash leaves a gap of at most
//! [`PERSIST_AHEAD`] values; a clean `Database::close` writes the exact `next`, so
//! a clean restart leaves none. Writing ahead keeps the cost at one small dictionary update
//! per [`PERSIST_AHEAD`] values instead of one per row.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use minnow_btree::TreeError;
use minnow_btree::record::Value;
use minnow_redo::Lsn;
use parking_lot::{Mutex, MutexGuard};

use crate::dict::dict_row;
use crate::engine::Engine;
use crate::entry::TableEntry;
use crate::error::{Error, Result, from_tree};
use crate::schema::{self, TableMeta};

/// The prefix of the dictionary keys that hold auto-increment counters (no table name
/// contains NUL, so no table record has such a key).
const COUNTER_KEY: &[u8] = b"\0autoinc ";

/// How far ahead of the counter the persisted high-water mark is written: a crash leaves a
/// gap of at most this many values, and the counter costs one dictionary update per this
/// many values.
pub const PERSIST_AHEAD: u64 = 64;

/// The dictionary key of table `table`'s counter.
pub fn counter_key(table: &str) -> Vec<u8> {
    [COUNTER_KEY, table.as_bytes()].concat()
}

/// The table whose counter dictionary key `key` is, if it is one.
pub fn counter_table(key: &[u8]) -> Option<String> {
    key.strip_prefix(COUNTER_KEY)
        .map(|t| String::from_utf8_lossy(t).into_owned())
}

/// Decodes a counter record's value (16 bytes, big-endian).
pub fn decode_counter(table: &str, b: &[u8]) -> Result<u128> {
    <[u8; 16]>::try_from(b)
        .map(u128::from_be_bytes)
        .map_err(|_| Error::Corrupt {
            what: format!(
                "auto-increment counter record of table `{table}` has {} bytes, not 16",
                b.len()
            ),
        })
}

/// Writes table `table`'s counter record (inserting it if missing). The caller holds the
/// statement's latches.
pub fn write_counter(inner: &Engine, table: &str, mark: u128) -> Result<Lsn> {
    let row = dict_row(&counter_key(table), mark.to_be_bytes().to_vec());
    match inner.dict.update(&inner.pool, &row) {
        Err(TreeError::NotFound { .. }) => inner.dict.insert(&inner.pool, &row),
        other => other,
    }
    .map_err(|e| from_tree(e, table, "SYS_TABLES"))
}

/// Removes table `table`'s counter record, if there is one. The caller holds the statement's latches.
pub fn delete_counter(inner: &Engine, table: &str) -> Result<Option<Lsn>> {
    match inner
        .dict
        .delete(&inner.pool, &[Value::Bytes(counter_key(table))])
    {
        Ok(end) => Ok(Some(end)),
        Err(TreeError::NotFound { .. }) => Ok(None),
        Err(e) => Err(from_tree(e, table, "SYS_TABLES")),
    }
}

/// What a table's auto-increment counter and AUTO-INC lock look like now
/// (`Table::auto_increment_status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoIncStatus {
    /// The AUTO_INCREMENT column.
    pub column: String,
    /// The value the next row that asks for one gets (`SHOW TABLE STATUS`'s
    /// `Auto_increment`); `None` once the column's range is used up.
    pub next: Option<u64>,
    /// How many times since open a statement found the AUTO-INC lock held and waited.
    pub lock_waits: u64,
    /// How many times since open a statement was granted the AUTO-INC lock (always 0 in
    /// mode 2).
    pub lock_grants: u64,
}

/// What an insert statement did (`Table::insert_returning_id`,
/// `Table::insert_many`). How durable the rows are is not in it: an autocommit
/// statement is as durable as `flush_log_at_trx_commit` says when it returns, and a
/// transaction's rows as its commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inserted {
    /// Rows inserted.
    pub rows: usize,
    /// The auto-increment values the statement generated, in row order (rows that brought
    /// their own value add none; empty for a table without an AUTO_INCREMENT column).
    pub generated: Vec<u64>,
}

impl Inserted {
    /// The first value the statement generated: MySQL's `LAST_INSERT_ID()` after it. In
    /// mode 2 a multi-row statement's values need not be consecutive; [`Inserted::generated`]
    /// has all of them.
    pub fn id(&self) -> Option<u64> {
        self.generated.first().copied()
    }
}

/// The counter proper, under the light mutex.
#[derive(Debug)]
struct Counter {
    /// The next value to hand out (`max + 1` once used up).
    next: u128,
    /// The high-water mark in the dictionary: every value handed out is below it.
    persisted: u128,
}

/// A table's auto-increment state: the counter, its light mutex and the AUTO-INC lock.
/// Shared by every [`TableEntry`] the table has had since open (DDL replaces entries, not
/// the counter).
#[derive(Debug)]
pub struct AutoInc {
    /// The AUTO_INCREMENT column's position.
    pub column: usize,
    /// Its name.
    pub column_name: String,
    signed: bool,
    /// The column type's largest value.
    max: u128,
    /// The table-level AUTO-INC lock.
    table_lock: Mutex<()>,
    /// The light mutex around the counter.
    counter: Mutex<Counter>,
    lock_waits: AtomicU64,
    lock_grants: AtomicU64,
}

/// True for a value that asks for the next auto-increment value.
fn asks(v: &Value) -> bool {
    matches!(v, Value::Null | Value::Int(0) | Value::UInt(0))
}

impl AutoInc {
    /// The state of `meta`'s table, whose persisted high-water mark is `mark`; `None` if the
    /// table has no AUTO_INCREMENT column.
    pub fn new(meta: &TableMeta, mark: u128) -> Option<AutoInc> {
        let column = meta.auto_increment_column()?;
        let def = meta.def.columns.get(column)?;
        let (min, max) = schema::int_range(def.ty)?;
        Some(AutoInc {
            column,
            column_name: def.name.clone(),
            signed: min < 0,
            max,
            table_lock: Mutex::new(()),
            counter: Mutex::new(Counter {
                next: mark.max(1),
                persisted: mark,
            }),
            lock_waits: AtomicU64::new(0),
            lock_grants: AtomicU64::new(0),
        })
    }

    /// True if `row` asks for a value (NULL or 0 in the column).
    pub fn asks(&self, row: &[Value]) -> bool {
        row.get(self.column).is_some_and(asks)
    }

    /// Takes the AUTO-INC lock, counting a wait if it was held.
    pub fn lock_table(&self) -> MutexGuard<'_, ()> {
        let g = match self.table_lock.try_lock() {
            Some(g) => g,
            None => {
                self.lock_waits.fetch_add(1, Ordering::Relaxed);
                self.table_lock.lock()
            }
        };
        self.lock_grants.fetch_add(1, Ordering::Relaxed);
        g
    }

    /// Takes `n` consecutive values and returns them, first persisting a new high-water
    /// mark if they pass the old one. The caller holds the statement's latches.
    pub fn take(&self, inner: &Engine, table: &str, n: u128) -> Result<Range<u128>> {
        let mut c = self.counter.lock();
        let first = c.next;
        let end = first.saturating_add(n);
        if n > 0 && end - 1 > self.max {
            return Err(Error::AutoIncrementExhausted {
                table: table.to_owned(),
                column: self.column_name.clone(),
                max: u64::try_from(self.max).unwrap_or(u64::MAX),
            });
        }
        c.next = end;
        self.persist_ahead(&mut c, inner, table)?;
        Ok(first..end)
    }

    /// Moves the counter past an explicit value `v` (NULL, 0 and negative values move
    /// nothing). The caller holds the statement's latches.
    pub fn observe(&self, inner: &Engine, table: &str, v: &Value) -> Result<()> {
        let v = match *v {
            Value::Int(x) if x > 0 => x.unsigned_abs().into(),
            Value::UInt(x) => u128::from(x),
            _ => return Ok(()),
        };
        let mut c = self.counter.lock();
        if v >= c.next {
            c.next = v.saturating_add(1);
            self.persist_ahead(&mut c, inner, table)?;
        }
        Ok(())
    }

    fn persist_ahead(&self, c: &mut Counter, inner: &Engine, table: &str) -> Result<()> {
        if c.next > c.persisted {
            let mark = c
                .next
                .saturating_add(PERSIST_AHEAD.into())
                .min(self.max.saturating_add(1));
            write_counter(inner, table, mark)?;
            c.persisted = mark;
        }
        Ok(())
    }

    /// Writes the exact counter as the high-water mark (at a clean close), if it differs.
    /// The caller holds the statement's latches.
    pub fn persist_exact(&self, inner: &Engine, table: &str) -> Result<()> {
        let mut c = self.counter.lock();
        if c.persisted != c.next {
            write_counter(inner, table, c.next)?;
            c.persisted = c.next;
        }
        Ok(())
    }

    /// Value `n` as the column stores it.
    pub fn value(&self, n: u128) -> Value {
        if self.signed {
            Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
        } else {
            Value::UInt(u64::try_from(n).unwrap_or(u64::MAX))
        }
    }

    /// The status as `Table::auto_increment_status` reports it.
    pub fn status(&self) -> AutoIncStatus {
        let next = self.counter.lock().next;
        AutoIncStatus {
            column: self.column_name.clone(),
            next: (next <= self.max).then(|| u64::try_from(next).unwrap_or(u64::MAX)),
            lock_waits: self.lock_waits.load(Ordering::Relaxed),
            lock_grants: self.lock_grants.load(Ordering::Relaxed),
        }
    }
}

impl TableEntry {
    /// `Database::check`'s part: the counter is above the largest value the column
    /// holds (read from the end of the index whose first column it is).
    pub fn check_auto_increment(&self, pool: &minnow_buf::BufferPool) -> Result<()> {
        let Some(ai) = self.autoinc.as_deref() else {
            return Ok(());
        };
        let meta = &self.meta;
        let (tree, index) = if meta.pk.first() == Some(&ai.column) {
            (&self.clustered, crate::schema::PRIMARY)
        } else {
            match meta
                .secondary
                .iter()
                .zip(&self.secondary)
                .find(|(s, _)| s.cols.first() == Some(&ai.column))
            {
                Some((s, tree)) => (tree, s.name.as_str()),
                None => return Ok(()),
            }
        };
        let mut range = minnow_btree::ScanRange::all().limit(1);
        range.reverse = true;
        let last = tree
            .scan(pool, range)
            .map_err(|e| from_tree(e, meta.name(), index))?
            .next()
            .transpose()
            .map_err(|e| from_tree(e, meta.name(), index))?;
        let largest = match last.as_ref().and_then(|e| e.values.first()) {
            Some(Value::Int(x)) if *x > 0 => u128::from(x.unsigned_abs()),
            Some(Value::UInt(x)) => u128::from(*x),
            _ => 0,
        };
        let c = ai.counter.lock();
        if largest >= c.next || c.next > c.persisted {
            return Err(Error::Corrupt {
                what: format!(
                    "table `{}`: AUTO_INCREMENT column `{}` holds {largest}, but the counter \
                     is at {} with {} persisted",
                    meta.name(),
                    ai.column_name,
                    c.next,
                    c.persisted
                ),
            });
        }
        Ok(())
    }

    /// Checks and normalises a row to insert, first giving it an auto-increment value if it
    /// asks for one (from `reserved` while that lasts, else from the counter; the value goes
    /// to `generated`) or moving the counter past its explicit value. The caller holds the
    /// statement's latches.
    pub fn prepare_row(
        &self,
        inner: &Engine,
        row: &[Value],
        reserved: &mut Range<u128>,
        generated: &mut Vec<u64>,
    ) -> Result<Vec<Value>> {
        let meta = &self.meta;
        let Some(ai) = self.autoinc.as_deref() else {
            return meta.normalise_row(row);
        };
        match row.get(ai.column) {
            // A row of the wrong length: normalise_row names the problem.
            None => meta.normalise_row(row),
            Some(v) if asks(v) => {
                let n = match reserved.next() {
                    Some(n) => n,
                    None => ai.take(inner, meta.name(), 1)?.start,
                };
                let mut row = row.to_vec();
                row[ai.column] = ai.value(n);
                let row = meta.normalise_row(&row)?;
                generated.push(u64::try_from(n).unwrap_or(u64::MAX));
                Ok(row)
            }
            Some(_) => {
                let row = meta.normalise_row(row)?;
                ai.observe(inner, meta.name(), &row[ai.column])?;
                Ok(row)
            }
        }
    }
}
