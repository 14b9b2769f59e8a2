//! CRC-32C (Castagnoli), the CRC behind the `crc32` and `full_crc32` page checksums and the
//! redo log's block checksums.
//!
//! # What a CRC is
//!
//! Read a message as a polynomial over GF(2), the field with two elements where addition is
//! XOR: bit `i` of the message is the coefficient of one power of x. A CRC is the remainder of
//! dividing that polynomial (times x^32) by a fixed polynomial P of degree 32. CRC-32C uses
//! P = 0x1EDC6F41 (Castagnoli's, chosen for good error detection on long messages), processes
//! bits least significant first (so the constants appear bit-reversed, "reflected":
//! 0x82F63B78), and starts from and finally XORs with 0xFFFFFFFF so that leading zero bytes
//! count: `crc32c(b"123456789") == 0xE3069283`.
//!
//! Everything below rests on one property: the remainder is **linear**. The CRC register
//! after a message A followed by B equals (register after A) · x^(8·|B|) mod P, XOR the
//! register B alone produces from zero. Appending bytes *shifts* a CRC; XOR *adds* CRCs.
//!
//! # Why three streams
//!
//! x86-64 has had an instruction for exactly this polynomial since SSE 4.2: `crc32 reg, u64`
//! folds 8 bytes into the register. On most cores (Zen 1 included) it has a *latency* of 3
//! cycles but a *throughput* of 1 per cycle: a new one can start every cycle, but its result
//! is ready only 3 cycles later. A single CRC is one long dependency chain (each step needs
//! the previous register), so it runs at 8 bytes every 3 cycles and leaves the unit idle two
//! cycles out of three. Cut the input into three equal streams A, B and C, run three
//! independent registers side by side, and the unit is busy every cycle: 8 bytes per cycle, a
//! 16 KiB page in about 2,000 cycles (1 µs at 2 GHz).
//!
//! # The combine step
//!
//! Three registers must then become one. By linearity, with `len` bytes per stream:
//!
//! ```text
//! crc(A ++ B ++ C) = crc(A) · x^(8·2·len)  ⊕  crc(B) · x^(8·len)  ⊕  crc(C)      (mod P)
//! ```
//!
//! The `crc32c` crate does these multiplications with lookup tables for two fixed stream
//! lengths; we use the carry-less multiply `pclmulqdq`, which multiplies two GF(2)
//! polynomials in one instruction, and the `crc32` instruction itself to reduce the 64-bit
//! product modulo P. Two details make it cheap:
//!
//! - In reflected form the product of two 32-bit values comes out one bit off (it is the true
//!   product times x), and `crc32` of a 64-bit word with an empty register multiplies that
//!   word by x^32 before reducing. Together that is x^33, so the constants ("keys") are
//!   x^(8·2·len − 33) and x^(8·len − 33) mod P, computed at compile time (see `gf2`) for
//!   every stream length we use.
//! - The reduction costs nothing extra: instead of running `crc32` on the product separately,
//!   we XOR the product into stream C's last 8-byte word before the instruction folds it in.
//!   By linearity, that adds exactly the shifted A and B registers.
//!
//! # Beyond the `crc32` instruction: folding with `pclmulqdq`
//!
//! Three streams assume the instruction is pipelined. Measured on the Zen 1 machine minnow
//! was tuned on, it is not: one `crc32` every ~3 cycles whatever the number of streams, so
//! `crc32` alone tops out near 3 µs per 16 KiB page (the `crc32c` crate's speed). The vector
//! unit, though, is idle, and `pclmulqdq` can do the whole CRC by itself ("folding"): keep a
//! 16-byte accumulator, and for each next 16 bytes replace the accumulator by its two 8-byte
//! halves multiplied by x^(8·d + 31) and x^(8·d − 33) mod P (d = the distance moved, the
//! exponents again shifted by the reflected product's x and by the halves' positions) XOR the
//! new data. The result is a 16-byte stand-in with the same CRC as everything folded so far;
//! `crc32` of its two words finishes the job. Four accumulators (64 bytes per step) hide the
//! multiply's latency.
//!
//! So the main loop is a **hybrid**: each step folds 64 bytes with `pclmulqdq` *and* feeds one
//! word to each of three `crc32` streams (88 bytes a step), two execution units working side
//! by side. A block is laid out as [vector part | stream A | stream B | stream C]; the incoming
//! CRC is XORed into the vector part's first 4 bytes, and at the end the vector CRC and
//! streams A and B are shifted with the multiply-and-fold-into-C's-last-word trick above. A 16
//! KiB page body (16,338 bytes) is one block of 185 steps and a 58-byte tail, which goes
//! through a small three-stream block. The constants for every block length are computed at
//! compile time (`gf2`), so nothing is initialised at run time.

//! # Where it runs
//!
//! The fast path needs x86-64 with SSE 4.2 and PCLMULQDQ, detected at run time (the answer is
//! cached by the standard library), and inputs of at least 256 bytes. Short inputs,
//! other CPUs and other architectures use the `crc32c` crate (itself hardware accelerated
//! where it can be, including on ARMv8), so the result is the same everywhere.

mod gf2;
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86;

/// CRC-32C of `data`: `crc32c(b"123456789") == 0xE3069283`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_append(0, data)
}

/// Continues a CRC-32C: `crc32c_append(crc32c(a), b) == crc32c(a ++ b)`, and
/// `crc32c_append(0, b) == crc32c(b)`.
#[inline]
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if let Some(result) = x86::append(crc, data) {
        return result;
    }
    crc32c::crc32c_append(crc, data)
}

/// Whether long inputs take minnow's three-stream `crc32` + `pclmulqdq` path on this machine
/// (x86-64 with SSE 4.2 and PCLMULQDQ). When false, everything goes through the `crc32c`
/// crate. Useful for reports and benchmarks.
pub fn accelerated() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        x86::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn check_value() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c_append(crc32c(b"1234"), b"56789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
    }

    /// Deterministic pseudo-random bytes.
    fn bytes(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect()
    }

    #[test]
    fn every_length_up_to_70000_matches_the_crate() {
        let data = bytes(70_001, 7);
        for len in 0..=data.len() {
            let slice = &data[..len];
            assert_eq!(crc32c(slice), crc32c::crc32c(slice), "len {len}");
        }
    }

    #[test]
    fn every_offset_matches_the_crate() {
        // Unaligned starts: the streams load unaligned words.
        let data = bytes(20_000, 11);
        for start in 0..64 {
            let slice = &data[start..];
            assert_eq!(crc32c(slice), crc32c::crc32c(slice), "start {start}");
        }
    }

    #[test]
    fn page_sizes_and_page_bodies_match_the_crate() {
        for size in [4096usize, 8192, 16384, 32768, 65536] {
            let page = bytes(size, size as u64);
            for (start, end) in [(0, size), (0, size - 4), (38, size - 8), (4, 26)] {
                let slice = &page[start..end];
                assert_eq!(
                    crc32c(slice),
                    crc32c::crc32c(slice),
                    "{size} {start}..{end}"
                );
            }
            let zeros = vec![0u8; size];
            assert_eq!(crc32c(&zeros), crc32c::crc32c(&zeros), "zero page {size}");
            let ones = vec![0xFFu8; size];
            assert_eq!(crc32c(&ones), crc32c::crc32c(&ones), "0xFF page {size}");
        }
        // The value the page checksum tests pin for an all-zero 16 KiB page.
        let zeros = vec![0u8; 16384];
        assert_eq!(
            crc32c(&zeros[4..26]) ^ crc32c(&zeros[38..16376]),
            0x1FFD_D4D2
        );
    }

    #[test]
    fn accelerated_matches_the_cpu() {
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            accelerated(),
            std::arch::is_x86_feature_detected!("sse4.2")
                && std::arch::is_x86_feature_detected!("pclmulqdq")
        );
        #[cfg(not(target_arch = "x86_64"))]
        assert!(!accelerated());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn matches_the_crate(data in proptest::collection::vec(any::<u8>(), 0..70_000)) {
            prop_assert_eq!(crc32c(&data), crc32c::crc32c(&data));
        }

        #[test]
        fn append_matches_the_crate_at_any_split(
            data in proptest::collection::vec(any::<u8>(), 0..70_000),
            seed in any::<u32>(),
            split in any::<proptest::sample::Index>(),
        ) {
            let (a, b) = data.split_at(split.index(data.len() + 1));
            prop_assert_eq!(crc32c_append(seed, a), crc32c::crc32c_append(seed, a));
            prop_assert_eq!(crc32c_append(crc32c(a), b), crc32c::crc32c(&data));
        }

        #[test]
        fn matches_the_crate_on_short_inputs(
            data in proptest::collection::vec(any::<u8>(), 0..1_000),
            seed in any::<u32>(),
        ) {
            prop_assert_eq!(crc32c_append(seed, &data), crc32c::crc32c_append(seed, &data));
        }
    }
}
