//! The `--csv` output of the `minnow bench` commands, written through the `csv` crate.
//!
//! A bench prints its header once and then a row per measurement as it ends, so that a long
//! sweep shows progress and a Ctrl-C keeps what ran. Each row goes through a `csv::Writer`
//! that quotes a field holding a comma, a quote or a line break (a query, layout or metric
//! name such as `status() cost, µs`) and is flushed at once. The numbers arrive formatted: a
//! column keeps the precision its bench documents (`qps` with two decimals, seconds with
//! three), which is what `minnow plot` and docs/plots/data read, rather than the shortest
//! round-trip form serde would print.

use std::io::Write;

/// Writes `fields` to `out` as one CSV record and flushes it.
pub(crate) fn row<I, T>(out: &mut dyn Write, fields: I) -> std::io::Result<()>
where
    I: IntoIterator<Item = T>,
    T: AsRef<[u8]>,
{
    let mut w = csv::Writer::from_writer(&mut *out);
    w.write_record(fields)?;
    w.flush()
}

/// Writes a header row, given as its comma-separated column names.
pub(crate) fn header(out: &mut dyn Write, names: &str) -> std::io::Result<()> {
    row(out, names.split(','))
}

/// Writes `rows` under a `metric,value` header: the summary some benches print after their
/// table (and a blank line).
pub(crate) fn metrics<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    out: &mut dyn Write,
    rows: impl IntoIterator<Item = (K, V)>,
) -> std::io::Result<()> {
    header(out, "metric,value")?;
    for (k, v) in rows {
        row(out, [k.as_ref(), v.as_ref()])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_only_where_needed() {
        let mut out = Vec::new();
        header(&mut out, "metric,threads,value").unwrap();
        row(&mut out, ["status() cost, µs", "4", "1.25"]).unwrap();
        row(&mut out, ["say \"hi\"", "1", "2"]).unwrap();
        metrics(&mut out, [("rows", "7")]).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "metric,threads,value\n\"status() cost, µs\",4,1.25\n\"say \"\"hi\"\"\",1,2\nmetric,value\nrows,7\n"
        );
    }
}
