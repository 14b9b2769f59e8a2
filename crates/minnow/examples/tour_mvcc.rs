//! The tour's MVCC experiment (`docs/tour/07-mvcc.md`): readers with old snapshots next to
//! a writer, the version chain they read from, and what a crash does to a transaction that
//! had not committed.
//!
//! ```sh
//! cargo run -q -p minnow --example tour_mvcc                   # in a temporary directory
//! cargo run -q -p minnow --example tour_mvcc -- --keep DIR     # leave the database in DIR
//! ```
//!
//! 1. Row 1 of table `acct` is inserted, then reader A (REPEATABLE READ) reads it: its read
//!    view is taken.
//! 2. An autocommit update changes the balance; reader B (READ COMMITTED) begins.
//! 3. Writer W updates row 1 and does not commit. Each reader, W and an autocommit read say
//!    what they see, and `Table::history` shows the chain with the version each one reads.
//! 4. W commits: A still sees its snapshot, B's next statement sees W's change. A delete puts
//!    a delete-marked version on top of the chain.
//! 5. A transaction updates row 2 and the process "dies" before it commits (the transaction
//!    is forgotten, so nothing rolls it back; the database is closed, its pages written).
//!    A copy of the files is opened: recovery rolls the transaction back.
//!
//! With `--keep DIR` (DIR must not exist yet) the database is left in DIR as step 5 left it,
//! with row 2's uncommitted version still on top: `minnow history DIR acct 2` shows it
//! `active`, and `minnow history DIR acct 1` shows row 1's chain.
//!
//! The output is the same on every run: transaction ids and undo addresses are assigned in
//! order from a fresh database.

use std::error::Error;
use std::path::{Path, PathBuf};

use minnow::history::ReadView;
use minnow::{
    ColumnDef, ColumnType, Config, Database, Isolation, RowHistory, Table, TableDef, Transaction,
    Value,
};

fn table_def() -> TableDef {
    TableDef::new("acct")
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("owner", ColumnType::Var(16)))
        .column(ColumnDef::new("balance", ColumnType::I64))
        .primary_key(&["id"])
}

fn row(id: u64, owner: &str, balance: i64) -> Vec<Value> {
    vec![Value::UInt(id), Value::text(owner), Value::Int(balance)]
}

fn config() -> Config {
    Config {
        buffer_pool_dump_at_shutdown: false,
        log_file_size: 4 << 20,
        // One rollback segment: every undo log goes to one stream, so the chapter can walk
        // the whole history on one undo page (`minnow page DIR/ibdata1 4`).
        rollback_segments: 1,
        // No purge thread: the chains and the history list stay as the steps left them,
        // whatever the timing (purge is the chapter's next topic, not this experiment's).
        purge_threads: 0,
        ..Config::default()
    }
}

fn show_row(r: Option<Vec<Value>>) -> String {
    match r.as_deref() {
        Some([_, Value::Bytes(owner), Value::Int(b)]) => {
            format!("({}, balance {b})", String::from_utf8_lossy(owner))
        }
        Some(other) => format!("{other:?}"),
        None => "no row".to_string(),
    }
}

fn show_view(v: &ReadView) -> String {
    format!(
        "up_limit {}, low_limit {}, creator {}, active {:?}",
        v.up_limit(),
        v.low_limit(),
        v.creator(),
        v.active_ids()
    )
}

/// Prints a chain, newest first, and which of `readers` reads each version.
fn show_chain(h: &RowHistory, readers: &[(&str, &ReadView)]) {
    for (i, v) in h.versions.iter().enumerate() {
        let who: Vec<&str> = readers
            .iter()
            .filter(|(_, view)| h.seen_by(view) == Some(i))
            .map(|(name, _)| *name)
            .collect();
        let undo = v.undo.map_or("none", minnow::history::kind_name);
        let read_by = match (who.is_empty(), v.deleted) {
            (true, _) => String::new(),
            (false, false) => format!("   <- read by {}", who.join(", ")),
            (false, true) => format!("   <- read by {} (deleted: no row)", who.join(", ")),
        };
        println!(
            "    #{i} trx {:>2} {:<9} {:<13} undo {:<11} {:<7} {}{read_by}",
            v.trx_id,
            format!("{:?}", v.writer).to_lowercase(),
            v.roll_ptr.to_string(),
            undo,
            if v.deleted { "deleted" } else { "" },
            show_row(Some(v.values.clone())),
        );
    }
    println!("    end: {:?}", h.end);
}

fn history(t: &Table, id: u64) -> Result<RowHistory, Box<dyn Error>> {
    t.history(&[Value::UInt(id)])?
        .ok_or_else(|| format!("row {id} has no record").into())
}

fn get(tx: &mut Transaction, t: &Table, id: u64) -> Result<String, Box<dyn Error>> {
    Ok(show_row(tx.get(t, &[Value::UInt(id)])?))
}

/// Steps 1-5 in `dir`.
fn run(dir: &Path) -> Result<(), Box<dyn Error>> {
    let db = Database::create(dir, config())?;
    let t = db.create_table(table_def())?;

    println!("1. insert rows 1 and 2 (autocommit); reader A (REPEATABLE READ) reads row 1");
    t.insert(&row(1, "ada", 100))?;
    t.insert(&row(2, "bob", 10))?;
    let mut a = db.begin_with(Isolation::RepeatableRead)?;
    println!("   A sees {}", get(&mut a, &t, 1)?);
    let view_a = a.read_view()?;
    println!("   A's read view: {}", show_view(&view_a));

    println!("2. update row 1 to balance 80 (autocommit); reader B (READ COMMITTED) begins");
    t.update(&row(1, "ada", 80))?;
    let mut b = db.begin_with(Isolation::ReadCommitted)?;

    println!("3. writer W updates row 1 to balance 50 and has not committed");
    let mut w = db.begin()?;
    w.update(&t, &row(1, "ada", 50))?;
    println!("   W is transaction {}", w.id());
    println!("   A sees {}   (its snapshot)", get(&mut a, &t, 1)?);
    println!(
        "   B sees {}   (committed when its statement began)",
        get(&mut b, &t, 1)?
    );
    println!("   W sees {}   (its own change)", get(&mut w, &t, 1)?);
    println!(
        "   an autocommit read sees {}",
        show_row(t.get(&[Value::UInt(1)])?)
    );
    let view_b = b.read_view()?;
    let view_w = w.read_view()?;
    println!("   B's read view: {}", show_view(&view_b));
    println!("   W's read view: {}", show_view(&view_w));
    println!("   the chain of row 1, newest first (Table::history):");
    show_chain(
        &history(&t, 1)?,
        &[("A", &view_a), ("B", &view_b), ("W", &view_w)],
    );

    println!("4. W commits; row 1 is deleted (autocommit)");
    w.commit()?;
    println!("   A sees {}   (the same snapshot)", get(&mut a, &t, 1)?);
    println!(
        "   B sees {}   (a new statement, a new view)",
        get(&mut b, &t, 1)?
    );
    t.delete(&[Value::UInt(1)])?;
    println!("   B sees {}", get(&mut b, &t, 1)?);
    println!("   the chain of row 1:");
    show_chain(&history(&t, 1)?, &[("A", &view_a), ("B", &b.read_view()?)]);
    a.commit()?;
    b.commit()?;

    println!("5. transaction X updates row 2; the process stops before X commits");
    let mut x = db.begin()?;
    x.update(&t, &row(2, "bob", 0))?;
    println!("   X is transaction {}; the chain of row 2:", x.id());
    show_chain(&history(&t, 2)?, &[]);
    // Forgetting X skips the rollback that dropping it would do: as if the process died here.
    // Closing writes every page (X's uncommitted change included) and checkpoints.
    std::mem::forget(x);
    drop(t);
    db.close()?;

    let copy = tempfile::tempdir()?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        std::fs::copy(entry.path(), copy.path().join(entry.file_name()))?;
    }
    let db = Database::open(copy.path(), config())?;
    let report = db.open_report();
    println!(
        "   open (on a copy): {} transaction(s) rolled back, {} undo record(s) applied",
        report.rolled_back, report.undo_records_applied
    );
    let t = db.table("acct")?;
    println!(
        "   row 2 is {}; its chain:",
        show_row(t.get(&[Value::UInt(2)])?)
    );
    show_chain(&history(&t, 2)?, &[]);
    drop(t);
    db.close()?;
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let keep: Option<PathBuf> = match args.as_slice() {
        [] => None,
        [flag, dir] if flag == "--keep" => Some(PathBuf::from(dir)),
        _ => return Err("usage: tour_mvcc [--keep DIR]".into()),
    };
    match keep {
        Some(dir) => {
            if dir.exists() {
                return Err(
                    format!("{} exists; --keep wants a new directory", dir.display()).into(),
                );
            }
            run(&dir)?;
            println!("the database is in {}: try", dir.display());
            println!("  minnow history {} acct 1", dir.display());
            println!("  minnow history {} acct 2", dir.display());
        }
        None => {
            let tmp = tempfile::tempdir()?;
            run(&tmp.path().join("db"))?;
        }
    }
    Ok(())
}
