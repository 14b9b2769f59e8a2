//! The segment's batch buffer: header block and page slots, in memory laid out so that the
//! slots sit in transparent huge pages.
//!
//! The whole batch leaves this buffer in one `O_DIRECT` write, and each page leaves it again
//! for its in-place write. With `O_DIRECT` the kernel hands the disk the buffer's own physical
//! pages: a buffer of ordinary 4 KiB pages becomes a scatter list of 4 KiB pieces, 528 of them
//! for a 2 MiB + 16 KiB batch, and a disk that takes at most 254 pieces per request (this
//! project's virtio disk) gets the batch as three requests, each assembled from hundreds of
//! pieces. Measured on that VM (`O_DIRECT` write of 2 MiB + 16 KiB, medians): 3.0-3.2 ms from
//! 4 KiB pages, 1.2-1.3 ms from a huge page, the same bytes to the same file.
//!
//! So the buffer is mapped (anonymous `mmap`, zeroed) with room to spare and placed so that
//! slot 0 starts on a 2 MiB boundary, and the slot area's whole 2 MiB chunks are advised
//! `MADV_HUGEPAGE` before first touch: with the defaults (128 slots of 16 KiB) the slots are
//! exactly one huge page, and the header block sits in ordinary pages just before it. A slot
//! area smaller than 2 MiB (small batches or pages) is left in ordinary pages rather than
//! round a few hundred KiB up to 2 MiB. The advice is only advice: where transparent huge pages
//! are off (`/sys/kernel/mm/transparent_hugepage/enabled` = `never`) or none is free, the
//! kernel uses ordinary pages and everything works the same, only slower.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use minnow_io::{IoError, IoOp};

use crate::DblwrError;

/// The size of a transparent huge page on x86-64 and (with 4 KiB base pages) arm64.
pub const HUGE_PAGE: usize = 2 << 20;

/// A zeroed, page-aligned buffer in its own anonymous mapping, laid out as a segment's batch:
/// a header block, then page slots that start on a huge-page boundary (see the module docs).
/// Each segment owns one; it is public so that benchmarks can write from the same kind of
/// memory.
pub struct BatchBuf {
    /// Start of the mapping.
    map: NonNull<u8>,
    /// Length of the mapping.
    map_len: usize,
    /// Start of the buffer, inside the mapping.
    ptr: NonNull<u8>,
    /// Length of the buffer.
    len: usize,
    /// Bytes of the buffer advised as huge pages.
    huge: usize,
}

// SAFETY: BatchBuf owns its mapping exclusively (like a Box<[u8]>); no other pointer to it
// exists, so moving it to another thread is sound.
unsafe impl Send for BatchBuf {}
// SAFETY: shared references only give out `&[u8]`, which is Sync; mutation needs `&mut self`.
unsafe impl Sync for BatchBuf {}

impl BatchBuf {
    /// A zeroed buffer of `len` bytes whose first `header` bytes are the header block and the
    /// rest page slots. With `huge_pages`, slot 0 is placed on a 2 MiB boundary and the slot
    /// area's whole 2 MiB chunks are advised as huge pages.
    /// `len` must be non-zero; a mapping the kernel refuses is an [`DblwrError::Io`] error
    /// (operation `allocate`).
    pub fn new(len: usize, header: usize, huge_pages: bool) -> Result<BatchBuf, DblwrError> {
        let map_err =
            |source| DblwrError::Io(IoError::file(IoOp::Allocate, "<batch buffer>", source));
        let huge_len = if huge_pages {
            (len.saturating_sub(header) / HUGE_PAGE) * HUGE_PAGE
        } else {
            0
        };
        let slack = if huge_len > 0 { HUGE_PAGE } else { 0 };
        let map_len = len
            .checked_add(slack)
            .filter(|_| len > 0)
            .ok_or_else(|| map_err(std::io::Error::from_raw_os_error(libc::ENOMEM)))?;
        // SAFETY: an anonymous private mapping of a non-zero length at an address the kernel
        // chooses: it aliases no existing memory. The result is checked against MAP_FAILED.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(map_err(std::io::Error::last_os_error()));
        }
        let map = NonNull::new(raw.cast::<u8>())
            .ok_or_else(|| map_err(std::io::Error::from_raw_os_error(libc::ENOMEM)))?;
        let start = map.as_ptr() as usize;
        // Place the buffer so that its slots begin on a huge-page boundary: at most
        // HUGE_PAGE - 1 bytes in, which the slack covers.
        let skip = if huge_len > 0 {
            (start + header).next_multiple_of(HUGE_PAGE) - header - start
        } else {
            0
        };
        // SAFETY: `skip + len <= map_len` (skip < slack), so the pointer stays in the mapping.
        let ptr = unsafe { NonNull::new_unchecked(map.as_ptr().add(skip)) };
        let buf = BatchBuf {
            map,
            map_len,
            ptr,
            len,
            huge: huge_len,
        };
        if huge_len > 0 {
            // SAFETY: the range [ptr + header, ptr + header + huge_len) lies inside the mapping
            // (header + huge_len <= len) and starts on a huge-page (hence page) boundary;
            // madvise only changes how its not-yet-touched pages will be backed.
            let rc = unsafe {
                libc::madvise(
                    buf.ptr.as_ptr().add(header).cast(),
                    huge_len,
                    libc::MADV_HUGEPAGE,
                )
            };
            // Advice the kernel does not take (THP compiled out: EINVAL) changes nothing.
            let _ = rc;
        }
        Ok(buf)
    }

    /// Bytes of the buffer advised as huge pages (0 when the slot area is under 2 MiB or huge
    /// pages were not asked for).
    pub fn huge_bytes(&self) -> usize {
        self.huge
    }
}

impl Drop for BatchBuf {
    fn drop(&mut self) {
        // SAFETY: `map` and `map_len` are exactly the mapping made in `new`, unmapped once, and
        // no slice into it outlives `self`.
        unsafe {
            libc::munmap(self.map.as_ptr().cast(), self.map_len);
        }
    }
}

impl Deref for BatchBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `len` bytes of the mapping, which is zero-initialised by
        // the kernel and lives as long as `self`; `&self` rules out a concurrent `&mut`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for BatchBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl fmt::Debug for BatchBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchBuf")
            .field("len", &self.len)
            .field("huge", &self.huge)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_start_on_a_huge_page_and_memory_is_zeroed() {
        let header = 16384;
        let len = header + 128 * 16384;
        let mut buf = BatchBuf::new(len, header, true).unwrap();
        assert_eq!(buf.len(), len);
        assert_eq!(buf.huge_bytes(), HUGE_PAGE);
        assert_eq!((buf.as_ptr() as usize + header) % HUGE_PAGE, 0);
        assert!(buf.iter().all(|&b| b == 0));
        buf.fill(0xA5);
        assert!(buf.iter().all(|&b| b == 0xA5));

        // Too small for a huge page, or not asked: ordinary page alignment only.
        for (len, huge) in [(header + 8 * 16384, true), (len, false)] {
            let buf = BatchBuf::new(len, header, huge).unwrap();
            assert_eq!(buf.huge_bytes(), 0);
            assert_eq!(buf.as_ptr() as usize % 4096, 0);
            assert_eq!(buf.len(), len);
        }
    }
}
