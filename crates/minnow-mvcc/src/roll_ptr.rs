//! The roll pointer: where in the undo store the previous version of a record is described.
//!
//! Every clustered record carries one in its `DB_ROLL_PTR` field (7 bytes, 56 bits), laid out
//! exactly as InnoDB's `trx_undo_build_roll_ptr`:
//!
//! ```text
//!  bit 55      54 ........ 48   47 ............... 16   15 ......... 0
//!  insert flag  rollback seg id      undo page number      byte offset
//! ```
//!
//! The insert flag says the undo record describes an *insert*: there is no older version of
//! the row (a reader that cannot see the record's writer treats the row as absent). minnow's
//! rollback segments all live in the system tablespace, whose page numbers are unique, so
//! page and offset find the record and the segment id is always 0 (InnoDB needs it to find
//! the undo tablespace a segment lives in). A roll pointer whose page number is 0
//! points nowhere (page 0 is the FSP header, never an undo page): rows written without undo
//! (bulk loads, the dictionary) carry `1 << 55`, "inserted, no history", as MariaDB writes.

/// The insert flag (bit 55).
pub const INSERT_FLAG: u64 = 1 << 55;

/// A decoded roll pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RollPtr {
    /// True if the undo record is an insert undo record (no older version exists).
    pub insert: bool,
    /// The rollback segment (always 0 in minnow: the page number alone finds the record).
    pub rseg: u8,
    /// The undo page holding the record's first byte (0: no undo record).
    pub page: u32,
    /// The record's byte offset in that page.
    pub offset: u16,
}

impl RollPtr {
    /// The roll pointer of rows that have no undo record: inserted, no history (`1 << 55`).
    pub const NONE: RollPtr = RollPtr {
        insert: true,
        rseg: 0,
        page: 0,
        offset: 0,
    };

    /// Decodes the low 56 bits of `v` (higher bits are ignored).
    pub fn from_u64(v: u64) -> RollPtr {
        RollPtr {
            insert: v & INSERT_FLAG != 0,
            rseg: ((v >> 48) & 0x7F) as u8,
            page: ((v >> 16) & 0xFFFF_FFFF) as u32,
            offset: (v & 0xFFFF) as u16,
        }
    }

    /// The 56-bit value.
    pub fn to_u64(self) -> u64 {
        (u64::from(self.insert) << 55)
            | (u64::from(self.rseg & 0x7F) << 48)
            | (u64::from(self.page) << 16)
            | u64::from(self.offset)
    }

    /// Decodes the 7 bytes of a `DB_ROLL_PTR` field; `None` if `b` is not 7 bytes long.
    pub fn from_field(b: &[u8]) -> Option<RollPtr> {
        if b.len() != 7 {
            return None;
        }
        Some(RollPtr::from_u64(
            b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)),
        ))
    }

    /// True if this pointer addresses an undo record (its page is not 0).
    pub fn has_undo(self) -> bool {
        self.page != 0
    }
}

/// Decodes the 6 bytes of a `DB_TRX_ID` field; `None` if `b` is not 6 bytes long.
pub fn trx_id_from_field(b: &[u8]) -> Option<u64> {
    (b.len() == 6).then(|| b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
}

impl std::fmt::Display for RollPtr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}{}:{}",
            if self.insert { "insert@" } else { "update@" },
            self.page,
            self.offset
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_innodbs() {
        let p = RollPtr {
            insert: true,
            rseg: 5,
            page: 0xDEAD_BEEF,
            offset: 0x1234,
        };
        assert_eq!(
            p.to_u64(),
            (1 << 55) | (5 << 48) | (0xDEAD_BEEF << 16) | 0x1234
        );
        assert_eq!(RollPtr::from_u64(p.to_u64()), p);
        assert_eq!(RollPtr::NONE.to_u64(), 1 << 55);
        assert!(!RollPtr::NONE.has_undo());
        let field = p.to_u64().to_be_bytes();
        assert_eq!(RollPtr::from_field(&field[1..]), Some(p));
        assert_eq!(RollPtr::from_field(&field), None);
        assert_eq!(trx_id_from_field(&[0, 0, 0, 0, 1, 2]), Some(258));
        assert_eq!(trx_id_from_field(&[1]), None);
    }
}
