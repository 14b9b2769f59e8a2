//! The x86-64 path: `pclmulqdq` folding alongside three interleaved `crc32` streams, recombined
//! with one `pclmulqdq` multiplication per block. The parent module's docs explain the method; this file is the
//! code, and the only place in minnow-page that needs `unsafe` (to call a function compiled
//! for SSE 4.2 and PCLMULQDQ after checking at run time that the CPU has them).

use super::gf2;
use std::arch::x86_64::{
    __m128i, _mm_clmulepi64_si128, _mm_crc32_u8, _mm_crc32_u64, _mm_cvtsi64_si128,
    _mm_cvtsi128_si64, _mm_extract_epi64, _mm_set_epi64x, _mm_xor_si128,
};

/// Inputs shorter than this go to the `crc32c` crate: splitting them into streams and
/// recombining costs about as much as it saves (the combine step has a latency of about 15
/// cycles, one stream of `n` bytes about `3n/8`).
pub(super) const MIN_LEN: usize = 256;

/// Stream lengths of the large three-stream blocks are multiples of this many bytes.
const BIG_STEP: usize = 64;
/// The longest stream of a three-stream block. Those blocks only see what the hybrid blocks
/// leave, under `HYBRID_MIN * HYBRID_STEP` (352) bytes, so streams never exceed 64 bytes
/// today; the loop and table are general so that the hybrid can be switched off.
const BIG_MAX: usize = 128;
/// Stream lengths of the one small block that mops up what the large blocks leave (< 192
/// bytes) are multiples of 8 bytes, up to 56.
const SMALL_STEP: usize = 8;

/// Hybrid blocks: every step of the loop folds 64 bytes into four 16-byte vector accumulators
/// with `pclmulqdq` and feeds `HYBRID_WORDS` words to each of three `crc32` streams.
const VEC_STEP: usize = 64;
/// Words per `crc32` stream per step of a hybrid block.
const HYBRID_WORDS: usize = 1;
/// Bytes per `crc32` stream per step of a hybrid block.
const SCALAR_STEP: usize = 8 * HYBRID_WORDS;
/// Bytes per step of a hybrid block: the vector part, then three scalar streams.
const HYBRID_STEP: usize = VEC_STEP + 3 * SCALAR_STEP;
/// The most steps in one hybrid block (longer inputs are cut into several blocks).
const HYBRID_MAX: usize = 256;
/// The fewest steps worth a hybrid block: below this the fixed costs (loading the
/// accumulators, reducing them, the combine) outweigh the gain.
const HYBRID_MIN: usize = 4;

/// The two multipliers that move the CRCs of streams A and B of a block with streams of `len`
/// bytes to the end of the block, in the form the `pclmulqdq` + `crc32` reduction wants:
/// `[x^(8·2·len − 33) mod P, x^(8·len − 33) mod P]` (see the parent module's docs for the 33).
const fn keys(len: usize) -> [u32; 2] {
    let bits = 8 * len as u64;
    [gf2::x_pow_mod(2 * bits - 33), gf2::x_pow_mod(bits - 33)]
}

/// `BIG_KEYS[j]`: the keys for streams of `BIG_STEP * (j + 1)` bytes (64 to 8192).
static BIG_KEYS: [[u32; 2]; BIG_MAX / BIG_STEP] = key_table(BIG_STEP);

/// `SMALL_KEYS[j]`: the keys for streams of `SMALL_STEP * (j + 1)` bytes (8 to 56).
static SMALL_KEYS: [[u32; 2]; 7] = key_table(SMALL_STEP);

/// The keys for stream lengths `step`, `2 * step`, ... `N * step`. Evaluated at compile time.
#[allow(clippy::indexing_slicing)] // `j < N`; and in a const, a bad index fails the build
const fn key_table<const N: usize>(step: usize) -> [[u32; 2]; N] {
    let mut table = [[0u32; 2]; N];
    let mut j = 0;
    while j < N {
        table[j] = keys(step * (j + 1));
        j += 1;
    }
    table
}

/// `HYBRID_KEYS[j]`: for a hybrid block of `j + 1` steps, whose scalar streams are
/// `len = SCALAR_STEP * (j + 1)` bytes long, the keys that move the vector part's CRC and
/// streams A and B to the end of the block: x^(8·k·len − 33) mod P for k = 3, 2, 1.
static HYBRID_KEYS: [[u32; 3]; HYBRID_MAX] = hybrid_key_table();

/// Builds [`HYBRID_KEYS`] at compile time.
#[allow(clippy::indexing_slicing)] // `j < HYBRID_MAX`; and in a const, a bad index fails the build
const fn hybrid_key_table() -> [[u32; 3]; HYBRID_MAX] {
    let mut table = [[0u32; 3]; HYBRID_MAX];
    let mut j = 0;
    while j < HYBRID_MAX {
        let bits = 8 * (SCALAR_STEP * (j + 1)) as u64;
        table[j] = [
            gf2::x_pow_mod(3 * bits - 33),
            gf2::x_pow_mod(2 * bits - 33),
            gf2::x_pow_mod(bits - 33),
        ];
        j += 1;
    }
    table
}

/// The pair of constants that folds a 16-byte accumulator forward by `distance` bytes:
/// `[x^(8·distance + 31), x^(8·distance − 33)] mod P` for its first and second 8 bytes (see the
/// parent module's docs).
const fn fold_keys(distance: usize) -> [u32; 2] {
    let bits = 8 * distance as u64;
    [gf2::x_pow_mod(bits + 31), gf2::x_pow_mod(bits - 33)]
}

/// Fold constants for the distances the hybrid block uses.
const FOLD_64: [u32; 2] = fold_keys(64);
/// See [`FOLD_64`].
const FOLD_48: [u32; 2] = fold_keys(48);
/// See [`FOLD_64`].
const FOLD_32: [u32; 2] = fold_keys(32);
/// See [`FOLD_64`].
const FOLD_16: [u32; 2] = fold_keys(16);

/// Whether this CPU has the `crc32` and `pclmulqdq` instructions. `is_x86_feature_detected!`
/// runs `cpuid` once and caches the answer, so this is a load and a test.
#[inline]
pub(super) fn available() -> bool {
    std::arch::is_x86_feature_detected!("sse4.2")
        && std::arch::is_x86_feature_detected!("pclmulqdq")
}

/// `crc32c_append(crc, data)` with the hardware path, or `None` when the input is shorter
/// than [`MIN_LEN`] or the CPU lacks the instructions.
#[inline]
pub(super) fn append(crc: u32, data: &[u8]) -> Option<u32> {
    if data.len() >= MIN_LEN && available() {
        // SAFETY: `append_hw` is only compiled with `sse4.2` and `pclmulqdq` enabled, and we
        // have just checked that the running CPU supports both. It has no other precondition.
        Some(unsafe { append_hw(crc, data) })
    } else {
        None
    }
}

/// Reads a little-endian 64-bit word from an 8-byte chunk.
#[inline(always)]
fn word(chunk: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(chunk);
    u64::from_le_bytes(bytes)
}

/// CRC-32C of `data` continued from `crc`, for any length (short inputs simply run one stream).
#[target_feature(enable = "sse4.2,pclmulqdq")]
pub(super) fn append_hw(crc: u32, data: &[u8]) -> u32 {
    // The instruction works on the raw CRC register, without the final XOR.
    let mut state = u64::from(!crc);
    let mut rest = data;
    // Hybrid blocks: vector folding and three crc32 streams side by side.
    while rest.len() >= HYBRID_MIN * HYBRID_STEP {
        let steps = (rest.len() / HYBRID_STEP).min(HYBRID_MAX);
        let keys = HYBRID_KEYS.get(steps - 1).copied().unwrap_or_default();
        let (block, tail) = rest.split_at(steps * HYBRID_STEP);
        state = hybrid(state, block, keys);
        rest = tail;
    }
    // Large blocks: stream length a multiple of 64 bytes, at most BIG_MAX.
    while rest.len() >= 3 * BIG_STEP {
        let len = (rest.len() / (3 * BIG_STEP) * BIG_STEP).min(BIG_MAX);
        let [ka, kb] = BIG_KEYS
            .get(len / BIG_STEP - 1)
            .copied()
            .unwrap_or_default();
        let (block, tail) = rest.split_at(3 * len);
        state = three_streams(state, block, ka, kb);
        rest = tail;
    }
    // One small block (streams of 8 to 56 bytes) for most of what is left (< 192 bytes).
    if rest.len() >= 3 * SMALL_STEP {
        let len = rest.len() / (3 * SMALL_STEP) * SMALL_STEP;
        let [ka, kb] = SMALL_KEYS
            .get(len / SMALL_STEP - 1)
            .copied()
            .unwrap_or_default();
        let (block, tail) = rest.split_at(3 * len);
        state = three_streams(state, block, ka, kb);
        rest = tail;
    }
    // The last 0 to 23 bytes, one stream.
    let mut words = rest.chunks_exact(8);
    for w in &mut words {
        state = _mm_crc32_u64(state, word(w));
    }
    let mut state = state as u32;
    for &byte in words.remainder() {
        state = _mm_crc32_u8(state, byte);
    }
    !state
}

/// Loads 16 bytes as a vector: the first 8 in the low half.
#[inline]
#[target_feature(enable = "sse4.2,pclmulqdq")]
fn load16(chunk: &[u8]) -> __m128i {
    let (lo, hi) = chunk.split_at(8);
    _mm_set_epi64x(word(hi) as i64, word(lo) as i64)
}

/// Broadcast-free key vector: `keys[0]` in the low half, `keys[1]` in the high half.
#[inline]
#[target_feature(enable = "sse4.2,pclmulqdq")]
fn key_vector(keys: [u32; 2]) -> __m128i {
    _mm_set_epi64x(i64::from(keys[1]), i64::from(keys[0]))
}

/// Moves accumulator `acc` forward by the distance `keys` were made for: returns a 16-byte
/// value that, placed that many bytes later, contributes the same to the CRC.
#[inline]
#[target_feature(enable = "sse4.2,pclmulqdq")]
fn fold(acc: __m128i, keys: __m128i) -> __m128i {
    _mm_xor_si128(
        _mm_clmulepi64_si128::<0x00>(acc, keys),
        _mm_clmulepi64_si128::<0x11>(acc, keys),
    )
}

/// Runs the CRC register `state` over a hybrid block of `n` steps (`block.len()` is
/// `n * HYBRID_STEP`, `n >= 1`): the first `64n` bytes are folded with `pclmulqdq` in four
/// vector accumulators, the rest is three `crc32` streams of `8 * HYBRID_WORDS * n` bytes,
/// and one step of the loop advances all seven chains. `keys` are `HYBRID_KEYS[n - 1]`.
#[inline]
#[target_feature(enable = "sse4.2,pclmulqdq")]
fn hybrid(state: u64, block: &[u8], keys: [u32; 3]) -> u64 {
    let steps = block.len() / HYBRID_STEP;
    debug_assert!(steps >= 1 && block.len() == steps * HYBRID_STEP);
    let (vector, scalar) = block.split_at(steps * VEC_STEP);
    let len = steps * SCALAR_STEP;
    let (a, rest) = scalar.split_at(len);
    let (b, c) = rest.split_at(len);
    let (c, c_last) = c.split_at(len - 8);

    // The vector part starts with the incoming register XORed into its first 4 bytes: a CRC
    // register is exactly what the first 32 message bits contribute.
    let (first, vector) = vector.split_at(VEC_STEP);
    let (f01, f23) = first.split_at(32);
    let (f0, f1) = f01.split_at(16);
    let (f2, f3) = f23.split_at(16);
    let mut acc0 = _mm_xor_si128(load16(f0), _mm_cvtsi64_si128(state as i64));
    let mut acc1 = load16(f1);
    let mut acc2 = load16(f2);
    let mut acc3 = load16(f3);
    let fold64 = key_vector(FOLD_64);

    // Steps 2..=n of the vector part alongside steps 1..n of the streams (C's body is one
    // word short, so the zip stops there).
    let (a_main, a_tail) = a.split_at((steps - 1) * SCALAR_STEP);
    let (b_main, b_tail) = b.split_at((steps - 1) * SCALAR_STEP);
    let (c_main, c_tail) = c.split_at((steps - 1) * SCALAR_STEP);
    let (mut crc_a, mut crc_b, mut crc_c) = (0u64, 0u64, 0u64);
    let scalar_steps = a_main
        .chunks_exact(SCALAR_STEP)
        .zip(b_main.chunks_exact(SCALAR_STEP))
        .zip(c_main.chunks_exact(SCALAR_STEP));
    for (chunk, ((sa, sb), sc)) in vector.chunks_exact(VEC_STEP).zip(scalar_steps) {
        let (v01, v23) = chunk.split_at(32);
        let (v0, v1) = v01.split_at(16);
        let (v2, v3) = v23.split_at(16);
        acc0 = _mm_xor_si128(fold(acc0, fold64), load16(v0));
        acc1 = _mm_xor_si128(fold(acc1, fold64), load16(v1));
        acc2 = _mm_xor_si128(fold(acc2, fold64), load16(v2));
        acc3 = _mm_xor_si128(fold(acc3, fold64), load16(v3));
        for ((wa, wb), wc) in sa
            .chunks_exact(8)
            .zip(sb.chunks_exact(8))
            .zip(sc.chunks_exact(8))
        {
            crc_a = _mm_crc32_u64(crc_a, word(wa));
            crc_b = _mm_crc32_u64(crc_b, word(wb));
            crc_c = _mm_crc32_u64(crc_c, word(wc));
        }
    }
    for wa in a_tail.chunks_exact(8) {
        crc_a = _mm_crc32_u64(crc_a, word(wa));
    }
    for wb in b_tail.chunks_exact(8) {
        crc_b = _mm_crc32_u64(crc_b, word(wb));
    }
    for wc in c_tail.chunks_exact(8) {
        crc_c = _mm_crc32_u64(crc_c, word(wc));
    }

    // Fold the four accumulators onto the last one; the vector part then has the CRC of
    // those 16 bytes after as many zero bytes (which leave a zero register unchanged).
    let acc = _mm_xor_si128(
        _mm_xor_si128(
            fold(acc0, key_vector(FOLD_48)),
            fold(acc1, key_vector(FOLD_32)),
        ),
        _mm_xor_si128(fold(acc2, key_vector(FOLD_16)), acc3),
    );
    let crc_v = _mm_crc32_u64(
        _mm_crc32_u64(0, _mm_cvtsi128_si64(acc) as u64),
        _mm_extract_epi64::<1>(acc) as u64,
    );

    // Combine: shift the vector part past the three streams, A past two, B past one.
    let product = _mm_xor_si128(
        _mm_xor_si128(
            _mm_clmulepi64_si128::<0x00>(
                _mm_cvtsi64_si128(crc_v as i64),
                key_vector([keys[0], keys[1]]),
            ),
            _mm_clmulepi64_si128::<0x10>(
                _mm_cvtsi64_si128(crc_a as i64),
                key_vector([keys[0], keys[1]]),
            ),
        ),
        _mm_clmulepi64_si128::<0x00>(_mm_cvtsi64_si128(crc_b as i64), key_vector([keys[2], 0])),
    );
    let shifted = _mm_cvtsi128_si64(product) as u64;
    _mm_crc32_u64(crc_c, word(c_last) ^ shifted)
}

/// Runs the CRC register `state` over `block` (three streams of `block.len() / 3` bytes, a
/// multiple of 8) and returns the register after the whole block. `ka` and `kb` are the keys
/// for that stream length.
#[inline]
#[target_feature(enable = "sse4.2,pclmulqdq")]
fn three_streams(state: u64, block: &[u8], ka: u32, kb: u32) -> u64 {
    let len = block.len() / 3;
    debug_assert!(len >= 8 && len.is_multiple_of(8));
    let (a, rest) = block.split_at(len);
    let (b, c) = rest.split_at(len);
    // Each stream's last word is folded in after the loop: C's is where the combine lands.
    let (a, a_last) = a.split_at(len - 8);
    let (b, b_last) = b.split_at(len - 8);
    let (c, c_last) = c.split_at(len - 8);
    let (mut crc_a, mut crc_b, mut crc_c) = (state, 0u64, 0u64);
    // Three independent dependency chains: the CPU overlaps their latencies.
    for ((wa, wb), wc) in a
        .chunks_exact(8)
        .zip(b.chunks_exact(8))
        .zip(c.chunks_exact(8))
    {
        crc_a = _mm_crc32_u64(crc_a, word(wa));
        crc_b = _mm_crc32_u64(crc_b, word(wb));
        crc_c = _mm_crc32_u64(crc_c, word(wc));
    }
    crc_a = _mm_crc32_u64(crc_a, word(a_last));
    crc_b = _mm_crc32_u64(crc_b, word(b_last));
    // crc_a·ka ⊕ crc_b·kb, a 64-bit product whose CRC (with the x^33 the multiplication and
    // the instruction add) is crc_a·x^(16·len) ⊕ crc_b·x^(8·len) mod P.
    let keys = _mm_set_epi64x(i64::from(kb), i64::from(ka));
    let va: __m128i = _mm_cvtsi64_si128(crc_a as i64);
    let vb: __m128i = _mm_cvtsi64_si128(crc_b as i64);
    let product = _mm_xor_si128(
        _mm_clmulepi64_si128::<0x00>(va, keys),
        _mm_clmulepi64_si128::<0x10>(vb, keys),
    );
    let shifted = _mm_cvtsi128_si64(product) as u64;
    // CRC is linear: feeding `last ^ shifted` adds crc(shifted) to stream C's register.
    _mm_crc32_u64(crc_c, word(c_last) ^ shifted)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One `pclmulqdq` + one `crc32` computes a·b·x^33 mod P: the identity the combine uses.
    #[test]
    fn clmul_then_crc32_multiplies_by_x33() {
        if !available() {
            return;
        }
        #[target_feature(enable = "sse4.2,pclmulqdq")]
        fn mul_x33(a: u32, b: u32) -> u32 {
            let p = _mm_clmulepi64_si128::<0x00>(
                _mm_cvtsi64_si128(i64::from(a)),
                _mm_cvtsi64_si128(i64::from(b)),
            );
            _mm_crc32_u64(0, _mm_cvtsi128_si64(p) as u64) as u32
        }
        let x33 = gf2::x_pow_mod(33);
        for (a, b) in [
            (1u32, 1u32),
            (0x8000_0000, 0x4000_0000),
            (0xDEAD_BEEF, 0x1234_5678),
        ] {
            // SAFETY: `available()` returned true above, so the CPU has both features.
            let got = unsafe { mul_x33(a, b) };
            assert_eq!(got, gf2::mul_mod(gf2::mul_mod(a, b), x33));
        }
    }

    #[test]
    fn keys_match_their_definition() {
        assert_eq!(BIG_KEYS[0], keys(64));
        assert_eq!(BIG_KEYS[BIG_KEYS.len() - 1], keys(BIG_MAX));
        assert_eq!(SMALL_KEYS[6], keys(56));
        // x^(8·8 − 33) = x^31: the single bit for x^31, bit 0 in reflected order.
        assert_eq!(keys(8)[1], 1);
        for (j, hybrid) in HYBRID_KEYS.iter().enumerate() {
            let [two, one] = keys(SCALAR_STEP * (j + 1));
            assert_eq!(hybrid[1..], [two, one], "steps {}", j + 1);
            // Shifting past three streams is shifting past two, then one more.
            let one_stream = gf2::x_pow_mod(8 * (SCALAR_STEP * (j + 1)) as u64);
            assert_eq!(hybrid[0], gf2::mul_mod(two, one_stream));
        }
        assert_eq!(FOLD_64, [gf2::x_pow_mod(543), gf2::x_pow_mod(479)]);
    }

    #[test]
    fn hardware_path_matches_the_crate_around_every_block_boundary() {
        if !available() {
            return;
        }
        let data: Vec<u8> = (0..2 * HYBRID_MAX * HYBRID_STEP + 3 * BIG_MAX + 400)
            .map(|i: usize| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let mut lengths: Vec<usize> = (0..=1000).collect();
        for base in [
            3 * BIG_MAX,
            HYBRID_MAX * HYBRID_STEP,
            HYBRID_MAX * HYBRID_STEP + HYBRID_MIN * HYBRID_STEP,
            2 * HYBRID_MAX * HYBRID_STEP,
            2 * HYBRID_MAX * HYBRID_STEP + 3 * BIG_MAX,
        ] {
            lengths.extend(base.saturating_sub(100)..=base + 100);
        }
        for len in lengths {
            let slice = &data[..len.min(data.len())];
            // SAFETY: `available()` returned true above, so the CPU has both features.
            let ours = unsafe { append_hw(0x0BAD_CAFE, slice) };
            assert_eq!(ours, crc32c::crc32c_append(0x0BAD_CAFE, slice), "len {len}");
        }
    }
}
