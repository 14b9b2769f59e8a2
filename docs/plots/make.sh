#!/bin/sh
# Regenerates every plot in docs/plots from the CSV files in docs/plots/data with `minnow plot`
# (crates/minnow-workload/src/plot.rs: plain SVG). Run from the repository root:
#   sh docs/plots/make.sh
# docs/plots/data/e2.csv is the thread sweep `cargo bench --bench e2_reads` writes to
# <criterion dir>/e2_reads/results.csv (or `minnow bench reads2007 --csv`); mvcc.csv is the
# sweep `cargo bench --bench mvcc_oltp` wrote to <criterion dir>/mvcc_oltp/results.json (both
# commit settings); e1_mix.csv is the per-second rows of two `minnow bench oltp --csv` runs
# (the write-heavy mix, doublewrite on and off); e2_1m.csv the 1M-row sweep of `minnow bench
# reads2007 --csv`; every other file holds the numbers of its
# docs/EXPERIMENTS.md table. In e4_ratios.csv the article's "+8 %" is 1.08; its ranges and
# "±1 %" cells are left out.
set -e
plot() { cargo run --quiet --release -p minnow-cli -- plot "$@"; }
d=docs/plots
plot $d/data/e2.csv --out $d/e2.svg --kind line --x threads --y qps --series organisation \
    --facet query --log-x --log-y --y-label "queries/s" \
    --title "E2: the 2007 read micro-benchmark, clustered vs heap (queries per second)"
plot $d/data/e2_1m.csv --out $d/e2_1m.svg --kind line --x threads --y qps --series organisation \
    --facet query --log-x --log-y --y-label "queries/s" \
    --title "E2 at 1M rows with the adaptive hash index, clustered vs heap (queries per second)"
plot $d/data/e1.csv --out $d/e1.svg --kind bar --x run --y tps --series doublewrite \
    --y-label "update_index tps" --title "E1: doublewrite on vs off (update_index)"
plot $d/data/e1_mix.csv --out $d/e1_mix.svg --x time_s --y value --series run --facet metric \
    --title "E1: the write-heavy mix, 1M rows, 16 threads, doublewrite on vs off (per second)"
plot $d/data/e5_stamp.csv --out $d/e5.svg --kind line --x page_kib --y ns_per_page \
    --series algorithm --log-x --log-y --y-label "ns per page (stamp)" \
    --title "E5: checksum cost per page"
plot $d/data/e6.csv --out $d/e6.svg --kind bar --x part --y bytes_per_frame \
    --y-label "bytes per frame" --title "E6: buffer pool bookkeeping per 16 KiB frame (61 bytes)"
plot $d/data/e8.csv --out $d/e8.svg --kind bar --x plan --y value --facet metric --log-y \
    --title "E8: one user's 5,000 revisions on a cold pool (no dump load)"
plot $d/data/e7.csv --out $d/e7.svg --x threads --y rows_per_sec --series keys --log-x \
    --y-label "rows/s" --title "E7: parallel inserts, auto-increment lock modes and explicit keys"
plot $d/data/e4_point.csv --out $d/e4.svg --kind bar --x ahi --y value --series run \
    --facet metric --title "E4: primary key point lookup, adaptive hash index off vs on (1 thread)"
plot $d/data/e4_ratios.csv --out $d/e4_ratios.svg --kind bar --x query --y noahi_over_base \
    --series who --y-label "response time, noahi / base" \
    --title "E4: AHI off, response time normalised to base (above 1: slower without the hash)"
plot $d/data/e5_load.csv --out $d/e5_load.svg --kind bar --x load --y value --series checksum \
    --facet metric --title "E5: one-thread load of 200,000 sbtest rows by page checksum"
plot $d/data/e9.csv --out $d/e9.svg --kind bar --x phase --y value --facet metric \
    --title "E9: count(*) over 10,000 rows with 1,000,000 committed updates and an old read view"
plot $d/data/e10.csv --out $d/e10.svg --x threads --y value --series series --facet metric \
    --title "E10: a status() snapshot while N threads run point gets, and their throughput"
plot $d/data/e11.csv --out $d/e11.svg --kind bar --x run --y seconds --series restart \
    --facet measure --y-label "s after the restart" \
    --title "E11: restart cold vs with the pool dump loaded (no bar: not within the run)"
plot $d/data/mvcc.csv --out $d/mvcc.svg --x threads --y tps --series mode --facet commit --log-x \
    --y-label "transactions/s" --title "MVCC: sysbench with one transaction per event (purge on)"
plot $d/data/mvcc.csv --out $d/mvcc_history.svg --x threads --y history_max --series mode \
    --facet commit --log-x --y-label "history list length (max)" \
    --title "MVCC: the largest history list length sampled during each 5 s run"
