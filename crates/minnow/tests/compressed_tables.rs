//! Compressed tables end to end: a table of text rows compressed into 8 KiB zlib blocks and
//! one into 4 KiB LZ4 blocks, each with a secondary index, filled row by row and by
//! `Table::load`; reads, updates and deletes; reopen; `check`; where the pages went (the
//! shared `zip*.ibd` files, not `ibdata1`); what `status` counts; and the settings that are
//! refused.

use std::path::Path;

use minnow::{
    ColumnDef, ColumnType, Compression, Config, Database, Error, IndexDef, KeyBlockSize, Scan,
    TableDef, Value, ZipAlgorithm,
};

/// A small deterministic generator of English-like text: words from a fixed list picked by
/// a linear congruential generator, so pages compress about as prose does.
struct Text(u64);

const WORDS: &[&str] = &[
    "the",
    "buffer",
    "pool",
    "keeps",
    "pages",
    "of",
    "every",
    "table",
    "in",
    "memory",
    "and",
    "writes",
    "them",
    "back",
    "when",
    "a",
    "checkpoint",
    "needs",
    "log",
    "space",
    "redo",
    "record",
    "index",
    "tree",
    "split",
    "merge",
    "leaf",
    "root",
    "segment",
    "extent",
    "row",
    "version",
    "undo",
    "purge",
    "reader",
    "writer",
    "lock",
    "commit",
    "crash",
    "recovery",
];

impl Text {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn sentence(&mut self, words: usize) -> String {
        let mut s = String::new();
        for i in 0..words {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(WORDS[self.next() as usize % WORDS.len()]);
        }
        s
    }
}

fn def(name: &str, c: Compression) -> TableDef {
    TableDef::new(name)
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("title", ColumnType::Var(200)))
        .column(ColumnDef::new("body", ColumnType::Var(400)))
        .primary_key(&["id"])
        .index(IndexDef::new("by_title", &["title"]))
        .compressed(c)
}

/// A row of prose: compresses well with zlib (about 4:1 in 8 KiB blocks).
fn row(id: u64, text: &mut Text) -> Vec<Value> {
    let title = format!("{} {id}", text.sentence(3));
    let words = 20 + (text.next() % 30) as usize;
    vec![
        Value::UInt(id),
        Value::text(&title),
        Value::text(&text.sentence(words)),
    ]
}

/// A row of log lines: one template with a few varying fields, which even LZ4 (which only
/// finds repeats, without entropy coding) packs more than 4:1, as a 4 KiB block of a 16 KiB
/// page needs.
fn log_row(id: u64, text: &mut Text) -> Vec<Value> {
    let n = text.next() % 1000;
    let line = format!(
        "2024-02-29T12:00:00Z INFO minnow::table: statement finished table=events kind=insert \
         status=ok rows=1 elapsed_us={n} "
    );
    vec![
        Value::UInt(id),
        Value::text(&format!(
            "minnow::table::statement::finished::insert::into::events::with::status::ok::and \
             ::one::row::in::the::log::of::the::day::event::{}",
            id % 97
        )),
        Value::text(&line.repeat(3)),
    ]
}

fn file_len(dir: &Path, name: &str) -> u64 {
    std::fs::metadata(dir.join(name)).map_or(0, |m| m.len())
}

fn config() -> Config {
    Config {
        buffer_pool_size: 16 << 20,
        ..Config::default()
    }
}

const ROWS: u64 = 3000;

#[test]
fn compressed_tables_store_read_change_and_reopen() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let zlib = Compression::default();
    let lz4 = Compression::lz4(KeyBlockSize::K4);
    let mut want = std::collections::BTreeMap::new();
    let mut want_b = std::collections::BTreeMap::new();
    let ibdata_before;
    {
        let db = Database::create(dir.path(), config())?;
        ibdata_before = file_len(dir.path(), "ibdata1");
        assert!(
            !dir.path().join(zlib.file_name()).exists(),
            "created lazily"
        );
        let a = db.create_table(def("a", zlib))?;
        let b = db.create_table(def("b", lz4))?;
        let c = db.create_table(def("c", zlib))?;
        assert!(dir.path().join("zip8k_zlib-6.ibd").exists());
        assert!(dir.path().join("zip4k_lz4.ibd").exists());
        assert_eq!(a.compression(), Some(zlib));
        assert_eq!(b.compression(), Some(lz4));

        let mut text = Text(7);
        for id in 0..ROWS {
            let r = row(id, &mut text);
            a.insert(&r)?;
            want.insert(id, r);
            let l = log_row(id, &mut text);
            b.insert(&l)?;
            want_b.insert(id, l);
        }
        // `c` shares a's tablespace and is bulk loaded.
        c.load(want.values().cloned())?;

        for id in (0..ROWS).step_by(7) {
            let r = row(id, &mut text);
            a.update(&r)?;
            c.update(&r)?;
            want.insert(id, r);
            let l = log_row(id, &mut text);
            b.update(&l)?;
            want_b.insert(id, l);
        }
        for id in (3..ROWS).step_by(11) {
            a.delete(&[Value::UInt(id)])?;
            b.delete(&[Value::UInt(id)])?;
            c.delete(&[Value::UInt(id)])?;
            want.remove(&id);
            want_b.remove(&id);
        }
        for t in [&a, &c] {
            assert_eq!(t.get(&[Value::UInt(14)])?.as_ref(), want.get(&14));
            assert_eq!(t.get(&[Value::UInt(3)])?, None);
        }
        assert_eq!(b.get(&[Value::UInt(14)])?.as_ref(), want_b.get(&14));
        assert_eq!(b.get(&[Value::UInt(3)])?, None);
        let report = db.check()?;
        assert_eq!(report.rows.get("a"), Some(&(want.len() as u64)));
        assert_eq!(report.rows.get("b"), Some(&(want_b.len() as u64)));
        assert_eq!(report.rows.get("c"), Some(&(want.len() as u64)));

        let s = db.status()?;
        let spaces = &s.compression.tablespaces;
        assert_eq!(spaces.len(), 2, "{spaces:?}");
        let z = spaces
            .iter()
            .find(|t| t.file == "zip8k_zlib-6.ibd")
            .ok_or("no zlib tablespace in status")?;
        assert_eq!(z.space_id, zlib.space_id());
        assert_eq!(z.block_size, KeyBlockSize::K8);
        assert_eq!(z.algorithm, ZipAlgorithm::Zlib(minnow::ZlibLevel::DEFAULT));
        assert!(z.stats.compress_ops > 0, "{z:?}");
        assert_eq!(
            z.stats.compress_ok() + z.stats.compress_failures,
            z.stats.compress_ops
        );
        assert!(z.stats.compress_bytes_in > z.stats.compress_bytes_out);
        let json = s.to_json(None);
        assert!(json.contains("\"file\": \"zip4k_lz4.ibd\""), "{json}");
        assert!(json.contains("\"compress_ops_ok\": "), "{json}");
        db.close()?;
    }

    // Every page of the tables went to the zip files: ibdata1 holds the dictionary and undo
    // only, far less than the rows' bytes.
    let ibdata = file_len(dir.path(), "ibdata1");
    let data_bytes: u64 = want
        .values()
        .chain(want_b.values())
        .flatten()
        .map(|v| v.as_bytes().map_or(8, <[u8]>::len) as u64)
        .sum();
    assert!(
        ibdata - ibdata_before < data_bytes / 2,
        "ibdata1 grew from {ibdata_before} to {ibdata} for {data_bytes} bytes of rows"
    );

    let db = Database::open(dir.path(), config())?;
    assert!(db.open_report().notes.is_empty());
    for (name, c, want) in [("a", zlib, &want), ("b", lz4, &want_b), ("c", zlib, &want)] {
        let t = db.table(name)?;
        assert_eq!(t.compression(), Some(c), "{name}");
        let rows: Vec<Vec<Value>> = t.scan(Scan::all())?.collect::<Result<_, _>>()?;
        let expected: Vec<Vec<Value>> = want.values().cloned().collect();
        assert_eq!(rows, expected, "{name}");
        // Through the secondary index too.
        let first = want.values().next().ok_or("no rows")?;
        let title = std::ops::Bound::Included(vec![first[1].clone()]);
        let hits: Vec<Vec<Value>> = t
            .scan_index("by_title", Scan::range(title.clone(), title))?
            .collect::<Result<_, _>>()?;
        assert!(hits.contains(first), "{name}");
        assert!(
            hits.iter().all(|h| h[1] == first[1]),
            "{name}: {}",
            hits.len()
        );
    }
    let report = db.check()?;
    assert_eq!(report.tables, 3);
    let s = db.status()?;
    for t in &s.compression.tablespaces {
        assert!(
            t.stats.decompress_ops > 0,
            "reads after reopen inflate: {t:?}"
        );
        assert_eq!(
            file_len(dir.path(), &t.file),
            t.pages * t.block_size.bytes() as u64
        );
        assert_eq!(t.file_bytes, file_len(dir.path(), &t.file));
    }
    // Dropping a compressed table gives its segments back to its own tablespace.
    db.drop_table("a")?;
    db.drop_index("b", "by_title")?;
    db.check()?;
    db.close()?;
    let db = Database::open(dir.path(), config())?;
    assert!(matches!(db.table("a"), Err(Error::NoSuchTable { .. })));
    assert_eq!(db.check()?.tables, 2);
    Ok(())
}

#[test]
fn settings_that_cannot_be_stored_are_typed_errors() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Database::create(dir.path(), config())?;
    let k16 = db.create_table(def("k16", Compression::lz4(KeyBlockSize::K16)));
    assert!(
        matches!(k16, Err(Error::BadDefinition { ref table, .. }) if table == "k16"),
        "{k16:?}"
    );
    assert!(matches!(
        Compression::zlib(KeyBlockSize::K8, 10),
        Err(Error::Config {
            knob: "innodb_compression_level",
            ..
        })
    ));
    db.close()?;

    // A block as large as the page.
    let dir = tempfile::tempdir()?;
    let small = Config {
        page_size: minnow::PageSize::K8,
        ..config()
    };
    let db = Database::create(dir.path(), small)?;
    let r = db.create_table(def("big_block", Compression::default()));
    assert!(
        matches!(r, Err(Error::BadDefinition { ref table, .. }) if table == "big_block"),
        "{r:?}"
    );
    assert!(db.tables()?.is_empty());
    db.close()?;

    // full_crc32 tablespaces cannot be compressed.
    let dir = tempfile::tempdir()?;
    let crc = Config {
        checksum_algorithm: minnow::ChecksumAlgorithm::FullCrc32,
        ..config()
    };
    let db = Database::create(dir.path(), crc)?;
    let r = db.create_table(def("t", Compression::default()));
    assert!(
        matches!(r, Err(Error::Config { knob: "innodb_checksum_algorithm", ref reason }) if reason.contains("`t`")),
        "{r:?}"
    );
    assert!(!dir.path().join("zip8k_zlib-6.ibd").exists());
    Ok(())
}

#[test]
fn compression_failures_are_counted_and_leave_the_table_consistent()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Database::create(dir.path(), config())?;
    let t = db.create_table(
        TableDef::new("noise")
            .column(ColumnDef::new("id", ColumnType::U64))
            .column(ColumnDef::new("bytes", ColumnType::Var(300)))
            .primary_key(&["id"])
            .compressed(Compression::lz4(KeyBlockSize::K4)),
    )?;
    // Random bytes do not compress: a leaf holding more than about 4 KiB of them cannot
    // fit its block. The B-tree splits such a page (compression failure, counted) and the
    // insert is made again: every row is stored.
    let mut text = Text(99);
    let mut stored = Vec::new();
    for id in 0..60u64 {
        let bytes: Vec<u8> = (0..300).map(|_| text.next() as u8).collect();
        let r = vec![Value::UInt(id), Value::Bytes(bytes)];
        t.insert(&r)?;
        stored.push(r);
    }
    let per_index = t.compression_stats();
    assert_eq!(per_index.len(), 1);
    let (index, zi) = &per_index[0];
    assert_eq!(index, "PRIMARY");
    assert!(
        zi.failures > 0 && zi.zip_splits > 0 && zi.ops >= 60,
        "{zi:?}"
    );
    let s = db.status()?;
    let z = &s.compression.tablespaces[0];
    assert!(z.stats.compress_failures > 0, "{z:?}");
    assert!(z.stats.compress_ok() > 0, "{z:?}");
    let rows: Vec<Vec<Value>> = t.scan(Scan::all())?.collect::<Result<_, _>>()?;
    assert_eq!(rows, stored);
    assert!(!stored.is_empty());
    assert_eq!(db.check()?.rows.get("noise"), Some(&(stored.len() as u64)));
    Ok(())
}
