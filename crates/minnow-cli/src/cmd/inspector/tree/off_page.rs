//! Off-page columns met while walking a tree: normal on a clustered leaf, a problem elsewhere.
//!
//! A BLOB, TEXT or long VARCHAR value too long for its record lives on a chain of overflow
//! pages, and the clustered leaf record keeps only a 20-byte reference to it (FORMAT.md §5.3:
//! the chain's space id, its first page, the BLOB header offset 38, the value's length). That
//! is the normal state of a table with long values, not damage. `minnow tree` does not read the
//! chains (`minnow check` walks every one, `minnow history` the ones of a key); it checks what
//! the reference alone can tell, and reports a reference as a problem when:
//!
//! - it sits where no off-page value can be: in a node pointer, or in a field that is not a
//!   variable-length non-key field of a clustered record ([`RecordLayout::may_be_external`]);
//! - it is not 20 bytes long;
//! - it names another tablespace than the index's own (overflow pages come from the index's
//!   segments);
//! - its first page is page 0 (the tablespace header), `FIL_NULL`, or past the end of the file;
//! - its BLOB header offset is not 38;
//! - its length is 0, has InnoDB's owner/inherited flag bits set, or needs more overflow pages
//!   than the file holds.

use minnow_btree::record::RecordLayout;
use minnow_btree::tree::overflow::{BLOB_HEADER, ExternRef, part_capacity};
use minnow_page::fil::FIL_NULL;

/// Where a reference was found: the index's tablespace and the page holding the record.
pub(super) struct Site {
    /// The index's tablespace id.
    pub space_id: u32,
    /// Pages in that tablespace's file.
    pub pages: u64,
    /// Its page size in bytes.
    pub page_len: usize,
    /// The page holding the record.
    pub page_no: u32,
    /// That page's level (0: leaf).
    pub level: u16,
    /// The record's origin in the page.
    pub origin: usize,
}

/// What is wrong with the off-page reference `stored` in field `field` of the record at `at`,
/// read with `layout` (the leaf layout, or the node-pointer layout above the leaves); `None`
/// when it is a well-formed reference on a clustered leaf.
pub(super) fn problem(
    layout: &RecordLayout,
    field: usize,
    stored: &[u8],
    at: &Site,
) -> Option<String> {
    let whose = format!(
        "page {}: record at {}: field {field} is stored off-page",
        at.page_no, at.origin
    );
    if at.level > 0 || layout.is_node_ptr() {
        return Some(format!("{whose} in a node pointer"));
    }
    if !layout.may_be_external(field) {
        return Some(format!(
            "{whose}, but only variable-length non-key fields of a clustered record can be"
        ));
    }
    let Some(ext) = ExternRef::decode(stored) else {
        return Some(format!(
            "{whose} with a reference of {} bytes, not 20",
            stored.len()
        ));
    };
    let why = if ext.space != at.space_id {
        format!(
            "names tablespace {}, the index is in tablespace {}",
            ext.space, at.space_id
        )
    } else if ext.page == 0 || ext.page == FIL_NULL || u64::from(ext.page) >= at.pages {
        format!(
            "points at page {}, outside the overflow pages of a {}-page file",
            ext.page, at.pages
        )
    } else if usize::try_from(ext.offset).ok() != Some(BLOB_HEADER) {
        format!(
            "puts the BLOB header at offset {}, not {BLOB_HEADER}",
            ext.offset
        )
    } else if ext.len == 0 || ext.len >> 62 != 0 {
        format!("gives the length {:#x}", ext.len)
    } else {
        let per_page = part_capacity(at.page_len).max(1) as u64;
        let needed = ext.len.div_ceil(per_page);
        if needed > at.pages {
            format!(
                "gives a length of {} bytes, {needed} overflow pages, more than the file's {}",
                ext.len, at.pages
            )
        } else {
            return None;
        }
    };
    Some(format!("{whose}: its reference {why}"))
}
