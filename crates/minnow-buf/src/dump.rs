//! Warm restart: dumping and loading the buffer pool's page list.
//!
//! A freshly started server has an empty pool and is slow until its working set is read back,
//! one miss at a time. So at shutdown the pool writes the ids of each instance's most recently
//! used pages (`dump_pct` percent of its LRU list, from the head) to `ib_buffer_pool` in the
//! data directory, and at startup a background thread reads them back — sorted by
//! (space, page), so the reads are as sequential as the files allow — into free frames only,
//! stopping when the pool has none left. Only ids are stored, never page contents: a page
//! that changed since is simply read as it is now.
//!
//! ## File format (text, one line each)
//!
//! ```text
//! minnow-buffer-pool-dump 1        magic and version
//! 5,3                              space id, page number (decimal), most recent first
//! 5,17
//! crc32c 1a2b3c4d 2                CRC-32C of every byte before this line, page count
//! ```
//!
//! A file whose checksum or count does not match is rejected as a whole
//! ([`crate::BufError::Dump`]). The file is written to `ib_buffer_pool.tmp` and renamed, so a
//! crash during the dump leaves the previous dump.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use minnow_page::PageId;

use crate::pool::Shared;
use crate::{BufError, BufferPool};

/// The dump file's name.
pub const DUMP_FILE: &str = "ib_buffer_pool";
const MAGIC: &str = "minnow-buffer-pool-dump 1";

/// Encodes a dump of `pages`.
pub fn encode_dump(pages: &[PageId]) -> String {
    let mut body = format!("{MAGIC}\n");
    for p in pages {
        body.push_str(&format!("{},{}\n", p.space, p.page_no));
    }
    let crc = minnow_page::crc::crc32c(body.as_bytes());
    body.push_str(&format!("crc32c {crc:08x} {}\n", pages.len()));
    body
}

/// Decodes a dump written by [`encode_dump`]; `path` is for the error.
pub fn decode_dump(path: &Path, text: &str) -> Result<Vec<PageId>, BufError> {
    let bad = |reason: &str| BufError::Dump {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    let body_end = text
        .trim_end_matches('\n')
        .rfind('\n')
        .map(|i| i + 1)
        .ok_or_else(|| bad("no trailer line"))?;
    let (body, trailer) = text.split_at(body_end);
    let mut t = trailer.split_whitespace();
    let (Some("crc32c"), Some(crc), Some(count), None) = (t.next(), t.next(), t.next(), t.next())
    else {
        return Err(bad("malformed trailer line"));
    };
    let crc = u32::from_str_radix(crc, 16).map_err(|_| bad("malformed checksum"))?;
    if crc != minnow_page::crc::crc32c(body.as_bytes()) {
        return Err(bad("checksum mismatch"));
    }
    let mut lines = body.lines();
    if lines.next() != Some(MAGIC) {
        return Err(bad("not a minnow buffer pool dump"));
    }
    let pages = lines
        .map(|l| {
            let (s, p) = l.split_once(',').ok_or_else(|| bad("malformed line"))?;
            Ok(PageId::new(
                s.parse().map_err(|_| bad("malformed space id"))?,
                p.parse().map_err(|_| bad("malformed page number"))?,
            ))
        })
        .collect::<Result<Vec<_>, BufError>>()?;
    if count.parse::<usize>().ok() != Some(pages.len()) {
        return Err(bad("page count mismatch"));
    }
    Ok(pages)
}

impl Shared {
    /// The most recently used `dump_pct` % of each instance's LRU list.
    pub(crate) fn dump_list(&self) -> Vec<PageId> {
        let mut out = Vec::new();
        for inst in self.instances.iter() {
            let lists = inst.lists.lock();
            let n = (lists.len as usize * self.cfg.dump_pct as usize).div_ceil(100);
            out.extend(
                lists
                    .head_first()
                    .take(n)
                    .filter_map(|l| self.ctl(inst.base + l).page()),
            );
        }
        out
    }

    /// Loads pages listed in the dump into free frames; returns how many were read.
    pub(crate) fn load_dump(&self, path: &Path) -> Result<usize, BufError> {
        let text = std::fs::read_to_string(path).map_err(|e| BufError::Dump {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let mut pages = decode_dump(path, &text)?;
        pages.sort_unstable();
        pages.dedup();
        let mut loaded = 0;
        for id in pages {
            if self.stopping.load(Ordering::Acquire) {
                break;
            }
            let Some(space) = self.spaces.get(id.space) else {
                continue;
            };
            if id.page_no >= space.size_in_pages() || self.contains(id) {
                continue;
            }
            let ii = self.instance_of(id);
            if self.instances[ii].free_len.load(Ordering::Relaxed) == 0 {
                continue;
            }
            let Some(f) = self.claim_quiet(id) else {
                continue;
            };
            // SAFETY: `claim_quiet` returned the frame latched exclusively by this thread.
            let bytes = unsafe { self.frames.slice_mut(f) };
            if space.read_page(id.page_no, bytes).is_ok() {
                if let Err(e) = self.publish_read(ii, f) {
                    self.discard(f);
                    return Err(e);
                }
                self.instances[ii].stats.bump(crate::stats::Counter::Reads);
                let c = self.ctl(f);
                c.unlock_x();
                c.unpin();
                loaded += 1;
            } else {
                // A damaged page is reported when somebody actually reads it.
                self.discard(f);
            }
        }
        Ok(loaded)
    }
}

impl BufferPool {
    /// The dump file's path, if `dump_dir` is set.
    pub fn dump_path(&self) -> Option<PathBuf> {
        self.shared.cfg.dump_dir.as_ref().map(|d| d.join(DUMP_FILE))
    }

    /// Writes `ib_buffer_pool` now (also done by [`BufferPool::shutdown`]); returns the
    /// number of pages listed. Does nothing (0) without a `dump_dir`.
    pub fn dump(&self) -> Result<usize, BufError> {
        let Some(path) = self.dump_path() else {
            return Ok(0);
        };
        let pages = self.shared.dump_list();
        let tmp = path.with_extension("tmp");
        let err = |e: std::io::Error| BufError::Dump {
            path: path.clone(),
            reason: e.to_string(),
        };
        std::fs::write(&tmp, encode_dump(&pages)).map_err(err)?;
        std::fs::rename(&tmp, &path).map_err(err)?;
        Ok(pages.len())
    }

    /// Starts loading `ib_buffer_pool` in a background thread, if the file exists.
    pub(crate) fn start_load(&self) {
        let Some(path) = self.dump_path().filter(|p| p.exists()) else {
            return;
        };
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name("minnow-buf-load".into())
            .spawn(move || shared.load_dump(&path));
        if let Ok(handle) = spawned {
            *self.loader.lock() = Some(handle);
        }
    }

    /// Waits for the background load started at open; returns the pages it read (0 if none
    /// was started).
    pub fn wait_for_load(&self) -> Result<usize, BufError> {
        match self.loader.lock().take() {
            Some(h) => h
                .join()
                .map_err(|_| BufError::Recovery("the buffer pool load thread panicked".into()))?,
            None => Ok(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let pages = vec![PageId::new(1, 2), PageId::new(3, 4)];
        let text = encode_dump(&pages);
        let p = Path::new("ib_buffer_pool");
        assert_eq!(decode_dump(p, &text).unwrap(), pages);
        let damaged = text.replacen("3,4", "3,5", 1);
        assert!(matches!(
            decode_dump(p, &damaged),
            Err(BufError::Dump { .. })
        ));
        assert!(decode_dump(p, "").is_err());
        assert!(decode_dump(p, "garbage\ncrc32c zz 1\n").is_err());
        assert_eq!(decode_dump(p, &encode_dump(&[])).unwrap(), vec![]);
    }
}
