//! Keys so long that a 16 KiB page holds two of them: a 6,000-byte primary key, and a
//! secondary index of 5,400- and 5,500-byte entries, loaded in descending and in random order
//! through the embedded API. Every row must be there afterwards, in key order, through both
//! indexes, and `Database::check` must pass (each B-tree valid, each secondary index equal
//! to what its rows call for).

use minnow::{ColumnDef, ColumnType, Config, Database, IndexDef, Scan, TableDef, Value};

/// Rows per load.
const N: u64 = 60;

/// `len` bytes that sort by `i`.
fn long(i: u64, len: usize, fill: u8) -> Vec<u8> {
    let mut k = format!("{i:010}").into_bytes();
    k.resize(len, fill);
    k
}

fn shuffled(seed: u64) -> Vec<u64> {
    let mut keys: Vec<u64> = (0..N).collect();
    minnow_io::SplitMix64(seed).shuffle(&mut keys);
    keys
}

fn orders() -> Vec<(&'static str, Vec<u64>)> {
    vec![
        ("descending", (0..N).rev().collect()),
        ("random", shuffled(7)),
        ("ascending", (0..N).collect()),
    ]
}

#[test]
fn six_thousand_byte_primary_keys_in_any_order() -> Result<(), Box<dyn std::error::Error>> {
    for (name, order) in orders() {
        let dir = tempfile::tempdir()?;
        let db = Database::create(dir.path(), Config::default())?;
        let t = db.create_table(
            TableDef::new("t")
                .column(ColumnDef::new("k", ColumnType::Var(6000)))
                .column(ColumnDef::new("n", ColumnType::U64))
                .primary_key(&["k"])
                .index(IndexDef::new("by_n", &["n"])),
        )?;
        for (n, &i) in order.iter().enumerate() {
            t.insert(&[Value::Bytes(long(i, 6000, b'k')), Value::UInt(i)])
                .map_err(|e| format!("{name}: insert #{n} (row {i}): {e}"))?;
        }
        db.check().map_err(|e| format!("{name}: check: {e}"))?;
        let keys: Vec<Vec<Value>> = t.scan(Scan::all())?.collect::<Result<_, _>>()?;
        let want: Vec<Vec<Value>> = (0..N)
            .map(|i| vec![Value::Bytes(long(i, 6000, b'k')), Value::UInt(i)])
            .collect();
        assert_eq!(keys, want, "{name}");
        let by_n: Vec<Vec<Value>> = t
            .scan_index("by_n", Scan::all())?
            .collect::<Result<_, _>>()?;
        assert_eq!(by_n, want, "{name}: through the secondary index");
        db.close()?;
        // And after a restart.
        let db = Database::open(dir.path(), Config::default())?;
        assert_eq!(db.check()?.rows["t"], N, "{name}");
        db.close()?;
    }
    Ok(())
}

#[test]
fn secondary_entries_of_5400_bytes_in_any_order() -> Result<(), Box<dyn std::error::Error>> {
    // Entries of 5,400 bytes go three to a page; of 5,500, two.
    for ((name, order), len) in orders()
        .into_iter()
        .flat_map(|o| [(o.clone(), 5390), (o, 5490)])
    {
        let name = format!("{name}, {len}-byte values");
        let dir = tempfile::tempdir()?;
        let db = Database::create(dir.path(), Config::default())?;
        let t = db.create_table(
            TableDef::new("t")
                .column(ColumnDef::new("id", ColumnType::U64))
                .column(ColumnDef::new("s", ColumnType::Var(5500)))
                .primary_key(&["id"])
                .index(IndexDef::new("by_s", &["s"])),
        )?;
        // The indexed column descends when the primary key ascends, and the other way round.
        for (n, &i) in order.iter().enumerate() {
            t.insert(&[Value::UInt(N - i), Value::Bytes(long(i, len, b's'))])
                .map_err(|e| format!("{name}: insert #{n} (row {i}): {e}"))?;
        }
        db.check().map_err(|e| format!("{name}: check: {e}"))?;
        let by_s: Vec<Vec<Value>> = t
            .scan_index("by_s", Scan::all())?
            .collect::<Result<_, _>>()?;
        let want: Vec<Vec<Value>> = (0..N)
            .map(|i| vec![Value::UInt(N - i), Value::Bytes(long(i, len, b's'))])
            .collect();
        assert_eq!(by_s, want, "{name}");
        // Half of them deleted again, in another order: the index pages merge.
        for i in shuffled(11).into_iter().filter(|i| i % 2 == 0) {
            t.delete(&[Value::UInt(N - i)])
                .map_err(|e| format!("{name}: delete row {i}: {e}"))?;
        }
        db.check()
            .map_err(|e| format!("{name}: check after deletes: {e}"))?;
        db.close()?;
    }
    Ok(())
}
