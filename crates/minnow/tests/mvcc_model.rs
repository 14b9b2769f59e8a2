//! MVCC against a model of committed states.
//!
//! `interleavings_match_the_model` (proptest): random interleavings of four transactions'
//! statements (begun at either isolation level) plus autocommit statements, over a small key
//! space: inserts, updates and deletes that change both secondary keys, point gets, primary
//! key scans (forward and reverse), secondary scans covering and not, commits, rollbacks, and
//! statements that fail on a duplicate primary or unique key or a missing row. The model keeps
//! every committed state, so it knows exactly what each read must return: REPEATABLE READ
//! reads the state committed at the transaction's first read, READ COMMITTED the state
//! committed at each statement, both with the transaction's own writes on top; writes act on
//! the latest committed state. A write that may wait for a row lock another open transaction
//! holds (an insert: also one that may wait for a gap lock) is mostly left out; the few that run (with a 1 ms lock_wait_timeout) must either time
//! out, changing nothing, or do what the model says. At the end the table equals the last
//! committed state through every index, no lock is held and `check()` passes.
//!
//! Every primary-key scan step also checks `count()` (by the snapshot of the same slot).
//!
//! `snapshots_see_whole_generations` (threads): writer threads each commit or roll back
//! transactions that give every row of the table one new generation number (by updates,
//! or a delete and a re-insert), which changes every row's secondary key; reader threads take
//! snapshots at both levels meanwhile and check that each snapshot (a REPEATABLE READ
//! transaction, or one READ COMMITTED statement) sees exactly one generation on every row,
//! through the primary key, point gets and the secondary index (covering and fetching), the
//! same one on every read of a REPEATABLE READ transaction, only committed ones and never one
//! that was rolled back.
//!
//! `MINNOW_MVCC_CASES=N` runs N proptest cases (default 24); `MINNOW_MVCC_ROUNDS=N` makes
//! each writer thread commit N generations (default 25).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::time::Duration;

use minnow::{
    ColumnDef, ColumnType, Config, Database, Error, IndexDef, Isolation, Scan, Table, TableDef,
    Transaction, Value,
};
use proptest::prelude::*;

#[path = "mvcc_model/generations.rs"]
mod generations;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// ---- The model ----

const SLOTS: usize = 4;
/// Tries of a write that timed out where the model expects no wait (a purge lock caught in
/// passing), 5 ms apart.
const PURGE_RETRIES: usize = 20;
const KEYS: u64 = 6;

/// `m(k U64 PK, a I64, u I64 NULL)`, `by_a(a)`, unique `by_u(u)`.
fn table_def() -> TableDef {
    TableDef::new("m")
        .column(ColumnDef::new("k", ColumnType::U64))
        .column(ColumnDef::new("a", ColumnType::I64))
        .column(ColumnDef::nullable("u", ColumnType::I64))
        .primary_key(&["k"])
        .index(IndexDef::new("by_a", &["a"]))
        .index(IndexDef::unique("by_u", &["u"]))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    a: i64,
    u: Option<i64>,
}

type State = BTreeMap<u64, Row>;

fn values(k: u64, r: Row) -> Vec<Value> {
    vec![
        Value::UInt(k),
        Value::Int(r.a),
        r.u.map_or(Value::Null, Value::Int),
    ]
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum LockK {
    Row(u64),
    U(i64),
}

/// An open transaction in the model.
#[derive(Debug, Default)]
struct MTx {
    rc: bool,
    /// REPEATABLE READ: the index of the committed state its first read saw.
    view: Option<usize>,
    /// Its own writes (`None`: deleted).
    writes: BTreeMap<u64, Option<Row>>,
    /// Every lock it may hold (a superset: each key a statement tried to lock).
    locks: BTreeSet<LockK>,
    /// It may hold a gap lock: a REPEATABLE READ write by key that found no row locks the gap
    /// the row would be in (which gap depends on delete-marked records the model does not
    /// know, and grows when purge removes one), so any insert may wait for it.
    gaps: bool,
}

#[derive(Debug, Default)]
struct Model {
    /// Every committed state, oldest first.
    history: Vec<State>,
    txs: [Option<MTx>; SLOTS],
    /// Every primary key that ever had each `u` (the unique index keeps delete-marked
    /// entries of old versions, and a unique check waits on an active writer of their row).
    ever_u: BTreeMap<i64, BTreeSet<u64>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ok,
    Deleted(bool),
    Dup(&'static str),
    NotFound,
    Timeout,
}

fn outcome(r: minnow::Result<Option<bool>>) -> Outcome {
    match r {
        Ok(None) => Outcome::Ok,
        Ok(Some(d)) => Outcome::Deleted(d),
        Err(Error::DuplicateKey { index, .. }) if index == "PRIMARY" => Outcome::Dup("PRIMARY"),
        Err(Error::DuplicateKey { index, .. }) if index == "by_u" => Outcome::Dup("by_u"),
        Err(Error::RowNotFound { .. }) => Outcome::NotFound,
        Err(Error::LockWaitTimeout { .. }) => Outcome::Timeout,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn overlay(base: &State, writes: &BTreeMap<u64, Option<Row>>) -> State {
    let mut s = base.clone();
    for (k, w) in writes {
        match w {
            Some(r) => s.insert(*k, *r),
            None => s.remove(k),
        };
    }
    s
}

impl Model {
    fn latest(&self) -> &State {
        self.history.last().expect("history is never empty")
    }

    /// What a read by `slot` (`None`: autocommit) sees, taking the REPEATABLE READ view at the
    /// first read.
    fn read(&mut self, slot: Option<usize>) -> State {
        let last = self.history.len() - 1;
        let Some(tx) = slot.and_then(|s| self.txs[s].as_mut()) else {
            return self.latest().clone();
        };
        let at = if tx.rc {
            last
        } else {
            *tx.view.get_or_insert(last)
        };
        overlay(&self.history[at], &tx.writes)
    }

    /// The state a write by `slot` acts on: the latest committed rows and its own writes.
    fn current(&self, slot: Option<usize>) -> State {
        match slot.and_then(|s| self.txs[s].as_ref()) {
            Some(tx) => overlay(self.latest(), &tx.writes),
            None => self.latest().clone(),
        }
    }

    fn held_by_other(&self, slot: Option<usize>, l: &LockK) -> bool {
        self.txs
            .iter()
            .enumerate()
            .any(|(i, t)| Some(i) != slot && t.as_ref().is_some_and(|t| t.locks.contains(l)))
    }

    /// True if the write might wait for a lock another open transaction holds.
    fn may_block(&self, slot: Option<usize>, w: &Write) -> bool {
        let (k, u) = match *w {
            Write::Insert(k, r) | Write::Update(k, r) => (k, r.u),
            Write::Delete(k) => (k, None),
        };
        if self.held_by_other(slot, &LockK::Row(k)) {
            return true;
        }
        let gap_locked = self
            .txs
            .iter()
            .enumerate()
            .any(|(i, t)| Some(i) != slot && t.as_ref().is_some_and(|t| t.gaps));
        if matches!(w, Write::Insert(..)) && gap_locked {
            return true;
        }
        let Some(x) = u else { return false };
        self.held_by_other(slot, &LockK::U(x))
            || self.ever_u.get(&x).is_some_and(|pks| {
                pks.iter()
                    .any(|&p| p != k && self.held_by_other(slot, &LockK::Row(p)))
            })
    }

    /// What the write does if it does not wait.
    fn expect(&self, slot: Option<usize>, w: &Write) -> Outcome {
        let cur = self.current(slot);
        let u_taken =
            |k: u64, u: Option<i64>| u.is_some() && cur.iter().any(|(&p, r)| p != k && r.u == u);
        match *w {
            Write::Insert(k, r) => {
                if cur.contains_key(&k) {
                    Outcome::Dup("PRIMARY")
                } else if u_taken(k, r.u) {
                    Outcome::Dup("by_u")
                } else {
                    Outcome::Ok
                }
            }
            Write::Update(k, r) => match cur.get(&k) {
                None => Outcome::NotFound,
                Some(old) if old.u != r.u && u_taken(k, r.u) => Outcome::Dup("by_u"),
                Some(_) => Outcome::Ok,
            },
            Write::Delete(k) => Outcome::Deleted(cur.contains_key(&k)),
        }
    }

    /// Records a write attempt (its locks, its `u`) and, if it succeeded, its effect.
    fn apply(&mut self, slot: Option<usize>, w: &Write, result: Outcome) {
        let (k, row) = match *w {
            Write::Insert(k, r) | Write::Update(k, r) => (k, Some(r)),
            Write::Delete(k) => (k, None),
        };
        if let Some(x) = row.and_then(|r| r.u) {
            self.ever_u.entry(x).or_default().insert(k);
        }
        if let Some(tx) = slot.and_then(|s| self.txs[s].as_mut()) {
            let absent = matches!(result, Outcome::NotFound | Outcome::Deleted(false));
            tx.gaps |= absent && !tx.rc;
            tx.locks.insert(LockK::Row(k));
            if let Some(x) = row.and_then(|r| r.u) {
                tx.locks.insert(LockK::U(x));
            }
        }
        let changed = matches!(result, Outcome::Ok | Outcome::Deleted(true));
        if !changed {
            return;
        }
        match slot.and_then(|s| self.txs[s].as_mut()) {
            Some(tx) => {
                tx.writes.insert(k, row);
            }
            None => {
                let mut s = self.latest().clone();
                match row {
                    Some(r) => s.insert(k, r),
                    None => s.remove(&k),
                };
                self.history.push(s);
            }
        }
    }

    fn commit(&mut self, slot: usize) {
        if let Some(tx) = self.txs[slot].take()
            && !tx.writes.is_empty()
        {
            let s = overlay(self.latest(), &tx.writes);
            self.history.push(s);
        }
    }
}

// ---- Steps ----

#[derive(Debug, Clone, Copy)]
enum Write {
    Insert(u64, Row),
    Update(u64, Row),
    Delete(u64),
}

#[derive(Debug, Clone)]
enum Action {
    Write(Write),
    Get(u64),
    /// Primary key scan `[lo, hi)`, maybe reversed.
    Scan(u64, u64, bool),
    /// `by_a` scan over `[lo, hi]`, covering or not.
    ScanA(i64, i64, bool),
    /// `by_u` scan over `[lo, hi]` (`None`: everything, NULLs first), covering or not.
    ScanU(Option<(i64, i64)>, bool),
    Commit,
    Rollback,
}

/// One step: `slot` < 4 is a transaction (begun first if none is open in it), 4 is an
/// autocommit statement.
#[derive(Debug, Clone)]
struct Step {
    slot: usize,
    rc: bool,
    /// Run the write even if it may wait for a lock.
    force: bool,
    action: Action,
}

fn row_strategy() -> impl Strategy<Value = Row> {
    (0..3i64, prop::option::weighted(0.7, 0..4i64)).prop_map(|(a, u)| Row { a, u })
}

fn action_strategy() -> impl Strategy<Value = Action> {
    prop_oneof![
        5 => (0..KEYS, row_strategy()).prop_map(|(k, r)| Action::Write(Write::Insert(k, r))),
        4 => (0..KEYS, row_strategy()).prop_map(|(k, r)| Action::Write(Write::Update(k, r))),
        2 => (0..KEYS).prop_map(|k| Action::Write(Write::Delete(k))),
        3 => (0..KEYS).prop_map(Action::Get),
        2 => (0..KEYS, 0..=KEYS, any::<bool>()).prop_map(|(lo, hi, r)| Action::Scan(lo, hi, r)),
        2 => (0..3i64, 0..3i64, any::<bool>()).prop_map(|(lo, hi, c)| Action::ScanA(lo, hi, c)),
        2 => (prop::option::of((0..4i64, 0..4i64)), any::<bool>())
            .prop_map(|(r, c)| Action::ScanU(r, c)),
        2 => Just(Action::Commit),
        1 => Just(Action::Rollback),
    ]
}

fn step_strategy() -> impl Strategy<Value = Step> {
    (
        0..=SLOTS,
        any::<bool>(),
        prop::bool::weighted(0.1),
        action_strategy(),
    )
        .prop_map(|(slot, rc, force, action)| Step {
            slot,
            rc,
            force,
            action,
        })
}

// ---- Running against minnow ----

fn collect(rows: minnow::Result<minnow::Rows>) -> Vec<Vec<Value>> {
    rows.unwrap().collect::<minnow::Result<_>>().unwrap()
}

/// Reads through a transaction or autocommit.
fn read(
    tx: Option<&mut Transaction>,
    t: &Table,
    index: Option<&str>,
    scan: Scan,
    covering: bool,
) -> Vec<Vec<Value>> {
    let rows = match (tx, index) {
        (Some(tx), None) => tx.scan(t, scan),
        (Some(tx), Some(i)) => tx.scan_index(t, i, scan),
        (None, None) => t.scan(scan),
        (None, Some(i)) => t.scan_index(i, scan),
    };
    if index.is_some() {
        let r = rows.as_ref().unwrap();
        assert_eq!(r.is_covering(), covering, "covering");
    }
    collect(rows)
}

fn incl(v: Value) -> Bound<Vec<Value>> {
    Bound::Included(vec![v])
}

fn run_case(steps: &[Step]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        lock_wait_timeout: Duration::from_millis(1),
        ..Config::default()
    };
    let db = Database::create(dir.path(), config).unwrap();
    let t = db.create_table(table_def()).unwrap();
    // Rows 0..4 exist from the start, row k with u = k.
    let mut first = State::new();
    for k in 0..4 {
        let r = Row {
            a: k as i64 % 3,
            u: Some(k as i64),
        };
        t.insert(&values(k, r)).unwrap();
        first.insert(k, r);
    }
    let mut model = Model {
        history: vec![first],
        ..Model::default()
    };
    for k in 0..4 {
        model.ever_u.entry(k as i64).or_default().insert(k);
    }
    let mut txs: Vec<Option<Transaction>> = (0..SLOTS).map(|_| None).collect();
    for (n, step) in steps.iter().enumerate() {
        let slot = (step.slot < SLOTS).then_some(step.slot);
        if let Some(s) = slot
            && txs[s].is_none()
        {
            if matches!(step.action, Action::Commit | Action::Rollback) {
                continue;
            }
            let iso = if step.rc {
                Isolation::ReadCommitted
            } else {
                Isolation::RepeatableRead
            };
            txs[s] = Some(db.begin_with(iso).unwrap());
            model.txs[s] = Some(MTx {
                rc: step.rc,
                ..MTx::default()
            });
        }
        let ctx = format!("step {n}: {step:?}");
        match &step.action {
            Action::Write(w) => {
                let blocked = model.may_block(slot, w);
                if blocked && !step.force {
                    continue;
                }
                let expected = model.expect(slot, w);
                let mut write = || {
                    outcome(match (slot.and_then(|s| txs[s].as_mut()), *w) {
                        (Some(tx), Write::Insert(k, r)) => {
                            tx.insert(&t, &values(k, r)).map(|_| None)
                        }
                        (Some(tx), Write::Update(k, r)) => {
                            tx.update(&t, &values(k, r)).map(|_| None)
                        }
                        (Some(tx), Write::Delete(k)) => tx.delete(&t, &[Value::UInt(k)]).map(Some),
                        (None, Write::Insert(k, r)) => t.insert(&values(k, r)).map(|_| None),
                        (None, Write::Update(k, r)) => t.update(&values(k, r)).map(|_| None),
                        (None, Write::Delete(k)) => t.delete(&[Value::UInt(k)]).map(Some),
                    })
                };
                let mut got = write();
                // Purge's background thread holds the row lock of the record it purges for
                // a moment; on a loaded machine that moment can outlast the 1 ms timeout. A
                // timeout changes nothing, so a wait the model does not expect is retried:
                // a purge lock is gone by the next try, a lock the model missed is not.
                for _ in 0..PURGE_RETRIES {
                    if got != Outcome::Timeout || blocked {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                    got = write();
                }
                if got == Outcome::Timeout {
                    prop_assert!(blocked, "{ctx}: a lock wait the model did not expect");
                } else {
                    prop_assert_eq!(got, expected, "{}", ctx);
                }
                model.apply(slot, w, got);
            }
            Action::Get(k) => {
                let want = model.read(slot).get(k).map(|r| values(*k, *r));
                let got = match slot.and_then(|s| txs[s].as_mut()) {
                    Some(tx) => tx.get(&t, &[Value::UInt(*k)]).unwrap(),
                    None => t.get(&[Value::UInt(*k)]).unwrap(),
                };
                prop_assert_eq!(got, want, "{}", ctx);
            }
            Action::Scan(lo, hi, rev) => {
                let mut want: Vec<Vec<Value>> = model
                    .read(slot)
                    .range(*lo..(*hi).max(*lo))
                    .map(|(k, r)| values(*k, *r))
                    .collect();
                let mut scan = Scan::range(
                    incl(Value::UInt(*lo)),
                    Bound::Excluded(vec![Value::UInt((*hi).max(*lo))]),
                );
                if *rev {
                    scan = scan.reverse();
                    want.reverse();
                }
                let got = read(slot.and_then(|s| txs[s].as_mut()), &t, None, scan, true);
                prop_assert_eq!(got, want, "{}", ctx);
                // count() walks the narrowest index (by_a here) and must agree with the model.
                let rows = model.read(slot).len() as u64;
                let n = match slot.and_then(|s| txs[s].as_mut()) {
                    Some(tx) => tx.count(&t).unwrap(),
                    None => t.count().unwrap(),
                };
                prop_assert_eq!(n, rows, "{}: count", ctx);
            }
            Action::ScanA(lo, hi, covering) => {
                let (lo, hi) = (*lo.min(hi), *lo.max(hi));
                let state = model.read(slot);
                let mut hits: Vec<(i64, u64, Row)> = state
                    .iter()
                    .filter(|(_, r)| (lo..=hi).contains(&r.a))
                    .map(|(k, r)| (r.a, *k, *r))
                    .collect();
                hits.sort_by_key(|h| (h.0, h.1));
                let (cols, want): (&[&str], Vec<Vec<Value>>) = if *covering {
                    (
                        &["a", "k"],
                        hits.iter()
                            .map(|h| vec![Value::Int(h.0), Value::UInt(h.1)])
                            .collect(),
                    )
                } else {
                    (
                        &["k", "a", "u"],
                        hits.iter().map(|h| values(h.1, h.2)).collect(),
                    )
                };
                let scan = Scan::range(incl(Value::Int(lo)), incl(Value::Int(hi))).columns(cols);
                let got = read(
                    slot.and_then(|s| txs[s].as_mut()),
                    &t,
                    Some("by_a"),
                    scan,
                    *covering,
                );
                prop_assert_eq!(got, want, "{}", ctx);
            }
            Action::ScanU(range, covering) => {
                let state = model.read(slot);
                let mut hits: Vec<(Option<i64>, u64, Row)> = state
                    .iter()
                    .filter(|(_, r)| match range {
                        None => true,
                        Some((lo, hi)) => {
                            r.u.is_some_and(|u| (*lo.min(hi)..=*lo.max(hi)).contains(&u))
                        }
                    })
                    .map(|(k, r)| (r.u, *k, *r))
                    .collect();
                hits.sort_by_key(|h| (h.0, h.1));
                let (cols, want): (&[&str], Vec<Vec<Value>>) = if *covering {
                    (
                        &["u", "k"],
                        hits.iter()
                            .map(|h| vec![h.0.map_or(Value::Null, Value::Int), Value::UInt(h.1)])
                            .collect(),
                    )
                } else {
                    (
                        &["k", "a", "u"],
                        hits.iter().map(|h| values(h.1, h.2)).collect(),
                    )
                };
                let scan = match range {
                    None => Scan::all(),
                    Some((lo, hi)) => {
                        Scan::range(incl(Value::Int(*lo.min(hi))), incl(Value::Int(*lo.max(hi))))
                    }
                }
                .columns(cols);
                let got = read(
                    slot.and_then(|s| txs[s].as_mut()),
                    &t,
                    Some("by_u"),
                    scan,
                    *covering,
                );
                prop_assert_eq!(got, want, "{}", ctx);
            }
            Action::Commit => {
                if let Some(s) = slot {
                    txs[s].take().unwrap().commit().unwrap();
                    model.commit(s);
                }
            }
            Action::Rollback => {
                if let Some(s) = slot {
                    txs[s].take().unwrap().rollback().unwrap();
                    model.txs[s] = None;
                }
            }
        }
    }
    // Commit what is open, oldest slot first, and compare the end state everywhere.
    for (s, tx) in txs.iter_mut().enumerate() {
        if let Some(tx) = tx.take() {
            tx.commit().unwrap();
            model.commit(s);
        }
    }
    let want: Vec<Vec<Value>> = model.latest().iter().map(|(k, r)| values(*k, *r)).collect();
    prop_assert_eq!(collect(t.scan(Scan::all())), want.clone());
    let mut by_a: Vec<(i64, u64, Row)> =
        model.latest().iter().map(|(k, r)| (r.a, *k, *r)).collect();
    by_a.sort_by_key(|h| (h.0, h.1));
    let by_a: Vec<Vec<Value>> = by_a.iter().map(|h| values(h.1, h.2)).collect();
    prop_assert_eq!(collect(t.scan_index("by_a", Scan::all())), by_a);
    // Purge's background thread locks the row it purges, one at a time: purge here first (it
    // takes purge's turn, so the thread's batch ends), so that the counts are what the
    // transactions left, not a purge lock caught in passing.
    db.purge().unwrap();
    let stats = db.lock_stats().unwrap();
    prop_assert_eq!((stats.held, stats.waiting), (0, 0));
    db.check().unwrap();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: env("MINNOW_MVCC_CASES", 24) as u32,
        ..ProptestConfig::default()
    })]

    #[test]
    fn interleavings_match_the_model(steps in prop::collection::vec(step_strategy(), 1..120)) {
        run_case(&steps)?;
    }
}
