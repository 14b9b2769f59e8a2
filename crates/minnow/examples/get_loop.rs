//! A loop of `Table::get` for instruction counts (callgrind): `get_loop N` loads 10 000 rows
//! and then runs N point gets. Run with two values of N and subtract to get the cost of a get.
use minnow::{ColumnDef, ColumnType, Config, Database, TableDef, Value};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir()?;
    let config = Config {
        flush_log_at_trx_commit: minnow::FlushAtCommit::Lazy,
        buffer_pool_dump_at_shutdown: false,
        ..Config::default()
    };
    let db = Database::create(dir.path(), config)?;
    let t = db.create_table(
        TableDef::new("t")
            .column(ColumnDef::new("id", ColumnType::U64))
            .column(ColumnDef::new("v", ColumnType::I64))
            .column(ColumnDef::new("name", ColumnType::Var(40)))
            .primary_key(&["id"]),
    )?;
    for i in 0..10_000u64 {
        t.insert(&[
            Value::UInt(i),
            Value::Int(i as i64),
            Value::text("some name here"),
        ])?;
    }
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut found = 0u64;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        found += u64::from(t.get(&[Value::UInt(x % 10_000)])?.is_some());
    }
    println!("{found}");
    Ok(())
}
