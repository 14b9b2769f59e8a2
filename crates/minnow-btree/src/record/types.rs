//! The non-integer scalar types: DOUBLE, DATE and DATETIME, and their order-preserving
//! encodings.
//!
//! Every stored key field in minnow compares as bytes (`memcmp`), so each type needs an
//! encoding in which byte order *is* value order.
//!
//! ## DOUBLE: 8 bytes
//!
//! An IEEE 754 double is sign, exponent, mantissa. For positive numbers the bit pattern read
//! as an unsigned integer already grows with the value; negative numbers grow the other way
//! and sit above the positives (their sign bit is set). So: **flip the sign bit of a positive
//! number, flip every bit of a negative one**, then store big-endian. `-inf` becomes
//! `00 0f ff ..`, `-1.0` `40 0f ff ..`, `0.0` `80 00 ..`, `1.0` `bf f0 00 ..`, `+inf`
//! `ff f0 00 ..`.
//!
//! Two values need a decision. **NaN** has no place in an order (it is not even equal to
//! itself): minnow rejects it with [`RecordError::BadValue`]. **-0.0** equals `0.0` as a number
//! but has another bit pattern: minnow stores it as `0.0` (canonicalises it), so a key `-0.0`
//! finds the row stored as `0.0` and reads return `0.0`.
//!
//! ## DATE: 3 bytes
//!
//! InnoDB's packed date: `year * 16 * 32 + month * 32 + day`, big-endian in 3 bytes. Month
//! fits 4 bits and day 5, so the packing orders as the date does. Years `0..=9999`, months
//! `1..=12`, days `1..=` the days of that month (Gregorian leap years): no zero dates.
//!
//! ## DATETIME: 8 bytes
//!
//! MySQL's `DATETIME(6)` packing, as one big-endian 64-bit integer, from the top bit down:
//!
//! ```text
//! bit  63       1 (the sign bit MySQL reserves; always set, values are never negative)
//! bits 62..46   year * 13 + month   (17 bits)
//! bits 45..41   day                 (5 bits)
//! bits 40..36   hour                (5 bits)
//! bits 35..30   minute              (6 bits)
//! bits 29..24   second              (6 bits)
//! bits 23..0    microsecond         (24 bits, 0..=999999)
//! ```
//!
//! Each part is below the weight of the part above it, so the integer orders as the moment
//! does. Ranges: the date as for DATE, hour `0..=23`, minute and second `0..=59` (no leap
//! seconds), microsecond `0..=999_999`.

use super::RecordError;

/// A calendar date (proleptic Gregorian), for DATE columns. Build with [`Date::new`], which
/// checks the range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Date {
    year: u16,
    month: u8,
    day: u8,
}

/// A date and time of day with microseconds, for DATETIME columns. No time zone: it is
/// stored as given. Build with [`DateTime::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DateTime {
    date: Date,
    hour: u8,
    minute: u8,
    second: u8,
    micro: u32,
}

/// Largest year of a DATE or DATETIME.
pub const MAX_YEAR: u16 = 9999;

fn leap(year: u16) -> bool {
    (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400)
}

/// Days in `month` (1..=12) of `year`; 0 for a month out of range.
pub fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

const fn bad(reason: &'static str) -> RecordError {
    RecordError::BadValue { field: 0, reason }
}

impl Date {
    /// The date `year-month-day`; an error ([`RecordError::BadValue`], field 0) if it does
    /// not exist or the year is above [`MAX_YEAR`].
    pub fn new(year: u16, month: u8, day: u8) -> Result<Date, RecordError> {
        if year > MAX_YEAR {
            return Err(bad("year out of range 0..=9999"));
        }
        if !(1..=12).contains(&month) {
            return Err(bad("month out of range 1..=12"));
        }
        if day == 0 || day > days_in_month(year, month) {
            return Err(bad("day out of range for the month"));
        }
        Ok(Date { year, month, day })
    }

    /// The smallest date, 0000-01-01.
    pub const MIN: Date = Date {
        year: 0,
        month: 1,
        day: 1,
    };
    /// The largest date, 9999-12-31.
    pub const MAX: Date = Date {
        year: MAX_YEAR,
        month: 12,
        day: 31,
    };

    /// The year.
    pub fn year(self) -> u16 {
        self.year
    }

    /// The month (1..=12).
    pub fn month(self) -> u8 {
        self.month
    }

    /// The day of the month.
    pub fn day(self) -> u8 {
        self.day
    }

    /// InnoDB's packing `year * 512 + month * 32 + day`.
    pub fn packed(self) -> u32 {
        u32::from(self.year) * 512 + u32::from(self.month) * 32 + u32::from(self.day)
    }

    /// Unpacks [`Date::packed`], checking the range.
    pub fn from_packed(v: u32) -> Result<Date, RecordError> {
        let year = u16::try_from(v / 512).map_err(|_| bad("year out of range 0..=9999"))?;
        Date::new(year, ((v / 32) % 16) as u8, (v % 32) as u8)
    }

    /// The 3 stored bytes.
    pub fn encode(self) -> [u8; 3] {
        let [_, a, b, c] = self.packed().to_be_bytes();
        [a, b, c]
    }

    /// Decodes 3 stored bytes.
    pub fn decode(b: [u8; 3]) -> Result<Date, RecordError> {
        let [a, b, c] = b;
        Date::from_packed(u32::from_be_bytes([0, a, b, c]))
    }
}

impl std::fmt::Display for Date {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

impl DateTime {
    /// The moment `date hour:minute:second.micro`; an error ([`RecordError::BadValue`]) if
    /// a part is out of range.
    pub fn new(
        date: Date,
        hour: u8,
        minute: u8,
        second: u8,
        micro: u32,
    ) -> Result<DateTime, RecordError> {
        if hour > 23 || minute > 59 || second > 59 {
            return Err(bad("time of day out of range 00:00:00..=23:59:59"));
        }
        if micro > 999_999 {
            return Err(bad("microseconds out of range 0..=999999"));
        }
        Ok(DateTime {
            date,
            hour,
            minute,
            second,
            micro,
        })
    }

    /// The smallest DATETIME, 0000-01-01 00:00:00.000000.
    pub const MIN: DateTime = DateTime {
        date: Date::MIN,
        hour: 0,
        minute: 0,
        second: 0,
        micro: 0,
    };
    /// The largest DATETIME, 9999-12-31 23:59:59.999999.
    pub const MAX: DateTime = DateTime {
        date: Date::MAX,
        hour: 23,
        minute: 59,
        second: 59,
        micro: 999_999,
    };

    /// The date.
    pub fn date(self) -> Date {
        self.date
    }

    /// Hour, minute, second and microsecond.
    pub fn time(self) -> (u8, u8, u8, u32) {
        (self.hour, self.minute, self.second, self.micro)
    }

    /// The packed 64-bit integer (see the module docs).
    pub fn packed(self) -> u64 {
        let ym = u64::from(self.date.year) * 13 + u64::from(self.date.month);
        let mut v = 1u64 << 63;
        v |= ym << 46;
        v |= u64::from(self.date.day) << 41;
        v |= u64::from(self.hour) << 36;
        v |= u64::from(self.minute) << 30;
        v |= u64::from(self.second) << 24;
        v | u64::from(self.micro)
    }

    /// Unpacks [`DateTime::packed`], checking every part.
    pub fn from_packed(v: u64) -> Result<DateTime, RecordError> {
        if v >> 63 != 1 {
            return Err(bad("DATETIME without its sign bit"));
        }
        let ym = (v >> 46) & 0x1_FFFF;
        let year = u16::try_from(ym / 13).map_err(|_| bad("year out of range 0..=9999"))?;
        let date = Date::new(year, (ym % 13) as u8, ((v >> 41) & 0x1F) as u8)?;
        DateTime::new(
            date,
            ((v >> 36) & 0x1F) as u8,
            ((v >> 30) & 0x3F) as u8,
            ((v >> 24) & 0x3F) as u8,
            (v & 0xFF_FFFF) as u32,
        )
    }
}

impl std::fmt::Display for DateTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {:02}:{:02}:{:02}.{:06}",
            self.date, self.hour, self.minute, self.second, self.micro
        )
    }
}

/// The 8 stored bytes of a DOUBLE: NaN is rejected, `-0.0` stored as `0.0`.
pub fn encode_double(x: f64) -> Result<[u8; 8], RecordError> {
    let x = canonical_double(x)?;
    let bits = x.to_bits();
    let stored = if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    };
    Ok(stored.to_be_bytes())
}

/// Decodes 8 stored bytes of a DOUBLE.
pub fn decode_double(b: [u8; 8]) -> f64 {
    let stored = u64::from_be_bytes(b);
    let bits = if stored >> 63 == 1 {
        stored & !(1 << 63)
    } else {
        !stored
    };
    f64::from_bits(bits)
}

/// The value a DOUBLE column stores for `x`: `x` itself, `0.0` for `-0.0`, an error for NaN.
pub fn canonical_double(x: f64) -> Result<f64, RecordError> {
    if x.is_nan() {
        return Err(bad("NaN cannot be stored in a DOUBLE column"));
    }
    Ok(if x == 0.0 { 0.0 } else { x })
}
