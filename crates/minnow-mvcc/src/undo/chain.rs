//! An active log's newest record, found from a LAST that its header may have left behind.
//!
//! A log header's LAST (the newest record still to be undone) and N_RECS (the next undo
//! number) are not rewritten by every append: that was a third page latch and a write per
//! undo record (the header's page, usually far behind the stream's last page in a large
//! transaction). The header is written where a reader needs it exact:
//!
//! - by the **first record** of the log, and any record appended when nothing is left to
//!   undo (no `prev`): LAST = that record;
//! - by the record that makes the log an update log (its TYPE byte, which trimming reads);
//! - by every **pop** of a rollback (LAST = the popped record's `prev`, N_RECS as it is);
//! - by the **commit** (exact from then on: purge reads it).
//!
//! So only an active log, which recovery rolls back, can have a stale LAST, and then every
//! record appended since the header was written lies after LAST in the segment's stream,
//! each with `prev` = the record appended before it and the next undo number:
//!
//! ```text
//!   header: LAST = r5, N_RECS = 6
//!   stream … │r5 (no 5)│other log│r6 (prev r5, no 6)│r4' (prev r3, no 4: popped)│r7 (prev r6, no 7)│ end
//!   newest record: r7, next undo number 8
//! ```
//!
//! [`newest_record`] walks the stream forward from LAST to its end and follows that chain:
//! a record whose `prev` is the newest found so far *and* whose undo number is the next one
//! is this log's next record. The `prev` tells this log's records from other logs' (each
//! chains to its own records; only a first record has none, and that one writes the header).
//! The undo number tells live records from popped ones: a pop leaves its records in the
//! stream after the new LAST with their `prev`, but writes N_RECS, above every popped
//! record's number, and the records appended after it carry N_RECS and up.
//!
//! InnoDB's undo log header has no such field at all: the newest record (`top_page_no`,
//! `top_offset`, `top_undo_no`) lives in memory in `trx_undo_t`, and at startup it is found
//! from the log's own last undo page (a resurrected transaction's undo number is
//! `top_undo_no + 1`). minnow's logs share their segment's stream, so the walk follows the
//! chain instead, from the last place the header names.
//!
//! The walk is bounded as every other walk of the stream: by the segment's PAGES and a
//! cycle guard over the NEXT pointers, with every length and offset checked.

use minnow_page::walk::CycleGuard;

use super::record::UndoAddr;
use super::{
    PageSource, StreamPos, UNDO_DATA, bad_stream, entry_head, read_record, step_over, stream_page,
};
use crate::error::Result;
use crate::trx_sys::RsegPage;

/// The newest record of an active log of segment `rseg` (tablespace `space`) whose header
/// says LAST = `last` and N_RECS = `n_recs`, and the log's next undo number: `last` and
/// `n_recs` themselves unless records were appended after the header was written (module
/// docs). An error for a stream that does not walk (a bad length, kind or page chain).
pub fn newest_record<S: PageSource + ?Sized>(
    pages: &S,
    space: u32,
    rseg: &RsegPage,
    last: UndoAddr,
    n_recs: u64,
) -> Result<(UndoAddr, u64)> {
    let (mut newest, mut next_no) = (last, n_recs);
    let (next, free) = stream_page(pages, space, last.page)?;
    let mut pos = StreamPos {
        page: last.page,
        off: usize::from(last.offset),
        next,
        free,
    };
    // The pages stepped to: at most the stream's PAGES, and never one twice.
    let mut guard = CycleGuard::new();
    guard.step(last.page);
    let mut steps = 0u32;
    let mut step = |from: u32, to: u32| -> Result<(u32, usize)> {
        steps += 1;
        if steps >= rseg.n_pages || !guard.step(to) {
            return Err(bad_stream(
                space,
                from,
                super::UNDO_NEXT,
                "a NEXT page of the stream not stepped over before",
                format!("{to} after {steps} pages (PAGES {})", rseg.n_pages),
            ));
        }
        stream_page(pages, space, to)
    };
    loop {
        if pos.off >= pos.free {
            if pos.page == rseg.last_page || pos.next == 0 {
                return Ok((newest, next_no));
            }
            let to = pos.next;
            (pos.next, pos.free) = step(pos.page, to)?;
            (pos.page, pos.off) = (to, UNDO_DATA);
            continue;
        }
        let at = UndoAddr {
            page: pos.page,
            offset: pos.off as u16,
        };
        let (len, [kind, ..]) = entry_head(pages, space, at)?;
        if (1..=3).contains(&kind) && at != newest {
            let rec = read_record(pages, space, at)?;
            if rec.prev == Some(newest) && rec.undo_no == next_no {
                newest = at;
                next_no = next_no.saturating_add(1);
            }
        }
        step_over(&mut pos, len, space, rseg.last_page, &mut step)?;
    }
}
