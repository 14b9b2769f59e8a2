//! [`PageMut`]: the only way this crate changes page bytes.
//!
//! Every change to a page must reach the redo log, or a crash loses it. Rather than diffing
//! pages after the fact, the node layer makes each change through two primitives, which a
//! mini-transaction turns one for one into redo records: `write` (a WRITE record: offset,
//! bytes) and `memset` (a MEMSET record: offset, length, value). The implementations here,
//! for plain byte buffers, are what the tests use; the buffer pool's mini-transaction provides
//! the logged one.
//!
//! Because each call becomes a redo record, the node layer keeps calls few and small: an
//! insert is typically four writes (the record, the predecessor's 2-byte next pointer, the
//! owner's `n_owned` byte and the changed span of the page header).

use minnow_page::{PageError, bytes};

/// Mutable access to one page's bytes, by logged primitives only.
pub trait PageMut {
    /// The current page bytes.
    fn bytes(&self) -> &[u8];

    /// Copies `data` to `offset`.
    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), PageError>;

    /// Sets `len` bytes at `offset` to `value`.
    fn memset(&mut self, offset: usize, len: usize, value: u8) -> Result<(), PageError>;

    /// Writes only the part of `data` that differs from the page's bytes at `offset` (one
    /// write from the first to the last differing byte; none if nothing differs).
    fn write_changed(&mut self, offset: usize, data: &[u8]) -> Result<(), PageError> {
        let old = bytes::slice(self.bytes(), offset, data.len())?;
        let first = old.iter().zip(data).position(|(a, b)| a != b);
        let last = old.iter().zip(data).rposition(|(a, b)| a != b);
        match (first, last) {
            (Some(f), Some(l)) => {
                let part = data.get(f..=l).unwrap_or_default();
                self.write(offset + f, part)
            }
            _ => Ok(()),
        }
    }
}

impl PageMut for [u8] {
    fn bytes(&self) -> &[u8] {
        self
    }

    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), PageError> {
        bytes::slice_mut(self, offset, data.len())?.copy_from_slice(data);
        Ok(())
    }

    fn memset(&mut self, offset: usize, len: usize, value: u8) -> Result<(), PageError> {
        bytes::slice_mut(self, offset, len)?.fill(value);
        Ok(())
    }
}

impl PageMut for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }

    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), PageError> {
        self.as_mut_slice().write(offset, data)
    }

    fn memset(&mut self, offset: usize, len: usize, value: u8) -> Result<(), PageError> {
        self.as_mut_slice().memset(offset, len, value)
    }
}

/// A page buffer that counts the writes made to it: for tests and for measuring how much redo
/// an operation would generate.
#[derive(Debug, Clone, Default)]
pub struct CountingPage {
    /// The page bytes.
    pub page: Vec<u8>,
    /// Number of `write` and `memset` calls.
    pub calls: usize,
    /// Total bytes written by `write` calls.
    pub bytes_written: usize,
}

impl CountingPage {
    /// Wraps a page buffer.
    pub fn new(page: Vec<u8>) -> CountingPage {
        CountingPage {
            page,
            calls: 0,
            bytes_written: 0,
        }
    }
}

impl PageMut for CountingPage {
    fn bytes(&self) -> &[u8] {
        &self.page
    }

    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), PageError> {
        self.calls += 1;
        self.bytes_written += data.len();
        self.page.write(offset, data)
    }

    fn memset(&mut self, offset: usize, len: usize, value: u8) -> Result<(), PageError> {
        self.calls += 1;
        self.page.memset(offset, len, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_changed_writes_only_the_differing_span() {
        let mut p = CountingPage::new(vec![0u8; 16]);
        p.write_changed(2, &[0, 1, 0, 2, 0]).unwrap();
        assert_eq!((p.calls, p.bytes_written), (1, 3));
        assert_eq!(&p.page[2..7], &[0, 1, 0, 2, 0]);
        p.write_changed(2, &[0, 1, 0, 2, 0]).unwrap();
        assert_eq!(p.calls, 1);
        assert!(p.write(15, &[1, 2]).is_err());
        assert!(p.memset(10, 7, 1).is_err());
    }
}
