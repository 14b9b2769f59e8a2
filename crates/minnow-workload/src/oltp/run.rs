//! Running the scripts: worker threads each with its own session on the tables, per-interval
//! reports from shared counters, and the latency histogram of the summary (the module docs
//! of `oltp` say what one event is and how a run stops).

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use minnow::{ColumnType, Database, Error, Scan, Table, TableDef, Transaction, Value};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::WorkloadError;

use super::*;

/// What happened during one report interval, passed to [`run`]'s report callback.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IntervalReport {
    /// Time since the run started, at the end of this interval.
    pub elapsed: Duration,
    /// Length of this interval (the last one may be short).
    pub interval: Duration,
    /// Worker threads.
    pub threads: usize,
    /// Events completed in this interval.
    pub events: u64,
    /// Events per second (sysbench's tps).
    pub tps: f64,
    /// Queries per second (reads + writes + other).
    pub qps: f64,
    /// Read queries per second.
    pub reads_per_sec: f64,
    /// Write queries per second.
    pub writes_per_sec: f64,
    /// Other queries per second (BEGIN, COMMIT, ROLLBACK; 0 with `skip_trx`).
    pub other_per_sec: f64,
    /// Ignored errors per second (deadlocks, lock wait timeouts, duplicate keys).
    pub errors_per_sec: f64,
    /// 95th percentile event latency in this interval, in milliseconds (0 with no events).
    pub p95_ms: f64,
}

/// Latency percentiles of a whole run, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Fastest event.
    pub min_ms: f64,
    /// Mean.
    pub avg_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile (sysbench's headline figure).
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Slowest event.
    pub max_ms: f64,
}

impl Latency {
    /// The percentiles of a histogram of microseconds (all zero when it is empty).
    pub fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            min_ms: ms(h.min()),
            avg_ms: h.mean() / 1000.0,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p95_ms: ms(h.value_at_quantile(0.95)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        }
    }
}

/// The totals of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The script.
    pub mode: Mode,
    /// Worker threads.
    pub threads: usize,
    /// Time from the start to the last worker's end.
    pub elapsed: Duration,
    /// Events completed (sysbench's "transactions").
    pub events: u64,
    /// Queries in all: `reads + writes + other`.
    pub queries: u64,
    /// Read queries.
    pub reads: u64,
    /// Write queries.
    pub writes: u64,
    /// Other queries: BEGIN, COMMIT and ROLLBACK (0 with `skip_trx`).
    pub other: u64,
    /// Errors ignored as sysbench ignores them: the sum of [`Summary::ignored`]'s counts.
    pub ignored_errors: u64,
    /// The ignored errors by kind.
    pub ignored: IgnoredErrors,
    /// Ignored errors per second.
    pub errors_per_sec: f64,
    /// Events per second.
    pub tps: f64,
    /// Queries per second.
    pub qps: f64,
    /// Event latency.
    pub latency: Latency,
    /// Events completed by each thread (sysbench's "threads fairness").
    pub events_per_thread: Vec<u64>,
    /// True when the stop flag ended the run before its time or event limit.
    pub interrupted: bool,
    /// The run's `skip_trx`: true when statements ran without BEGIN/COMMIT.
    pub skip_trx: bool,
}

/// The errors a run ignored, by kind (sysbench's "ignored errors", split).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct IgnoredErrors {
    /// Deadlocks (MySQL error 1213): the transaction was rolled back and the event restarted.
    pub deadlocks: u64,
    /// Lock wait timeouts (1205): the event rolled back and restarted.
    pub lock_wait_timeouts: u64,
    /// Duplicate keys of delete-inserts (1062). With `skip_trx` the event goes on; in a
    /// transaction it would roll back and restart (it cannot happen there, see the module
    /// docs).
    pub duplicate_keys: u64,
}

impl IgnoredErrors {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.deadlocks + self.lock_wait_timeouts + self.duplicate_keys
    }

    fn add(&mut self, o: &IgnoredErrors) {
        self.deadlocks += o.deadlocks;
        self.lock_wait_timeouts += o.lock_wait_timeouts;
        self.duplicate_keys += o.duplicate_keys;
    }
}

/// Counters of one worker, shared with the reporter.
struct Counters {
    events: u64,
    reads: u64,
    writes: u64,
    other: u64,
    ignored: IgnoredErrors,
    hist: Histogram<u64>,
}

impl Counters {
    fn new() -> Result<Counters, WorkloadError> {
        Ok(Counters {
            events: 0,
            reads: 0,
            writes: 0,
            other: 0,
            ignored: IgnoredErrors::default(),
            hist: new_hist()?,
        })
    }

    fn add(&mut self, o: &Counters) {
        self.events += o.events;
        self.reads += o.reads;
        self.writes += o.writes;
        self.other += o.other;
        self.ignored.add(&o.ignored);
        // Same bounds on both sides, values already clamped: cannot fail.
        let _ = self.hist.add(&o.hist);
    }

    fn reset(&mut self) {
        self.events = 0;
        self.reads = 0;
        self.writes = 0;
        self.other = 0;
        self.ignored = IgnoredErrors::default();
        self.hist.reset();
    }
}

/// Latencies are recorded in microseconds, up to an hour, with 3 significant digits.
pub(crate) const HIST_MAX_US: u64 = 3_600_000_000;

pub(crate) fn new_hist() -> Result<Histogram<u64>, WorkloadError> {
    Histogram::new_with_bounds(1, HIST_MAX_US, 3).map_err(|e| WorkloadError::Setting {
        setting: "histogram",
        reason: e.to_string(),
    })
}

/// One worker's shared state: the interval counters (reset at each report) and its total.
struct Slot {
    interval: Counters,
    total_events: u64,
}

fn lock(m: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    // A worker that panicked poisons its slot; its counters are still the best we have.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(crate) fn per_sec(n: u64, d: Duration) -> f64 {
    let s = d.as_secs_f64();
    if s > 0.0 { n as f64 / s } else { 0.0 }
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Runs the workload on tables [`prepare`] made: `cfg.threads` workers until the time or
/// event limit, or until `stop` is set. `report` runs on the calling thread every
/// `cfg.report_interval`. The first engine error a worker meets (other than the ones sysbench
/// ignores) stops all workers and is returned.
pub fn run(
    db: &Database,
    cfg: &OltpConfig,
    stop: &AtomicBool,
    report: &mut dyn FnMut(&IntervalReport),
) -> Result<Summary, WorkloadError> {
    cfg.validate()?;
    let tables: Vec<Table> = (1..=cfg.tables)
        .map(|n| db.table(&table_name(n)))
        .collect::<Result<_, _>>()?;
    for t in &tables {
        check_schema(t)?;
    }
    let stmts = cfg.statements();
    let slots: Vec<Arc<Mutex<Slot>>> = (0..cfg.threads)
        .map(|_| {
            Ok(Arc::new(Mutex::new(Slot {
                interval: Counters::new()?,
                total_events: 0,
            })))
        })
        .collect::<Result<_, WorkloadError>>()?;
    let started = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let failed = AtomicBool::new(false);
    let start = Instant::now();
    let deadline = cfg.time.map(|t| start + t);
    let mut total = Counters::new()?;
    let mut last_report = start;

    let worker_results = std::thread::scope(|s| {
        let handles: Vec<_> = slots
            .iter()
            .enumerate()
            .map(|(i, slot)| {
                let w = Worker {
                    db,
                    tables: &tables,
                    cfg,
                    stmts,
                    rng: SmallRng::seed_from_u64(
                        cfg.seed
                            .wrapping_add(1)
                            .wrapping_mul(0x2545_F491_4F6C_DD1D)
                            .wrapping_add(i as u64),
                    ),
                };
                let slot = Arc::clone(slot);
                let (started, done, failed) = (&started, &done, &failed);
                s.spawn(move || {
                    let r = w.run(&slot, stop, started, done, deadline);
                    if r.is_err() {
                        failed.store(true, Ordering::SeqCst);
                        done.store(true, Ordering::SeqCst);
                    }
                    r
                })
            })
            .collect();

        // The reporter: this thread, waking at each interval until every worker has ended.
        while !handles.iter().all(|h| h.is_finished()) {
            let next = match cfg.report_interval {
                Some(iv) => last_report + iv,
                None => Instant::now() + Duration::from_millis(50),
            };
            let mut wake = next.min(Instant::now() + Duration::from_millis(20));
            if let Some(d) = deadline {
                wake = wake.min(d.max(Instant::now()));
            }
            std::thread::sleep(wake.saturating_duration_since(Instant::now()));
            if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                done.store(true, Ordering::SeqCst);
            }
            if let Some(iv) = cfg.report_interval {
                let now = Instant::now();
                if now >= last_report + iv {
                    let r = take_interval(&slots, &mut total, now - start, now - last_report, cfg)?;
                    report(&r);
                    last_report = now;
                }
            }
        }
        let results: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(WorkloadError::WorkerPanicked)))
            .collect();
        Ok::<_, WorkloadError>(results)
    })?;
    let elapsed = start.elapsed();
    for r in worker_results {
        r?;
    }
    // What the last report did not see: a final, possibly short, interval.
    let now = Instant::now();
    let tail = take_interval(&slots, &mut total, elapsed, now - last_report, cfg)?;
    if cfg.report_interval.is_some() && tail.events > 0 {
        report(&tail);
    }
    let events_per_thread: Vec<u64> = slots.iter().map(|s| lock(s).total_events).collect();
    let latency = Latency::of(&total.hist);
    let limit_reached = cfg.events.is_some_and(|n| total.events >= n)
        || deadline.is_some_and(|d| Instant::now() >= d);
    let queries = total.reads + total.writes + total.other;
    Ok(Summary {
        mode: cfg.mode,
        threads: cfg.threads,
        elapsed,
        events: total.events,
        queries,
        reads: total.reads,
        writes: total.writes,
        other: total.other,
        ignored_errors: total.ignored.total(),
        ignored: total.ignored,
        errors_per_sec: per_sec(total.ignored.total(), elapsed),
        tps: per_sec(total.events, elapsed),
        qps: per_sec(queries, elapsed),
        latency,
        events_per_thread,
        interrupted: stop.load(Ordering::Relaxed) && !limit_reached,
        skip_trx: cfg.skip_trx,
    })
}

/// Moves every worker's interval counters into `total` and returns the interval's report.
fn take_interval(
    slots: &[Arc<Mutex<Slot>>],
    total: &mut Counters,
    elapsed: Duration,
    interval: Duration,
    cfg: &OltpConfig,
) -> Result<IntervalReport, WorkloadError> {
    let mut iv = Counters::new()?;
    for s in slots {
        let mut g = lock(s);
        iv.add(&g.interval);
        g.interval.reset();
    }
    total.add(&iv);
    let queries = iv.reads + iv.writes + iv.other;
    Ok(IntervalReport {
        elapsed,
        interval,
        threads: cfg.threads,
        events: iv.events,
        tps: per_sec(iv.events, interval),
        qps: per_sec(queries, interval),
        reads_per_sec: per_sec(iv.reads, interval),
        writes_per_sec: per_sec(iv.writes, interval),
        other_per_sec: per_sec(iv.other, interval),
        errors_per_sec: per_sec(iv.ignored.total(), interval),
        p95_ms: if iv.hist.is_empty() {
            0.0
        } else {
            ms(iv.hist.value_at_quantile(0.95))
        },
    })
}

/// Checks that `t` has the columns and index of an `sbtest` table, in order.
fn check_schema(t: &Table) -> Result<(), WorkloadError> {
    let want = table_def(1);
    let def = t.def();
    let names = |d: &TableDef| -> Vec<(String, ColumnType)> {
        d.columns.iter().map(|c| (c.name.clone(), c.ty)).collect()
    };
    let has_k = def
        .indexes
        .iter()
        .any(|i| i.name == K_INDEX && i.columns == ["k"]);
    if names(def) != names(&want) || def.primary_key != ["id"] || !has_k {
        return Err(WorkloadError::Schema {
            table: def.name.clone(),
            reason: "not an sbtest table (expected id, k, c CHAR(120), pad CHAR(60) and index k_1)"
                .into(),
        });
    }
    Ok(())
}

/// One worker thread's state.
struct Worker<'a, 'db> {
    db: &'db Database,
    tables: &'a [Table],
    cfg: &'a OltpConfig,
    stmts: Statements,
    rng: SmallRng,
}

/// What one event did, over all its attempts.
#[derive(Default)]
struct EventCount {
    reads: u64,
    writes: u64,
    other: u64,
    ignored: IgnoredErrors,
    /// Given up (the run stopped while it was being retried): not counted as an event.
    abandoned: bool,
}

/// Where an event's statements run: each on its own, or in one transaction.
enum Session<'t> {
    /// `skip_trx`: autocommit statements.
    Auto,
    /// Inside a transaction.
    Trx(&'t mut Transaction),
}

impl Session<'_> {
    fn get(&mut self, t: &Table, key: &[Value]) -> Result<Option<Vec<Value>>, Error> {
        match self {
            Session::Auto => t.get(key),
            Session::Trx(tx) => tx.get(t, key),
        }
    }

    /// The read of an UPDATE: a locking current read in a transaction.
    fn get_for_update(&mut self, t: &Table, key: &[Value]) -> Result<Option<Vec<Value>>, Error> {
        match self {
            Session::Auto => t.get(key),
            Session::Trx(tx) => tx.get_for_update(t, key),
        }
    }

    fn scan(&mut self, t: &Table, scan: Scan) -> Result<Vec<Vec<Value>>, Error> {
        match self {
            Session::Auto => t.scan(scan)?.collect(),
            Session::Trx(tx) => tx.scan(t, scan)?.collect(),
        }
    }

    /// An UPDATE of a row that is not there (a concurrent delete has just removed it)
    /// changes nothing (0 rows affected), as in MySQL.
    fn update(&mut self, t: &Table, row: &[Value]) -> Result<(), Error> {
        let r = match self {
            Session::Auto => t.update(row).map(|_| ()),
            Session::Trx(tx) => tx.update(t, row),
        };
        match r {
            Ok(()) | Err(Error::RowNotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn delete(&mut self, t: &Table, key: &[Value]) -> Result<(), Error> {
        match self {
            Session::Auto => t.delete(key).map(|_| ()),
            Session::Trx(tx) => tx.delete(t, key).map(|_| ()),
        }
    }

    fn insert(&mut self, t: &Table, row: &[Value]) -> Result<(), Error> {
        match self {
            Session::Auto => t.insert(row).map(|_| ()),
            Session::Trx(tx) => tx.insert(t, row),
        }
    }
}

impl<'a, 'db> Worker<'a, 'db> {
    fn run(
        mut self,
        slot: &Mutex<Slot>,
        stop: &AtomicBool,
        started: &AtomicU64,
        done: &AtomicBool,
        deadline: Option<Instant>,
    ) -> Result<(), WorkloadError> {
        let stopping = || {
            done.load(Ordering::Relaxed)
                || stop.load(Ordering::Relaxed)
                || deadline.is_some_and(|d| Instant::now() >= d)
        };
        loop {
            if stopping() {
                return Ok(());
            }
            if let Some(limit) = self.cfg.events
                && started.fetch_add(1, Ordering::Relaxed) >= limit
            {
                return Ok(());
            }
            let t0 = Instant::now();
            let c = self.event(&stopping)?;
            let us = (t0.elapsed().as_micros() as u64).clamp(1, HIST_MAX_US);
            let mut g = lock(slot);
            g.interval.reads += c.reads;
            g.interval.writes += c.writes;
            g.interval.other += c.other;
            g.interval.ignored.add(&c.ignored);
            if !c.abandoned {
                g.interval.events += 1;
                g.total_events += 1;
                // Clamped to the histogram's bounds: cannot fail.
                let _ = g.interval.hist.record(us);
            }
        }
    }

    fn table(&mut self) -> &'a Table {
        let tables = self.tables;
        &tables[self.rng.random_range(0..tables.len())]
    }

    fn id(&mut self) -> u64 {
        let n = self.cfg.table_size;
        match self.cfg.rand_type {
            RandType::Uniform => self.rng.random_range(1..=n),
            RandType::Special => {
                let hot = (n * u64::from(self.cfg.rand_spec_pct) / 100).max(1);
                let to_hot = self.rng.random_range(0..100u32) < self.cfg.rand_spec_res || hot >= n;
                if to_hot {
                    self.rng.random_range(1..=hot)
                } else {
                    self.rng.random_range(hot + 1..=n)
                }
            }
        }
    }

    /// The first id of a range statement: ranges stay inside 1..=table_size.
    fn range_start(&mut self) -> u64 {
        let id = self.id();
        id.min(
            self.cfg
                .table_size
                .saturating_sub(self.cfg.range_size - 1)
                .max(1),
        )
    }

    fn range(&mut self, s: &mut Session<'_>, column: &str) -> Result<Vec<Vec<Value>>, Error> {
        let start = self.range_start();
        let end = start + self.cfg.range_size - 1;
        let t = self.table();
        s.scan(
            t,
            Scan::range(
                Bound::Included(vec![Value::UInt(start)]),
                Bound::Included(vec![Value::UInt(end)]),
            )
            .columns(&[column]),
        )
    }

    /// One event: its statements, alone or in a transaction retried after the errors
    /// sysbench ignores (see the module docs).
    fn event(&mut self, stopping: &dyn Fn() -> bool) -> Result<EventCount, WorkloadError> {
        let mut c = EventCount::default();
        if self.cfg.skip_trx {
            self.statements(&mut Session::Auto, &mut c)?;
            return Ok(c);
        }
        loop {
            let mut tx = self.db.begin()?;
            c.other += 1; // BEGIN
            let r = self.statements(&mut Session::Trx(&mut tx), &mut c);
            let err = match r {
                Ok(()) => {
                    tx.commit()?;
                    c.other += 1; // COMMIT
                    return Ok(c);
                }
                Err(e) => e,
            };
            match err {
                // The engine has rolled the whole transaction back.
                Error::Deadlock { .. } => c.ignored.deadlocks += 1,
                Error::LockWaitTimeout { .. } => {
                    c.ignored.lock_wait_timeouts += 1;
                    tx.rollback()?;
                    c.other += 1; // ROLLBACK
                }
                Error::DuplicateKey { .. } => {
                    c.ignored.duplicate_keys += 1;
                    tx.rollback()?;
                    c.other += 1;
                }
                e => return Err(e.into()),
            }
            if stopping() {
                c.abandoned = true;
                return Ok(c);
            }
        }
    }

    /// The event's statements, counted into `c` as each one completes. With `skip_trx` a
    /// delete-insert's duplicate key is counted and the event goes on; in a transaction every
    /// error ends the attempt.
    fn statements(&mut self, s: &mut Session<'_>, c: &mut EventCount) -> Result<(), Error> {
        let st = self.stmts;
        for _ in 0..st.point_selects {
            let id = self.id();
            let t = self.table();
            std::hint::black_box(s.get(t, &[Value::UInt(id)])?);
            c.reads += 1;
        }
        for _ in 0..st.simple_ranges {
            std::hint::black_box(self.range(s, "c")?);
            c.reads += 1;
        }
        for _ in 0..st.sum_ranges {
            let rows = self.range(s, "k")?;
            let sum: u64 = rows
                .iter()
                .filter_map(|r| match r.first() {
                    Some(Value::UInt(k)) => Some(*k),
                    _ => None,
                })
                .sum();
            std::hint::black_box(sum);
            c.reads += 1;
        }
        for _ in 0..st.order_ranges {
            let mut cs = c_values(self.range(s, "c")?);
            cs.sort_unstable();
            std::hint::black_box(cs);
            c.reads += 1;
        }
        for _ in 0..st.distinct_ranges {
            let mut cs = c_values(self.range(s, "c")?);
            cs.sort_unstable();
            cs.dedup();
            std::hint::black_box(cs);
            c.reads += 1;
        }
        for _ in 0..st.index_updates {
            let id = self.id();
            let t = self.table();
            if let Some(mut row) = s.get_for_update(t, &[Value::UInt(id)])? {
                if let Some(Value::UInt(k)) = row.get_mut(1) {
                    *k = (*k + 1) % (u64::from(u32::MAX) + 1);
                }
                s.update(t, &row)?;
            }
            c.writes += 1;
        }
        for _ in 0..st.non_index_updates {
            let id = self.id();
            let t = self.table();
            let new_c = c_value(&mut self.rng);
            if let Some(mut row) = s.get_for_update(t, &[Value::UInt(id)])? {
                if let Some(v) = row.get_mut(2) {
                    *v = Value::Bytes(new_c);
                }
                s.update(t, &row)?;
            }
            c.writes += 1;
        }
        for _ in 0..st.delete_inserts {
            let id = self.id();
            let t = self.table();
            s.delete(t, &[Value::UInt(id)])?;
            c.writes += 1;
            let k = self.rng.random_range(1..=self.cfg.table_size);
            let row = [
                Value::UInt(id),
                Value::UInt(k),
                Value::Bytes(c_value(&mut self.rng)),
                Value::Bytes(pad_value(&mut self.rng)),
            ];
            match s.insert(t, &row) {
                Ok(()) => {}
                Err(Error::DuplicateKey { .. }) if matches!(s, Session::Auto) => {
                    c.ignored.duplicate_keys += 1
                }
                Err(e) => return Err(e),
            }
            c.writes += 1;
        }
        Ok(())
    }
}

/// The `c` values of rows scanned with the projection `["c"]`.
fn c_values(rows: Vec<Vec<Value>>) -> Vec<Vec<u8>> {
    rows.into_iter()
        .filter_map(|r| match r.into_iter().next() {
            Some(Value::Bytes(b)) => Some(b),
            _ => None,
        })
        .collect()
}
