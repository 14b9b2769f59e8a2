//! The text form of `minnow inspect`'s report (`--json` prints the report's fields instead).

use std::io::Write;

use super::{InspectReport, LEGEND, ZipReport};
use crate::space::PageSizeSource;

pub(super) fn print_text(r: &InspectReport, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "file:          {}", r.file)?;
    let source = match r.page_size_source {
        PageSizeSource::Flags => "from FSP flags",
        PageSizeSource::Option => "from --page-size",
        PageSizeSource::ZipHeader => "logical, from block 0's zip header",
    };
    writeln!(out, "page size:     {} bytes ({source})", r.page_size)?;
    if let Some(z) = &r.compression {
        writeln!(out, "compressed:    {}", z.layout.text())?;
    }
    if let Some(zip_size) = r.zip_size {
        writeln!(
            out,
            "compressed:    ROW_FORMAT=COMPRESSED, {zip_size}-byte physical pages \
             (KEY_BLOCK_SIZE={}); space usage not computed (the pages are not decompressed)",
            zip_size / 1024
        )?;
    }
    let unit = if r.compression.is_some() || r.zip_size.is_some() {
        "compressed pages"
    } else {
        "pages"
    };
    let mut size = format!("{} {unit} in file ({} bytes)", r.file_pages, r.file_bytes);
    if r.trailing_bytes > 0 {
        size.push_str(&format!(" + a PARTIAL page of {} bytes", r.trailing_bytes));
    }
    match &r.fsp {
        Some(fsp) => {
            writeln!(out, "space id:      {}", fsp.space_id)?;
            writeln!(out, "flags:         {}", fsp.flags.summary)?;
            writeln!(
                out,
                "size:          {} pages in FSP header, {size}",
                fsp.size_pages
            )?;
            writeln!(out, "free limit:    {}", fsp.free_limit)?;
            let l = &fsp.lists;
            writeln!(
                out,
                "extents:       {} free, {} free-frag, {} full-frag; inode pages {} full, {} with room; {} frag pages used",
                l.free_extents,
                l.free_frag_extents,
                l.full_frag_extents,
                l.inode_pages_full,
                l.inode_pages_free,
                fsp.frag_n_used
            )?;
        }
        None => writeln!(out, "size:          {size} (no FSP header)")?,
    }
    match &r.lsn {
        Some(l) => writeln!(out, "LSN range:     {} .. {}", l.min, l.max)?,
        None => writeln!(out, "LSN range:     (no page with a non-zero LSN)")?,
    }
    writeln!(
        out,
        "checksums:     {} [policy {}]",
        r.checksums.text(),
        r.policy
    )?;
    if !r.corrupt_pages.is_empty() {
        let shown: Vec<String> = r
            .corrupt_pages
            .iter()
            .take(20)
            .map(u64::to_string)
            .collect();
        let more = r.corrupt_pages.len().saturating_sub(20);
        let tail = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        writeln!(out, "corrupt pages: {}{tail}", shown.join(", "))?;
    }
    if !r.foreign_space_ids.is_empty() {
        let ids: Vec<String> = r
            .foreign_space_ids
            .iter()
            .map(|(id, n)| format!("{id} ({n} pages)"))
            .collect();
        writeln!(out, "other space ids in page headers: {}", ids.join(", "))?;
    }
    if let Some(z) = &r.compression {
        print_zip(z, out)?;
    }
    writeln!(out)?;
    writeln!(out, "page types:")?;
    for t in &r.page_types {
        writeln!(out, "  {:<24} {:>5} {:>10}", t.name, t.type_number, t.pages)?;
    }
    writeln!(out)?;
    if r.indexes.is_empty() {
        writeln!(out, "indexes: none")?;
    } else {
        writeln!(out, "indexes:")?;
        let w = r
            .indexes
            .iter()
            .map(|i| i.index_id.to_string().len())
            .max()
            .unwrap_or(0)
            .max("index id".len());
        // The index's name, when the dictionary beside the file gave one.
        let nw = r
            .indexes
            .iter()
            .filter_map(|i| i.name.as_ref().map(|n| n.len()))
            .max()
            .map(|n| n.max("index".len()));
        let name = |n: Option<&str>| match nw {
            Some(nw) => format!(" {:<nw$}", n.unwrap_or("?")),
            None => String::new(),
        };
        writeln!(
            out,
            "  {:>w$}{} {:>8} {:>8} {:>8} {:>6} {:>6} {:>10}  pages per level (0 = leaves)",
            "index id",
            name(Some("index")),
            "pages",
            "leaves",
            "non-leaf",
            "height",
            "root",
            "leaf recs"
        )?;
        for i in &r.indexes {
            let levels: Vec<String> = i
                .levels
                .iter()
                .map(|l| format!("{}:{}", l.level, l.pages))
                .collect();
            let root = i
                .root_page
                .map_or_else(|| "-".to_string(), |p| p.to_string());
            writeln!(
                out,
                "  {:>w$}{} {:>8} {:>8} {:>8} {:>6} {:>6} {:>10}  {}",
                i.index_id,
                name(i.name.as_deref()),
                i.pages,
                i.leaves,
                i.non_leaf,
                i.height,
                root,
                i.leaf_records,
                levels.join(" ")
            )?;
        }
    }
    print_usage(r, out)?;
    writeln!(out)?;
    match &r.map {
        Some(map) => {
            writeln!(out, "page map ({} pages per line):", map.width)?;
            for (i, line) in map.lines.iter().enumerate() {
                writeln!(out, "  {:>8}  {line}", i * map.width)?;
            }
            writeln!(out, "legend:")?;
            for (c, what) in LEGEND {
                writeln!(out, "  {c}  {what}")?;
            }
        }
        None => writeln!(
            out,
            "page map: omitted ({} pages; raise --map-max to see it)",
            r.file_pages
        )?,
    }
    Ok(())
}

/// The compression section: block counts, payload sizes, the share histogram, the ratio and,
/// with `--zip-pages`, one line per block.
fn print_zip(z: &ZipReport, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "compression ({} KiB blocks, {} payload bytes each at most):",
        z.layout.key_block_size, z.layout.payload_capacity
    )?;
    writeln!(
        out,
        "  blocks:      {} compressed pages, {} empty, {} damaged",
        z.compressed_pages, z.empty_blocks, z.damaged_blocks
    )?;
    if let Some(p) = &z.payload {
        writeln!(
            out,
            "  payload:     min {} median {} max {} bytes, {} in all",
            p.min,
            p.median,
            p.max,
            kib(p.total)
        )?;
    }
    if let Some(ratio) = z.ratio {
        let to_one = if ratio > 0.0 { 1.0 / ratio } else { 0.0 };
        writeln!(
            out,
            "  ratio:       payload / logical page {:.1}% on average ({to_one:.1}:1)",
            ratio * 100.0
        )?;
    }
    if z.compressed_pages > 0 {
        writeln!(out, "  payload as a share of the block:")?;
        let most = z.share_of_block.iter().map(|b| b.pages).max().unwrap_or(0);
        for b in &z.share_of_block {
            let bar = (b.pages * 40)
                .checked_div(most)
                .map_or(0, |n| usize::try_from(n).unwrap_or(40));
            let line = format!(
                "    {:>3}-{:>3}%  {:>8}  {}",
                b.from_pct,
                b.to_pct,
                b.pages,
                "#".repeat(bar)
            );
            writeln!(out, "{}", line.trim_end())?;
        }
    }
    if let Some(pages) = &z.pages {
        writeln!(out, "  per page (non-empty blocks):")?;
        writeln!(
            out,
            "    {:>8}  {:<14} {:>8} {:>9}",
            "page", "type", "payload", "of block"
        )?;
        for e in pages {
            let payload = e
                .payload_len
                .map_or_else(|| "?".to_string(), |p| p.to_string());
            let share = e
                .share_of_block
                .map_or_else(|| "?".to_string(), |s| format!("{:.1}%", s * 100.0));
            let damage = e
                .error
                .as_ref()
                .map_or_else(String::new, |why| format!("  DAMAGED: {why}"));
            writeln!(
                out,
                "    {:>8}  {:<14} {payload:>8} {share:>9}{damage}",
                e.page, e.page_type
            )?;
        }
    }
    Ok(())
}

fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

/// The space-usage and LSN-age sections.
fn print_usage(r: &InspectReport, out: &mut dyn Write) -> std::io::Result<()> {
    // Not computed for InnoDB compressed pages (said under "compressed:").
    if !r.indexes.is_empty() && r.zip_size.is_none() {
        writeln!(
            out,
            "\nspace usage (fill = live records + directory over page capacity):"
        )?;
        writeln!(
            out,
            "  {:>10} {:>7} {:>7} {:>12} {:>14}",
            "index id", "fill", "leaves", "free", "fragmented"
        )?;
        for i in &r.indexes {
            writeln!(
                out,
                "  {:>10} {:>6.1}% {:>6.1}% {:>12} {:>14}",
                i.index_id,
                i.usage.fill_factor * 100.0,
                i.leaf_usage.fill_factor * 100.0,
                kib(i.usage.free_bytes),
                kib(i.usage.fragmented_bytes)
            )?;
        }
        let u = &r.index_usage;
        writeln!(
            out,
            "  {:>10} {:>6.1}% {:>7} {:>12} {:>14}",
            "all",
            u.fill_factor * 100.0,
            "",
            kib(u.free_bytes),
            kib(u.fragmented_bytes)
        )?;
        if u.bad_headers > 0 {
            writeln!(
                out,
                "  ({} INDEX pages with a header that does not fit the page, not counted)",
                u.bad_headers
            )?;
        }
    }
    writeln!(out, "pages never written (all zero): {}", r.empty_pages)?;
    if let Some(a) = &r.lsn_ages {
        writeln!(
            out,
            "\npages by LSN age (behind the {} at {}):",
            a.reference, a.reference_lsn
        )?;
        for b in &a.buckets {
            writeln!(out, "  {:<12} {:>8}", b.age, b.pages)?;
        }
        if let (Some(c), Some(n)) = (a.checkpoint_lsn, a.pages_after_checkpoint) {
            writeln!(out, "  written since the checkpoint at {c}: {n} pages")?;
        }
        if a.pages_ahead > 0 {
            writeln!(
                out,
                "  AHEAD of the reference (newer than the log): {} pages",
                a.pages_ahead
            )?;
        }
    }
    Ok(())
}
