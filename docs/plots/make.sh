#!/bin/sh
# Regenerates every plot in docs/plots from the CSV files in docs/plots/data with `minnow plot`
# (crates/minnow-workload/src/plot.rs: plain SVG, no dependencies). Run from the repository root:
#   sh docs/plots/make.sh
# docs/plots/data/e2.csv is the thread sweep `cargo bench --bench e2_reads` writes to
# <criterion dir>/e2_reads/results.csv (or `minnow bench reads2007 --csv`); the E1, E5 and E6
# files hold the numbers of their docs/EXPERIMENTS.md tables.
set -e
plot() { cargo run --quiet --release -p minnow-cli -- plot "$@"; }
d=docs/plots
plot $d/data/e2.csv --out $d/e2.svg --kind line --x threads --y qps --series organisation \
    --facet query --log-x --log-y --y-label "queries/s" \
    --title "E2: the 2007 read micro-benchmark, clustered vs heap (queries per second)"
plot $d/data/e1.csv --out $d/e1.svg --kind bar --x run --y tps --series doublewrite \
    --y-label "update_index tps" --title "E1: doublewrite on vs off (update_index)"
plot $d/data/e5_stamp.csv --out $d/e5.svg --kind line --x page_kib --y ns_per_page \
    --series algorithm --log-x --log-y --y-label "ns per page (stamp)" \
    --title "E5: checksum cost per page"
plot $d/data/e6.csv --out $d/e6.svg --kind bar --x part --y bytes_per_frame \
    --y-label "bytes per frame" --title "E6: buffer pool bookkeeping per 16 KiB frame (61 bytes)"
