//! CRC-32C (Castagnoli), the CRC behind the `crc32` and `full_crc32` page checksums and the
//! redo log's block checksums.
//!
//! Polynomial 0x1EDC6F41 (reflected 0x82F63B78), initial value and final XOR 0xFFFFFFFF:
//! `crc32c(b"123456789") == 0xE3069283`. x86-64 computes it with the SSE 4.2 `crc32`
//! instruction and ARMv8 with its CRC extension; the `crc32c` crate picks the hardware path at
//! run time and falls back to tables elsewhere.

/// CRC-32C of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// Continues a CRC-32C: `crc32c_append(crc32c(a), b) == crc32c(a ++ b)`.
#[inline]
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c_append(crc32c(b"1234"), b"56789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
    }
}
