//! What a table costs when it merely exists: the memory of minnow's table cache per table,
//! whether it comes back when the tables are dropped, and the pages each empty table takes on
//! disk (seed 004, "Wasting InnoDB memory": InnoDB's data dictionary kept 2 to 10 KB per
//! table it had ever opened and never gave it back, 1 GB for 100,000 tables).
//!
//! ## What minnow keeps per table
//!
//! `Database` keeps every table's entry in one map, filled **at open** from the dictionary
//! B-tree (one record per table): the resolved definition, one `BTree` handle per index (its
//! record layouts, its segments, its adaptive-hash-index hook and that hook's state in the
//! hash), the metadata lock and the count cache (the gap latch is one for the database,
//! shared by every table). `drop_table` removes the entry; nothing else holds it once the last
//! `Table` handle is gone.
//!
//! ## How it is measured
//!
//! Memory cannot be estimated honestly from the types alone (every `Vec`, `String`, `Arc`
//! and map node is its own heap block), so [`run`] takes a `heap` function that returns the
//! process's live heap: the `dict_memory` example installs a counting global allocator
//! (bytes requested and blocks live, as `malloc` was asked; `malloc`'s own overhead, about
//! 16 bytes a block, comes on top). The phases, on two fresh databases in `dir`:
//!
//! 1. `empty`: created and closed with no table, as the baseline of an open;
//! 2. `created`: `tables` tables created in a fresh database, the heap compared with before;
//! 3. `reopened`: that database closed and opened again, its heap compared with an open of
//!    the empty one (so the buffer pool's frames, the same in both, cancel out);
//! 4. `dropped`: every table dropped in the reopened database, the heap compared with the
//!    empty database's open;
//! 5. `reopened after drop`: closed and opened once more.
//!
//! The file's pages are read after each close (`ibdata1`'s size over the page size); pages
//! per table compare the full database with the empty one. Each phase's time is measured too:
//! a `create_table` is one dictionary insert (a B-tree insert, no rewrite of the dictionary),
//! a `drop_table` syncs the redo log at its commit point whatever `flush_log_at_trx_commit`
//! says, and an open reads every table's record and opens its trees.

use std::path::Path;
use std::time::Instant;

use minnow::inspect::SYSTEM_TABLESPACE;
use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, TableDef};
use serde::Serialize;

use crate::WorkloadError;

/// The live heap at one moment, as a counting allocator sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Heap {
    /// Bytes requested by blocks that are still allocated.
    pub bytes: i64,
    /// Blocks still allocated.
    pub blocks: i64,
}

impl Heap {
    /// `self - earlier`.
    pub fn since(self, earlier: Heap) -> Heap {
        Heap {
            bytes: self.bytes - earlier.bytes,
            blocks: self.blocks - earlier.blocks,
        }
    }
}

/// The settings of a run.
#[derive(Debug, Clone)]
pub struct DictConfig {
    /// Tables to create (and drop).
    pub tables: u64,
    /// Give each table a secondary index (on its name column).
    pub secondary: bool,
    /// The engine's configuration for every open.
    pub config: Config,
}

/// One phase's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    /// `created`, `reopened`, `dropped`, `reopened after drop`.
    pub name: &'static str,
    /// The heap this phase holds beyond its baseline (see the module docs).
    pub heap: Heap,
    /// `heap.bytes / tables`.
    pub bytes_per_table: f64,
    /// `heap.blocks / tables`.
    pub blocks_per_table: f64,
    /// Seconds the phase's work took (the creates, the open, the drops).
    pub seconds: f64,
    /// `seconds / tables` in microseconds (for an open: per table in the dictionary).
    pub micros_per_table: f64,
    /// Tables the database lists after the phase.
    pub tables_listed: usize,
}

/// What [`run`] measured.
#[derive(Debug, Clone, Serialize)]
pub struct DictResult {
    /// Tables created.
    pub tables: u64,
    /// Whether each had a secondary index.
    pub secondary: bool,
    /// The heap an open of the empty database holds (the buffer pool's frames included).
    pub empty_open: Heap,
    /// The phases in order.
    pub phases: Vec<Phase>,
    /// Pages in `ibdata1` of the empty database, of the full one, and after the drops.
    pub file_pages: [u64; 3],
    /// `(full - empty) / tables`.
    pub pages_per_table: f64,
}

/// A small table of the article's shape: a few columns, a primary key and, if `secondary`,
/// one secondary index.
pub fn table_def(name: &str, secondary: bool) -> TableDef {
    let def = TableDef::new(name)
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("name", ColumnType::Var(40)))
        .column(ColumnDef::new("created", ColumnType::U32))
        .column(ColumnDef::nullable("note", ColumnType::Var(200)))
        .primary_key(&["id"]);
    if secondary {
        def.index(IndexDef::new("by_name", &["name"]))
    } else {
        def
    }
}

fn table_name(i: u64) -> String {
    format!("t{i:06}")
}

fn file_pages(dir: &Path, config: &Config) -> Result<u64, WorkloadError> {
    let path = dir.join(SYSTEM_TABLESPACE);
    let len = std::fs::metadata(&path)
        .map_err(|e| WorkloadError::Setting {
            setting: "dir",
            reason: format!("{}: {e}", path.display()),
        })?
        .len();
    Ok(len / config.page_size.bytes() as u64)
}

/// Runs the phases of the module docs in `dir` (which must be empty or missing), reading the
/// live heap with `heap`, and reports each phase through `progress` as it ends.
pub fn run(
    dir: &Path,
    cfg: &DictConfig,
    heap: &dyn Fn() -> Heap,
    progress: &mut dyn FnMut(&Phase),
) -> Result<DictResult, WorkloadError> {
    if cfg.tables == 0 {
        return Err(WorkloadError::Setting {
            setting: "tables",
            reason: "must be at least 1".into(),
        });
    }
    let (empty_dir, full_dir) = (dir.join("empty"), dir.join("full"));
    let config = &cfg.config;
    Database::create(&empty_dir, config.clone())?.close()?;
    let empty_pages = file_pages(&empty_dir, config)?;
    // The baseline of an open: the empty database opened, measured, closed.
    let before = heap();
    let db = Database::open(&empty_dir, config.clone())?;
    let empty_open = heap().since(before);
    db.close()?;

    let n = cfg.tables;
    let mut phases = Vec::new();
    let mut phase = |name, heap: Heap, seconds: f64, db: &Database| -> Result<(), WorkloadError> {
        let p = Phase {
            name,
            heap,
            bytes_per_table: heap.bytes as f64 / n as f64,
            blocks_per_table: heap.blocks as f64 / n as f64,
            seconds,
            micros_per_table: seconds * 1e6 / n as f64,
            tables_listed: db.tables()?.len(),
        };
        progress(&p);
        phases.push(p);
        Ok(())
    };

    // Created: the heap the tables add to a fresh database.
    let db = Database::create(&full_dir, config.clone())?;
    let before = heap();
    let t = Instant::now();
    for i in 0..n {
        db.create_table(table_def(&table_name(i), cfg.secondary))?;
    }
    let secs = t.elapsed().as_secs_f64();
    phase("created", heap().since(before), secs, &db)?;
    db.close()?;
    let full_pages = file_pages(&full_dir, config)?;

    // Reopened: the whole dictionary is loaded at open.
    let (db, after_open) = open_measured(&full_dir, config, heap)?;
    phase(
        "reopened",
        after_open.0.since(empty_open),
        after_open.1,
        &db,
    )?;

    // Dropped: every table, in the same process.
    let t = Instant::now();
    for i in 0..n {
        db.drop_table(&table_name(i))?;
    }
    let secs = t.elapsed().as_secs_f64();
    let held = heap().since(after_open.2);
    phase("dropped", held.since(empty_open), secs, &db)?;
    db.close()?;
    let dropped_pages = file_pages(&full_dir, config)?;

    let (db, again) = open_measured(&full_dir, config, heap)?;
    phase(
        "reopened after drop",
        again.0.since(empty_open),
        again.1,
        &db,
    )?;
    db.close()?;

    Ok(DictResult {
        tables: n,
        secondary: cfg.secondary,
        empty_open,
        phases,
        file_pages: [empty_pages, full_pages, dropped_pages],
        pages_per_table: full_pages.saturating_sub(empty_pages) as f64 / n as f64,
    })
}

/// Opens `dir`: the database, the heap it holds, the seconds the open took and the heap
/// reading taken before it (the base the open's own heap is measured from).
fn open_measured(
    dir: &Path,
    config: &Config,
    heap: &dyn Fn() -> Heap,
) -> Result<(Database, (Heap, f64, Heap)), WorkloadError> {
    let before = heap();
    let t = Instant::now();
    let db = Database::open(dir, config.clone())?;
    let secs = t.elapsed().as_secs_f64();
    Ok((db, (heap().since(before), secs, before)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_run_and_the_tables_come_and_go() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = DictConfig {
            tables: 20,
            secondary: true,
            config: Config {
                buffer_pool_size: 4 << 20,
                flush_log_at_trx_commit: minnow::FlushAtCommit::Lazy,
                ..Config::default()
            },
        };
        let mut names = Vec::new();
        let r = run(dir.path(), &cfg, &Heap::default, &mut |p| {
            names.push(p.name)
        })
        .unwrap();
        assert_eq!(
            names,
            ["created", "reopened", "dropped", "reopened after drop"]
        );
        let listed: Vec<_> = r.phases.iter().map(|p| p.tables_listed).collect();
        assert_eq!(listed, [20, 20, 0, 0]);
        // Two empty trees a table: at least two root pages each.
        assert!(r.pages_per_table >= 2.0, "{r:?}");
        assert!(r.file_pages[1] > r.file_pages[0], "{r:?}");
    }
}
