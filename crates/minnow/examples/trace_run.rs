//! Records a short run of the engine with a `tracing` subscriber and prints what happened,
//! event by event, for a student to read alongside the source.
//!
//! Run: `cargo run -p minnow --example trace_run --features trace`
//!
//! The engine emits its events only when built with the `trace` feature (without it the
//! calls compile to nothing; see `minnow_buf`'s crate docs, "Tracing"). This example installs
//! a tiny subscriber of its own (a [`Subscriber`] that keeps every event's name and fields),
//! then runs a workload chosen to make every kind of event happen on a small scale: 4 KiB
//! pages and a 32-frame buffer pool, so that inserting a few thousand rows splits pages and
//! evicts others, deleting most of them and letting purge remove the delete-marked records
//! (`purge`: a delete only marks the record, for readers with older snapshots) merges pages
//! back, and closing flushes everything through the doublewrite buffer and checkpoints. It prints a count per event kind, the
//! first few of each, and checks the orderings a student should look for:
//!
//! 1. every `page_write` carries an LSN no newer than the newest `mtr_commit` end before it:
//!    pages are written only after their redo exists (the WAL rule), and `doublewrite_batch`
//!    comes first, then its pages (commit events of different threads arrive in any order);
//! 2. `checkpoint` LSNs only move forward;
//! 3. a page that was evicted and needed again is read back (`page_evict`, later `page_read`
//!    of the same page).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use minnow::{ColumnDef, ColumnType, Config, Database, FlushAtCommit, TableDef, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One event: its name and its fields as `name=value` pairs.
#[derive(Debug, Clone)]
struct Seen {
    name: &'static str,
    fields: BTreeMap<&'static str, u64>,
    text: String,
}

/// A subscriber that keeps every event from the engine (target `minnow`).
#[derive(Default, Clone)]
struct Recorder {
    events: Arc<Mutex<Vec<Seen>>>,
}

struct Fields<'a>(&'a mut Seen);

impl Visit for Fields<'_> {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.fields.insert(field.name(), value);
        let _ = write!(self.0.text, " {}={value}", field.name());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0.text, " {}={value:?}", field.name());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "minnow"
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut seen = Seen {
            name: event.metadata().name(),
            fields: BTreeMap::new(),
            text: String::new(),
        };
        event.record(&mut Fields(&mut seen));
        if let Ok(mut v) = self.events.lock() {
            v.push(seen);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

const KINDS: [&str; 9] = [
    "mtr_commit",
    "split",
    "purge",
    "merge",
    "page_evict",
    "page_read",
    "doublewrite_batch",
    "page_write",
    "checkpoint",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let recorder = Recorder::default();
    tracing::subscriber::set_global_default(recorder.clone())?;

    let dir = tempfile::tempdir()?;
    let config = Config {
        page_size: minnow::PageSize::K4,
        buffer_pool_size: 32 * 4096,
        log_file_size: 1 << 20,
        flush_log_at_trx_commit: FlushAtCommit::Lazy,
        read_ahead_threshold: 0,
        buffer_pool_dump_at_shutdown: false,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config)?;
    let t = db.create_table(
        TableDef::new("t")
            .column(ColumnDef::new("id", ColumnType::U64))
            .column(ColumnDef::new("c", ColumnType::Var(100)))
            .primary_key(&["id"]),
    )?;
    let payload = Value::text(&"x".repeat(80));
    for id in 0..3000u64 {
        t.insert(&[Value::UInt(id), payload.clone()])?;
    }
    for id in (0..3000u64).filter(|i| i % 10 != 0) {
        t.delete(&[Value::UInt(id)])?;
    }
    // The deletes only set delete marks; purge (the background thread, or this call, which
    // takes turns with it) removes the records once no read view needs them, and the pages
    // they emptied merge.
    let purged = db.purge()?;
    if db.status()?.transactions.history_len != 0 {
        return Err(format!("purge left history behind: {purged:?}").into());
    }
    for id in (0..3000u64).step_by(10) {
        t.get(&[Value::UInt(id)])?;
    }
    drop(t);
    db.close()?;

    let events = recorder.events.lock().map_err(|_| "poisoned")?.clone();
    println!(
        "recorded {} events from a run of 3000 inserts, 2700 deletes, purge, 300 gets, close\n",
        events.len()
    );
    println!("{:<18} {:>8}", "event", "count");
    for kind in KINDS {
        let n = events.iter().filter(|e| e.name == kind).count();
        println!("{kind:<18} {n:>8}");
        if n == 0 {
            return Err(
                format!("no `{kind}` event: the workload should produce every kind").into(),
            );
        }
    }
    for kind in KINDS {
        println!("\nfirst `{kind}` events:");
        for e in events.iter().filter(|e| e.name == kind).take(3) {
            println!("  {}{}", e.name, e.text);
        }
    }

    // 1. The WAL rule as the events show it.
    let mut last_end = 0;
    let mut batch_open = false;
    for e in &events {
        match e.name {
            // The newest end so far: with writers and purge committing on several threads,
            // commit events arrive in any order, not in LSN order.
            "mtr_commit" => last_end = last_end.max(e.fields.get("end").copied().unwrap_or(0)),
            "doublewrite_batch" => batch_open = true,
            "page_write" => {
                let lsn = e.fields.get("lsn").copied().unwrap_or(u64::MAX);
                if lsn > last_end || !batch_open {
                    return Err(format!("page_write{} before its redo or its batch", e.text).into());
                }
            }
            _ => {}
        }
    }
    // 2. Checkpoints only move forward.
    let checkpoints: Vec<u64> = events
        .iter()
        .filter(|e| e.name == "checkpoint")
        .filter_map(|e| e.fields.get("lsn").copied())
        .collect();
    if checkpoints.windows(2).any(|w| w[1] <= w[0]) {
        return Err(format!("checkpoints went backwards: {checkpoints:?}").into());
    }
    // 3. Evicted pages come back through page_read.
    let mut evicted = std::collections::HashSet::new();
    let mut reread = 0;
    for e in &events {
        let page = (
            e.fields.get("space").copied(),
            e.fields.get("page").copied(),
        );
        match e.name {
            "page_evict" => {
                evicted.insert(page);
            }
            "page_read" if evicted.contains(&page) => reread += 1,
            _ => {}
        }
    }
    println!("\nwhat to look at:");
    println!("  - every page_write's lsn is at most the newest mtr_commit end before it, and");
    println!("    follows its doublewrite_batch: the WAL rule and the doublewrite order hold");
    println!(
        "  - {} checkpoints, always forward: {} .. {}",
        checkpoints.len(),
        checkpoints.first().copied().unwrap_or(0),
        checkpoints.last().copied().unwrap_or(0)
    );
    println!("  - {reread} page reads brought back pages evicted earlier (a 32-frame pool)");
    println!("  - splits while the table grew, merges while purge removed the deleted rows");
    Ok(())
}
