//! What a running database lets an application change or read about its engine, as MySQL's
//! `SET GLOBAL` and its status counters do: admission control (`innodb_thread_concurrency`,
//! `innodb_concurrency_tickets`; the door itself is `minnow_engine::admission`) and the
//! adaptive hash index (`innodb_adaptive_hash_index`; the hash is `minnow-ahi`, its hooks on
//! each table's trees `minnow_engine::entry`).

use minnow_ahi::AhiStats;
use minnow_engine::admission::{AdmissionStats, Ticket};

use crate::db::Database;
use crate::error::Result;

impl Database {
    /// A statement's admission ticket (see `minnow_engine::admission`).
    #[inline]
    pub(crate) fn admit(&self) -> Ticket<'_> {
        match self.inner() {
            Ok(inner) => inner.admission().enter(),
            Err(_) => Ticket::none(),
        }
    }

    /// Changes `thread_concurrency` (0: no limit) and `concurrency_tickets` at runtime
    /// (`SET GLOBAL innodb_thread_concurrency`, `innodb_concurrency_tickets`). Statements
    /// already inside stay inside.
    pub fn set_thread_concurrency(
        &self,
        thread_concurrency: usize,
        concurrency_tickets: u32,
    ) -> Result<()> {
        self.inner()?
            .admission()
            .set(thread_concurrency, concurrency_tickets);
        Ok(())
    }

    /// `thread_concurrency` / `concurrency_tickets` counters: threads inside and waiting
    /// now, the peak inside, entries and waits (see [`AdmissionStats`]).
    pub fn admission_stats(&self) -> Result<AdmissionStats> {
        Ok(self.inner()?.admission().stats())
    }
}

impl Database {
    /// The adaptive hash index's counters and sizes: probes, hits, misses, descents avoided,
    /// pages hashed, entries, memory (see [`AhiStats`]).
    pub fn ahi_stats(&self) -> Result<AhiStats> {
        Ok(self.inner()?.ahi().stats())
    }

    /// Switches the adaptive hash index on or off at runtime (`SET GLOBAL
    /// innodb_adaptive_hash_index`). Off empties it, one partition at a time; on, it
    /// learns again from nothing.
    pub fn set_adaptive_hash_index(&self, on: bool) -> Result<()> {
        self.inner()?.ahi().set_enabled(on);
        Ok(())
    }
}
