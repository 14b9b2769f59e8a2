//! One process per data directory: a second opener, in this process or another, is refused
//! with a typed error naming the directory and the holder's pid; the lock goes with `close`,
//! with a dropped handle and with the process.

use minnow::{ColumnDef, ColumnType, Config, Database, Error, TableDef, Value};

fn table(db: &Database) -> minnow::Table {
    db.create_table(
        TableDef::new("t")
            .column(ColumnDef::new("id", ColumnType::U64))
            .primary_key(&["id"]),
    )
    .unwrap()
}

fn assert_locked(r: minnow::Result<Database>, dir: &std::path::Path) {
    match r {
        Err(Error::Locked(minnow::cause::DirLockError::Locked { dir: d, pid })) => {
            assert_eq!(d, dir);
            assert_eq!(pid, Some(std::process::id()));
        }
        Err(e) => panic!("expected the directory to be locked, got {e}"),
        Ok(_) => panic!("a second handle opened a directory that is open"),
    }
}

#[test]
fn a_second_open_or_create_in_the_same_process_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    table(&db).insert(&[Value::UInt(1)]).unwrap();
    assert_locked(Database::open(dir.path(), Config::default()), dir.path());
    assert_locked(Database::create(dir.path(), Config::default()), dir.path());
    let msg = Database::open(dir.path(), Config::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("in use by process"), "{msg}");
    // The refused opener changed nothing: the first handle goes on.
    db.table("t").unwrap().insert(&[Value::UInt(2)]).unwrap();
    db.close().unwrap();

    // Closed: the next opener gets it; dropped without close: the same.
    let db = Database::open(dir.path(), Config::default()).unwrap();
    assert_eq!(db.check().unwrap().rows["t"], 2);
    drop(db);
    let db = Database::open(dir.path(), Config::default()).unwrap();
    db.close().unwrap();
}

#[test]
fn a_stale_lock_file_from_a_dead_holder_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    Database::create(dir.path(), Config::default())
        .unwrap()
        .close()
        .unwrap();
    // What a killed process leaves: the file with its pid, and no lock (the kernel let go).
    std::fs::write(dir.path().join(minnow_io::LOCK_FILE), "999999\n").unwrap();
    let db = Database::open(dir.path(), Config::default()).unwrap();
    db.close().unwrap();
}

#[test]
fn a_lock_file_that_is_a_directory_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    Database::create(dir.path(), Config::default())
        .unwrap()
        .close()
        .unwrap();
    std::fs::remove_file(dir.path().join(minnow_io::LOCK_FILE)).unwrap();
    std::fs::create_dir(dir.path().join(minnow_io::LOCK_FILE)).unwrap();
    match Database::open(dir.path(), Config::default()) {
        Err(Error::Locked(minnow::cause::DirLockError::Io { path, .. })) => {
            assert_eq!(path, dir.path().join(minnow_io::LOCK_FILE));
        }
        Err(e) => panic!("expected a lock IO error, got {e}"),
        Ok(_) => panic!("opened without a lock"),
    }
}

/// Set in the child process this test spawns: the directory the child must try to open.
const CHILD_DIR: &str = "MINNOW_DIR_LOCK_CHILD";

/// The child's half of the cross-process test: does nothing unless spawned by it.
#[test]
#[ignore = "the child process's half; run by the test that spawns it"]
fn child_tries_to_open() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    match Database::open(&dir, Config::default()) {
        Err(Error::Locked(minnow::cause::DirLockError::Locked { pid, .. })) => {
            println!("CHILD-LOCKED pid={}", pid.map_or(0, |p| p));
        }
        Err(e) => println!("CHILD-ERROR {e}"),
        Ok(db) => {
            println!("CHILD-OPENED");
            db.close().unwrap();
        }
    }
}

fn run_child(dir: &std::path::Path) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_tries_to_open",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn another_process_is_refused_while_open_and_admitted_after_close() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path(), Config::default()).unwrap();
    table(&db).insert(&[Value::UInt(7)]).unwrap();
    let out = run_child(dir.path());
    assert!(
        out.contains(&format!("CHILD-LOCKED pid={}", std::process::id())),
        "{out}"
    );
    db.close().unwrap();
    let out = run_child(dir.path());
    assert!(out.contains("CHILD-OPENED"), "{out}");
    let db = Database::open(dir.path(), Config::default()).unwrap();
    assert_eq!(
        db.table("t").unwrap().get(&[Value::UInt(7)]).unwrap(),
        Some(vec![Value::UInt(7)])
    );
    db.close().unwrap();
}
