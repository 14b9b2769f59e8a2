//! # IO backends: what [`Config::io_backend`](crate::Config::io_backend) can name
//!
//! Every file of a database (tablespaces, redo log, doublewrite segments) is read and written
//! through one [`Backend`]. [`IoBackend::Sync`](crate::IoBackend::Sync) and
//! [`IoBackend::IoUring`](crate::IoBackend::IoUring) pick the two real ones ([`SyncBackend`],
//! `pread`/`pwrite`; [`UringBackend`], `io_uring`); [`IoBackend::Custom`](crate::IoBackend::Custom)
//! takes one you construct, usually a wrapper around a real one:
//!
//! - [`CrashSim`] keeps every write that was not synced in a list and, at
//!   [`CrashSim::power_cut`], decides each one's [`Fate`] from a seed (kept, lost or torn), as
//!   a power failure would: crash tests open the directory again afterwards and check that
//!   recovery brings back exactly what was acknowledged.
//! - [`LatencyModel`] adds the service time of a [`DiskProfile`] (a 7200 rpm disk, an SSD) to
//!   each request, for experiments that ask how a setting behaves on slow storage.
//!
//! These are the `minnow-io` crate's types, re-exported one by one; the crate itself has more
//! for tools that read files directly.
//!
//! ```
//! use std::sync::Arc;
//! use minnow::backend::{CrashSim, SyncBackend};
//! use minnow::{ColumnDef, ColumnType, Config, Database, IoBackend, TableDef, Value};
//!
//! let dir = tempfile::tempdir()?;
//! let sim = Arc::new(CrashSim::new(Arc::new(SyncBackend::new())));
//! let config = Config { io_backend: IoBackend::Custom(sim.clone()), ..Config::default() };
//! {
//!     let db = Database::create(dir.path(), config.clone())?;
//!     let t = db.create_table(TableDef::new("t")
//!         .column(ColumnDef::new("id", ColumnType::U64))
//!         .primary_key(&["id"]))?;
//!     t.insert(&[Value::UInt(1)])?; // acknowledged: its redo was synced at commit
//!     sim.arm(0);                   // the device dies: every later write or sync fails
//! }                                 // (so dropping the database writes nothing more)
//! let report = sim.power_cut(7)?;   // the power goes: each unsynced write kept, lost or torn
//! let db = Database::open(dir.path(), config)?; // recovery
//! assert_eq!(db.table("t")?.get(&[Value::UInt(1)])?, Some(vec![Value::UInt(1)]), "{report}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use minnow_io::{
    Backend, CrashReport, CrashSim, DiskProfile, Fate, LatencyModel, LatencyStats, SyncBackend,
    UringBackend,
};
