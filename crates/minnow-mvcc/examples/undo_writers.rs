//! Writers logging undo at once: THREADS threads each run transactions of 8 undo records
//! (begin, appends, commit) against one transaction system, with 1 and with RSEGS rollback
//! segments, and print the best transactions per second of three rounds for each. With one segment every begin,
//! append and commit of every thread queues on the one segment's lock and latches its header
//! page; with several, threads on different segments do not meet.
//!
//! ```text
//! cargo run --release -p minnow-mvcc --example undo_writers -- THREADS TRXS_PER_THREAD RSEGS
//! ```
//!
//! The buffer pool is a scratch one (its redo log is written, never synced), so what is
//! measured is the undo store's own cost and contention, not the disk.

use std::time::Instant;

use minnow_buf::{BufConfig, BufferPool};
use minnow_mvcc::{NewRecord, RollPtr, TrxSys, UndoFields, UndoKind};
use minnow_page::PageSize;

fn run(threads: usize, trxs: usize, rsegs: usize) -> Result<f64, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let pool =
        BufferPool::create_scratch(dir.path(), BufConfig::with_frames(4096, PageSize::K16), 1)?;
    let (sys, _) = TrxSys::create(&pool, 1, rsegs)?;
    let start = Instant::now();
    std::thread::scope(|s| -> Result<(), String> {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (pool, sys) = (&pool, &sys);
                s.spawn(move || -> Result<(), String> {
                    for x in 0..trxs {
                        let id = sys.assign_id(pool).map_err(|e| e.to_string())?;
                        let mut log = sys.begin_log(pool, id).map_err(|e| e.to_string())?;
                        for i in 0..8u8 {
                            let rec = NewRecord {
                                kind: UndoKind::Update,
                                old_deleted: false,
                                index_id: 9,
                                old_trx_id: 1,
                                old_roll_ptr: RollPtr::NONE,
                                fields: std::borrow::Cow::Owned(UndoFields::from_fields(&[
                                    Some(vec![t as u8, i]),
                                    Some(vec![x as u8; 100]),
                                ])),
                            };
                            sys.append(pool, &mut log, rec).map_err(|e| e.to_string())?;
                        }
                        sys.commit(pool, &log).map_err(|e| e.to_string())?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| "a writer panicked".to_string())??;
        }
        Ok(())
    })?;
    let secs = start.elapsed().as_secs_f64();
    sys.check(&pool)?;
    Ok((threads * trxs) as f64 / secs)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |i: usize, d: usize| -> Result<usize, Box<dyn std::error::Error>> {
        Ok(match std::env::args().nth(i) {
            Some(a) => a.parse()?,
            None => d,
        })
    };
    let (threads, trxs, rsegs) = (arg(1, 2)?, arg(2, 20_000)?, arg(3, 16)?);
    // A warm-up run (the first run in a process is slower whatever it measures), then three
    // rounds alternating the two settings; the best of each is printed.
    run(threads, trxs, rsegs)?;
    let mut best = [0f64; 2];
    for _ in 0..3 {
        for (b, n) in best.iter_mut().zip([1, rsegs]) {
            *b = b.max(run(threads, trxs, n)?);
        }
    }
    for (b, n) in best.iter().zip([1, rsegs]) {
        println!(
            "{threads} threads, {n:>3} rollback segment(s): {b:>10.0} transactions/s (best of 3)"
        );
    }
    Ok(())
}
