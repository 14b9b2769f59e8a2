//! Checked big-endian field access.
//!
//! InnoDB stores every multi-byte integer big-endian ("most significant byte first"), whatever
//! the CPU. Every read and write of a page field in minnow goes through these helpers, which
//! check bounds and return [`PageError::OutOfBounds`] instead of panicking, so a truncated or
//! garbage buffer can never crash the engine.

use crate::PageError;

/// Borrows `len` bytes at `offset`, or says which range was out of bounds.
#[inline]
pub fn slice(buf: &[u8], offset: usize, len: usize) -> Result<&[u8], PageError> {
    offset
        .checked_add(len)
        .and_then(|end| buf.get(offset..end))
        .ok_or(PageError::OutOfBounds {
            offset,
            len,
            available: buf.len(),
        })
}

/// Mutably borrows `len` bytes at `offset`, or says which range was out of bounds.
#[inline]
pub fn slice_mut(buf: &mut [u8], offset: usize, len: usize) -> Result<&mut [u8], PageError> {
    let available = buf.len();
    offset
        .checked_add(len)
        .and_then(|end| buf.get_mut(offset..end))
        .ok_or(PageError::OutOfBounds {
            offset,
            len,
            available,
        })
}

#[inline]
fn array<const N: usize>(buf: &[u8], offset: usize) -> Result<[u8; N], PageError> {
    let bytes = slice(buf, offset, N)?;
    let mut out = [0u8; N];
    out.copy_from_slice(bytes);
    Ok(out)
}

/// Reads a big-endian `u16` at `offset`.
#[inline]
pub fn read_u16(buf: &[u8], offset: usize) -> Result<u16, PageError> {
    array(buf, offset).map(u16::from_be_bytes)
}

/// Reads a big-endian `u32` at `offset`.
#[inline]
pub fn read_u32(buf: &[u8], offset: usize) -> Result<u32, PageError> {
    array(buf, offset).map(u32::from_be_bytes)
}

/// Reads a big-endian `u64` at `offset`.
#[inline]
pub fn read_u64(buf: &[u8], offset: usize) -> Result<u64, PageError> {
    array(buf, offset).map(u64::from_be_bytes)
}

/// Writes a big-endian `u16` at `offset`.
#[inline]
pub fn write_u16(buf: &mut [u8], offset: usize, value: u16) -> Result<(), PageError> {
    slice_mut(buf, offset, 2)?.copy_from_slice(&value.to_be_bytes());
    Ok(())
}

/// Writes a big-endian `u32` at `offset`.
#[inline]
pub fn write_u32(buf: &mut [u8], offset: usize, value: u32) -> Result<(), PageError> {
    slice_mut(buf, offset, 4)?.copy_from_slice(&value.to_be_bytes());
    Ok(())
}

/// Writes a big-endian `u64` at `offset`.
#[inline]
pub fn write_u64(buf: &mut [u8], offset: usize, value: u64) -> Result<(), PageError> {
    slice_mut(buf, offset, 8)?.copy_from_slice(&value.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_endian_round_trip() {
        let mut buf = [0u8; 16];
        write_u16(&mut buf, 0, 0x45BF).unwrap();
        write_u32(&mut buf, 2, 0xDEAD_BEEF).unwrap();
        write_u64(&mut buf, 6, 0x0102_0304_0506_0708).unwrap();
        assert_eq!(&buf[..2], &[0x45, 0xBF]);
        assert_eq!(read_u16(&buf, 0).unwrap(), 0x45BF);
        assert_eq!(read_u32(&buf, 2).unwrap(), 0xDEAD_BEEF);
        assert_eq!(read_u64(&buf, 6).unwrap(), 0x0102_0304_0506_0708);
    }

    #[test]
    fn out_of_bounds_is_an_error_not_a_panic() {
        let buf = [0u8; 4];
        assert_eq!(
            read_u32(&buf, 1),
            Err(PageError::OutOfBounds {
                offset: 1,
                len: 4,
                available: 4
            })
        );
        assert!(read_u64(&buf, usize::MAX).is_err());
        assert!(slice(&buf, usize::MAX - 1, 4).is_err());
    }
}
