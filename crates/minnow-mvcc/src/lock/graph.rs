//! The wait-for graph and the search for cycles in it (deadlock detection).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::TrxId;
use super::key::Fold;
use super::queue::{Queue, WaitState, Waiter};

/// The wait-for graph: each waiting transaction, what it waits for, and its waiter.
#[derive(Debug, Default)]
pub(super) struct Graph {
    pub(super) edges: HashMap<TrxId, (Vec<TrxId>, Arc<Waiter>), Fold>,
}

impl Graph {
    /// Brings the edges of every waiter in `q` up to date.
    pub(super) fn refresh(&mut self, q: &Queue) {
        for (pos, w) in q.waiting.iter().enumerate() {
            self.edges.insert(w.trx, (q.blockers(pos), Arc::clone(w)));
        }
    }

    /// Brings the edges of `q`'s waiters up to date after a grant that did not wait, and ends
    /// every cycle that closed. A grant can add edges without anyone starting to wait: a gap
    /// lock is granted at once, but a queued insert intention waits for it. The youngest
    /// transaction in each such cycle is woken as its victim; returns how many were.
    pub(super) fn refresh_and_break(&mut self, q: &Queue) -> u64 {
        self.refresh(q);
        let mut victims = 0;
        for w in &q.waiting {
            while !w.is_victim() {
                let Some(cycle) = self.cycle_through(w.trx, &[]) else {
                    break;
                };
                let victim = cycle.iter().copied().max().unwrap_or(w.trx);
                let Some((_, v)) = self.edges.get(&victim) else {
                    break;
                };
                v.set(WaitState::Victim(cycle));
                victims += 1;
            }
        }
        victims
    }

    #[cfg(test)]
    pub(super) fn check(&self, at: &str) {
        for (&t, (_, w)) in self.edges.iter() {
            if w.is_victim() {
                continue;
            }
            if let Some(c) = self.cycle_through(t, &[]) {
                panic!(
                    "cycle {c:?} after {at}: {:?}",
                    self.edges
                        .iter()
                        .map(|(t, (e, w))| (*t, e.clone(), w.state.lock().clone()))
                        .collect::<Vec<_>>()
                );
            }
        }
    }

    /// A cycle through `start`, if its edges close one: the transactions on it, `start` first.
    /// Transactions in `skip` count as already leaving, as chosen victims do.
    pub(super) fn cycle_through(&self, start: TrxId, skip: &[TrxId]) -> Option<Vec<TrxId>> {
        // Depth-first search from `start`'s blockers, remembering how each node was reached.
        let mut parent: HashMap<TrxId, TrxId, Fold> = HashMap::default();
        let mut seen: HashSet<TrxId, Fold> = HashSet::default();
        let mut stack = vec![start];
        while let Some(t) = stack.pop() {
            let Some((next, w)) = self.edges.get(&t) else {
                continue;
            };
            // A victim already chosen is about to give way: its edges do not hold anyone.
            if t != start && (skip.contains(&t) || w.is_victim()) {
                continue;
            }
            for &n in next {
                if n == start {
                    let mut cycle = vec![t];
                    let mut at = t;
                    while at != start {
                        match parent.get(&at) {
                            Some(&p) => {
                                cycle.push(p);
                                at = p;
                            }
                            None => break,
                        }
                    }
                    cycle.reverse();
                    return Some(cycle);
                }
                if seen.insert(n) {
                    parent.insert(n, t);
                    stack.push(n);
                }
            }
        }
        None
    }
}
