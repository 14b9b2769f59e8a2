//! Tests of log reservations (`log::space`): what mtrs between their start and their append
//! hold, and what an append bigger than its reservation may take.

use crate::block::{BLOCK_SIZE, DATA_SIZE};
use crate::log::{Log, LogError, Reservation};
use crate::record::{Record, encode_group};
use minnow_io::{Backend, FlushMethod, OpenOptions, SyncBackend};
use minnow_page::PageId;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A new log of `capacity` bytes in `dir`, with no checkpoint requester.
fn log_in(dir: &Path, capacity: u64) -> Log {
    let file = SyncBackend::new()
        .open(
            &dir.join("redo.log"),
            &OpenOptions::new(FlushMethod::Fsync).create(true),
        )
        .unwrap();
    Log::create(file, capacity).unwrap()
}

/// An encoded group of exactly `len` bytes (one WRITE record filling it; the lengths in
/// the encoding grow with the data, so the data shrinks until the whole fits; `len` must
/// not sit just past a boundary of those lengths, such as 16 384).
fn group_of(len: usize) -> Vec<u8> {
    let encode = |data: usize| {
        encode_group(&[Record::Write {
            page: PageId::new(1, 3),
            offset: 0,
            data: vec![7; data],
        }])
    };
    let mut data = len;
    loop {
        let g = encode(data);
        if g.len() == len {
            return g;
        }
        data -= g.len().saturating_sub(len).max(1);
    }
}

/// Takes reservations of `margin` until the log refuses one.
fn reserve_all(log: &Log, margin: u64) -> Vec<Reservation<'_>> {
    let mut held = Vec::new();
    loop {
        match log.reserve(margin, Duration::ZERO) {
            Ok(r) => held.push(r),
            Err(LogError::LogFull { .. }) => return held,
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn reservations_add_up_and_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let capacity = 256 * BLOCK_SIZE as u64;
    let log = log_in(dir.path(), capacity);
    let margin = 4 * DATA_SIZE as u64;
    let held = reserve_all(&log, margin);
    // Each holds its group's blocks and one more; together they stay within the 15/16 of
    // the log reservations may take, and another one would not have fit.
    let each = 5 * BLOCK_SIZE as u64;
    assert!(held.iter().all(|r| r.bytes() == each));
    assert_eq!(log.reserved(), held.len() as u64 * each);
    assert!(log.reserved() + BLOCK_SIZE as u64 <= capacity - capacity / 16);
    assert!(log.reserved() + BLOCK_SIZE as u64 + each > capacity - capacity / 16);
    // A free check reserves nothing, and finds no room either.
    assert!(matches!(
        log.free_check(margin, Duration::ZERO),
        Err(LogError::LogFull { .. })
    ));
    assert_eq!(log.reserved(), held.len() as u64 * each);
    // Dropping them gives their room back.
    drop(held);
    assert_eq!(log.reserved(), 0);
    log.free_check(margin, Duration::ZERO).unwrap();
    // A reservation bigger than the log could ever hold fails at once, even with a timeout.
    assert!(matches!(
        log.reserve(capacity, Duration::from_secs(60)),
        Err(LogError::LogFull { .. })
    ));
}

/// The bug reservations fix: writers that all started while the log had room for each of
/// them alone must all be able to append.
#[test]
fn every_append_within_its_reservation_fits() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path(), 256 * BLOCK_SIZE as u64);
    let margin = 4 * DATA_SIZE;
    let held = reserve_all(&log, margin as u64);
    assert!(held.len() >= 40, "{}", held.len());
    let g = group_of(margin);
    for r in held {
        log.append_reserved(&g, r).unwrap();
    }
    assert_eq!(log.reserved(), 0);
    // A plain append (no reservation) still fits in what is left.
    log.append(&group_of(DATA_SIZE)).unwrap();
}

/// An append bigger than its reservation takes the rest from space no one reserved (the
/// 1/16 reservations may not take, here), never from another writer's; one that does not
/// fit even so fails, appends nothing, and gives its reservation back.
#[test]
fn an_append_bigger_than_its_reservation_takes_only_unreserved_room() {
    let dir = tempfile::tempdir().unwrap();
    let capacity = 256 * BLOCK_SIZE as u64;
    let log = log_in(dir.path(), capacity);
    let margin = DATA_SIZE;
    let mut held = reserve_all(&log, margin as u64);
    let unreserved = capacity - log.reserved() - BLOCK_SIZE as u64;
    assert!(unreserved >= capacity / 16);
    // Twice its reservation: fits in the unreserved sixteenth.
    let own = held.pop().unwrap();
    let before = log.current_lsn();
    let (start, end) = log.append_reserved(&group_of(3 * margin), own).unwrap();
    assert_eq!(start, before);
    assert!(end > start);
    // Bigger than its reservation and all unreserved room: refused, nothing appended.
    let own = held.pop().unwrap();
    let reserved = log.reserved();
    let err = log
        .append_reserved(&group_of(capacity as usize / 8 - 64), own)
        .unwrap_err();
    assert!(matches!(err, LogError::LogFull { .. }), "{err}");
    assert_eq!(log.current_lsn(), end);
    assert_eq!(log.reserved(), reserved - 2 * BLOCK_SIZE as u64);
    // The others' reservations are intact: each of them still appends a full margin.
    let g = group_of(margin);
    for r in held {
        log.append_reserved(&g, r).unwrap();
    }
    assert!(!log.is_poisoned());
}

/// A writer that finds every byte reserved waits for a reservation to come back (no
/// checkpoint can help it, and none is asked for), and gets it when one does.
#[test]
fn a_writer_waits_for_a_reservation_to_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(log_in(dir.path(), 256 * BLOCK_SIZE as u64));
    let margin = 4 * DATA_SIZE as u64;
    let mut held = reserve_all(&log, margin);
    std::thread::scope(|s| {
        let waiter = s.spawn(|| log.reserve(margin, Duration::from_secs(60)).map(drop));
        // Whether or not the waiter is asleep yet, the reservation given back is its room.
        drop(held.pop());
        waiter.join().unwrap().unwrap();
    });
    drop(held);
    assert_eq!(log.reserved(), 0);
}
