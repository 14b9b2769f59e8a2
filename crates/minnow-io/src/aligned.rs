//! Aligned buffers for `O_DIRECT`.
//!
//! Normally `write(2)` copies your bytes into the kernel's page cache and returns; the kernel
//! writes them to disk later. With `O_DIRECT` there is no copy: the disk controller reads your
//! buffer itself, by DMA, straight from your memory. Hardware moves whole sectors to and from
//! whole memory blocks, so the kernel insists that the buffer *address*, the file *offset* and
//! the *length* are all multiples of the device's logical block size (512 bytes here, 4096 on
//! some disks); otherwise the call fails with `EINVAL`. A `Vec<u8>` is only guaranteed 1-byte
//! aligned, so it works by luck at best.
//!
//! [`AlignedBuf`] is a zeroed heap buffer whose address is aligned to 4096 bytes (enough for any
//! device, and for the 4 KiB memory page, which some kernels want) and whose length is a
//! multiple of 512. Use it for every buffer that goes to or comes from an `O_DIRECT` file.
//!
//! ```
//! use minnow_io::AlignedBuf;
//!
//! let mut page = AlignedBuf::page(minnow_page::PageSize::K16);
//! assert_eq!(page.len(), 16384);
//! assert_eq!(page.as_ptr() as usize % AlignedBuf::ALIGN, 0);
//! page[0] = 42; // Deref to [u8]
//! # Ok::<(), minnow_io::IoError>(())
//! ```

use std::alloc::{self, Layout};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use minnow_page::PageSize;

use crate::IoError;

/// A zero-initialised heap buffer aligned to [`AlignedBuf::ALIGN`] bytes, whose length is a
/// non-zero multiple of [`AlignedBuf::LEN_MULTIPLE`].
pub struct AlignedBuf {
    /// Start of the allocation; valid for `len` bytes, aligned to `ALIGN`.
    ptr: NonNull<u8>,
    /// Length in bytes (also the allocation's size).
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively (like a Box<[u8]>); no other pointer to it
// exists, so moving it to another thread is sound.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only give out `&[u8]`, which is Sync; mutation needs `&mut self`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// The address alignment: 4096 bytes.
    pub const ALIGN: usize = 4096;
    /// The length must be a multiple of this: the smallest sector, 512 bytes.
    pub const LEN_MULTIPLE: usize = 512;

    /// A zeroed buffer of `len` bytes, or [`IoError::BadBufferLen`] if `len` is zero or not a
    /// multiple of 512.
    pub fn new(len: usize) -> Result<AlignedBuf, IoError> {
        if len == 0 || !len.is_multiple_of(Self::LEN_MULTIPLE) {
            return Err(IoError::BadBufferLen { len });
        }
        let layout =
            Layout::from_size_align(len, Self::ALIGN).map_err(|_| IoError::BadBufferLen { len })?;
        Ok(Self::alloc(layout))
    }

    /// A zeroed buffer of one page of `size`.
    pub fn page(size: PageSize) -> AlignedBuf {
        Self::pages(size, 1)
    }

    /// A zeroed buffer of `count` pages of `size` (at least one page).
    pub fn pages(size: PageSize, count: usize) -> AlignedBuf {
        let len = size.bytes().saturating_mul(count.max(1));
        // Page sizes are multiples of 4096, so `len` is a non-zero multiple of 512; only an
        // impossible size can fail, and then there is no memory for it either.
        match Layout::from_size_align(len, Self::ALIGN) {
            Ok(layout) => Self::alloc(layout),
            Err(_) => alloc::handle_alloc_error(Layout::new::<u8>()),
        }
    }

    /// Allocates zeroed memory for a layout with non-zero size.
    fn alloc(layout: Layout) -> AlignedBuf {
        debug_assert!(layout.size() > 0);
        // SAFETY: every caller passes a layout with a non-zero size (checked in `new`; `pages`
        // asks for at least one page), which is all `alloc_zeroed` requires.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        match NonNull::new(raw) {
            Some(ptr) => AlignedBuf {
                ptr,
                len: layout.size(),
            },
            None => alloc::handle_alloc_error(layout),
        }
    }

    fn layout(&self) -> Layout {
        // SAFETY: the same size and alignment were accepted by `Layout::from_size_align` when
        // the buffer was allocated, so they satisfy its conditions.
        unsafe { Layout::from_size_align_unchecked(self.len, Self::ALIGN) }
    }

    /// The length in bytes (also available through `Deref`).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: an aligned buffer is never empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for reads of `len` initialised (zeroed at allocation) bytes for
        // as long as `self` lives, and no `&mut` to them can coexist with this `&self` borrow.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` is valid for reads and writes of `len` initialised bytes, and `&mut self`
        // guarantees this is the only reference to them.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl AsRef<[u8]> for AlignedBuf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl AsMut<[u8]> for AlignedBuf {
    fn as_mut(&mut self) -> &mut [u8] {
        self
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed` with exactly this layout and is freed once.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout()) }
    }
}

impl Clone for AlignedBuf {
    fn clone(&self) -> AlignedBuf {
        let mut copy = Self::alloc(self.layout());
        copy.copy_from_slice(self);
        copy
    }
}

impl PartialEq for AlignedBuf {
    fn eq(&self, other: &AlignedBuf) -> bool {
        **self == **other
    }
}

impl Eq for AlignedBuf {}

impl fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let head: &[u8] = self.get(..16).unwrap_or(self);
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .field("addr", &format_args!("{:#x}", self.ptr.as_ptr() as usize))
            .field("head", &head)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_zeroed_and_writable() {
        for len in [512, 4096, 16384, 65536, 3 * 512] {
            let mut buf = AlignedBuf::new(len).unwrap();
            assert_eq!(buf.len(), len);
            assert!(!buf.is_empty());
            assert_eq!(buf.as_ptr() as usize % AlignedBuf::ALIGN, 0);
            assert!(buf.iter().all(|&b| b == 0));
            buf.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
            assert_eq!(buf[len - 1], (len - 1) as u8);
            let copy = buf.clone();
            assert_eq!(copy, buf);
            assert_ne!(copy.as_ptr(), buf.as_ptr());
            assert_eq!(copy.as_ptr() as usize % AlignedBuf::ALIGN, 0);
            drop(buf);
            assert_eq!(copy[1], 1);
        }
    }

    #[test]
    fn bad_lengths_are_errors() {
        for len in [0, 1, 511, 513, 4097] {
            assert!(matches!(
                AlignedBuf::new(len),
                Err(IoError::BadBufferLen { len: l }) if l == len
            ));
        }
    }

    #[test]
    fn page_buffers_and_debug() {
        let buf = AlignedBuf::pages(PageSize::K4, 3);
        assert_eq!(buf.len(), 3 * 4096);
        assert_eq!(AlignedBuf::pages(PageSize::K8, 0).len(), 8192);
        let text = format!("{:?}", AlignedBuf::page(PageSize::K4));
        assert!(text.contains("len: 4096"), "{text}");
        // Send + Sync across threads.
        let shared = std::sync::Arc::new(AlignedBuf::page(PageSize::K4));
        let s2 = std::sync::Arc::clone(&shared);
        let sum = std::thread::spawn(move || s2.iter().map(|&b| u32::from(b)).sum::<u32>())
            .join()
            .unwrap();
        assert_eq!(sum, 0);
    }
}
