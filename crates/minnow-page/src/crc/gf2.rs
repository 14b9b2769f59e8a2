//! Arithmetic on polynomials over GF(2) modulo the CRC-32C polynomial, in the bit-reflected
//! representation CRC-32C uses: bit 31 of a `u32` is the coefficient of x^0 and bit 0 the
//! coefficient of x^31. Slow (a loop per bit) but `const`: the x86 path evaluates it at compile
//! time to build its key tables.

/// The CRC-32C polynomial without its x^32 term, reflected: x^32 ≡ `POLY` (mod P).
pub(crate) const POLY: u32 = 0x82F6_3B78;

/// The polynomial 1 (x^0).
pub(crate) const ONE: u32 = 0x8000_0000;

/// `a · b mod P`.
pub(crate) const fn mul_mod(a: u32, b: u32) -> u32 {
    let mut product = 0;
    let mut b = b; // b · x^i as i goes up
    let mut i = 0;
    while i < 32 {
        if a & (ONE >> i) != 0 {
            product ^= b;
        }
        // Multiply b by x: every coefficient moves up one power (one bit right); a term that
        // overflows into x^32 is replaced by what x^32 is congruent to.
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
        i += 1;
    }
    product
}

/// `x^n mod P`, by square-and-multiply.
pub(crate) const fn x_pow_mod(n: u64) -> u32 {
    let mut result = ONE;
    let mut square = ONE >> 1; // x^1, then x^2, x^4, ...
    let mut n = n;
    while n != 0 {
        if n & 1 != 0 {
            result = mul_mod(result, square);
        }
        square = mul_mod(square, square);
        n >>= 1;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_powers_are_single_bits() {
        assert_eq!(x_pow_mod(0), ONE);
        assert_eq!(x_pow_mod(1), ONE >> 1);
        assert_eq!(x_pow_mod(31), 1);
        assert_eq!(x_pow_mod(32), POLY);
        assert_eq!(mul_mod(x_pow_mod(20), x_pow_mod(45)), x_pow_mod(65));
    }

    /// Appending `n` zero bytes to a message multiplies its raw CRC register by x^(8n): the
    /// fact the combine step rests on, checked against the `crc32c` crate.
    #[test]
    fn shifting_by_x_pow_equals_appending_zeros() {
        for n in [1usize, 3, 8, 100, 1000] {
            let register = !crc32c::crc32c(b"minnow");
            let zeros = vec![0u8; n];
            let appended = !crc32c::crc32c_append(!register, &zeros);
            assert_eq!(mul_mod(register, x_pow_mod(8 * n as u64)), appended);
        }
    }
}
