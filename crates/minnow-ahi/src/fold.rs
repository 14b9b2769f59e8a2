//! Folding a key prefix to a 64-bit hash value.
//!
//! InnoDB calls the hash of a record prefix its *fold* (`rec_fold`, `dtuple_fold`): the first
//! `n_fields` fields of the record (or of the search tuple), mixed with the index id so that
//! two indexes never share entries by accident. A record on a page and a search key fold the
//! same way as long as their first `n_fields` field bytes are equal, which is what lets a
//! lookup find the entry a page build made.
//!
//! The mix is a multiply-rotate over 8-byte words (the same family as FxHash and wyhash),
//! finished with an avalanche step so the high bits, which pick the partition, depend on
//! every input byte. Collisions are harmless: an entry stores the index id and is verified
//! against the page, so a collision costs a failed guess, never a wrong answer.

const K: u64 = 0x9E37_79B9_7F4A_7C15;
const K2: u64 = 0xBF58_476D_1CE4_E5B9;

#[inline]
fn mix(h: u64, x: u64) -> u64 {
    (h ^ x).wrapping_mul(K).rotate_left(31)
}

/// Folds one field's stored bytes (`None`: NULL) into `h`.
#[inline]
fn field(mut h: u64, f: Option<&[u8]>) -> u64 {
    let Some(b) = f else {
        return mix(h, 0xFFFF_FFFF_FFFF_FFFF);
    };
    h = mix(h, b.len() as u64);
    let mut chunks = b.chunks_exact(8);
    for c in chunks.by_ref() {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = mix(h, u64::from_le_bytes(w));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        for (d, s) in w.iter_mut().zip(rest) {
            *d = *s;
        }
        h = mix(h, u64::from_le_bytes(w));
    }
    h
}

/// The last step of a fold: spreads every input bit over the whole word.
#[inline]
fn finish(mut h: u64) -> u64 {
    h ^= h >> 32;
    h = h.wrapping_mul(K2);
    h ^ (h >> 29)
}

/// The fold of the fields `fields` (stored bytes, `None` for NULL) of index `index_id`.
pub fn fold<'a>(index_id: u64, fields: impl Iterator<Item = Option<&'a [u8]>>) -> u64 {
    let mut h = mix(K2, index_id);
    for f in fields {
        h = field(h, f);
    }
    finish(h)
}

/// [`fold`] of fields stored back to back in `bytes`, none of them NULL, field `i` ending
/// at `ends[i]` (the first starting at 0): the same value, computed in one loop over the
/// ends, without an iterator of fields to drive. `None` if an end lies past `bytes` or
/// before the previous one. A page build folds every record of the page this way when the
/// key's first fields have fixed widths.
#[inline]
pub fn fold_adjacent(index_id: u64, bytes: &[u8], ends: &[usize]) -> Option<u64> {
    let mut h = mix(K2, index_id);
    let mut start = 0;
    for &end in ends {
        h = field(h, Some(bytes.get(start..end)?));
        start = end;
    }
    Some(finish(h))
}

#[cfg(test)]
mod tests {
    use super::{fold, fold_adjacent};

    /// Fields back to back fold as the same fields one by one, for every split of the bytes
    /// into up to three fields; ends out of order or past the bytes give `None`.
    #[test]
    fn adjacent_fields_fold_as_the_fields_do() {
        let bytes: Vec<u8> = (0u8..40).map(|b| b.wrapping_mul(37)).collect();
        for a in 0..=bytes.len() {
            for b in a..=bytes.len() {
                for n in 1..=3 {
                    let ends = [a, b, bytes.len()];
                    let ends = &ends[3 - n..];
                    let mut start = 0;
                    let fields = ends.iter().map(|&e| {
                        let f = Some(&bytes[start..e]);
                        start = e;
                        f
                    });
                    assert_eq!(
                        fold_adjacent(5, &bytes, ends),
                        Some(fold(5, fields)),
                        "{ends:?}"
                    );
                }
            }
        }
        assert_eq!(
            fold_adjacent(5, &bytes, &[]),
            Some(fold(5, std::iter::empty()))
        );
        assert_eq!(fold_adjacent(5, &bytes, &[41]), None);
        assert_eq!(fold_adjacent(5, &bytes, &[8, 4]), None);
    }

    #[test]
    fn equal_prefixes_fold_equal_and_the_index_id_matters() {
        let a: [Option<&[u8]>; 2] = [Some(b"abc"), Some(&[1, 2, 3, 4, 5, 6, 7, 8, 9])];
        let b: [Option<&[u8]>; 2] = [Some(b"abc"), Some(&[1, 2, 3, 4, 5, 6, 7, 8, 9])];
        assert_eq!(fold(7, a.iter().copied()), fold(7, b.iter().copied()));
        assert_ne!(fold(7, a.iter().copied()), fold(8, a.iter().copied()));
        assert_ne!(
            fold(7, a.iter().copied()),
            fold(7, a.iter().copied().take(1))
        );
        // NULL differs from empty, and field boundaries matter.
        let null: [Option<&[u8]>; 1] = [None];
        let empty: [Option<&[u8]>; 1] = [Some(b"")];
        assert_ne!(
            fold(1, null.iter().copied()),
            fold(1, empty.iter().copied())
        );
        let ab: [Option<&[u8]>; 2] = [Some(b"a"), Some(b"b")];
        let a_b: [Option<&[u8]>; 2] = [Some(b"ab"), Some(b"")];
        assert_ne!(fold(1, ab.iter().copied()), fold(1, a_b.iter().copied()));
    }

    #[test]
    fn consecutive_integers_spread_over_partitions() {
        let mut seen = [0u32; 64];
        for k in 0u64..64_000 {
            let b = k.to_be_bytes();
            let f = fold(3, std::iter::once(Some(&b[..])));
            seen[(f >> 58) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 500), "{seen:?}");
    }
}
