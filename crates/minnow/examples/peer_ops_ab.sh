#!/usr/bin/env bash
# A/B runs of two builds of the `peer_ops` example (crates/minnow/examples/peer_ops.rs), for
# telling a 10 % change from noise on a busy machine:
#
#   crates/minnow/examples/peer_ops_ab.sh A_BIN B_BIN ROUNDS OP ROWS N [KNOB...]
#
# e.g. a build of main copied aside as A, this branch's build as B:
#
#   crates/minnow/examples/peer_ops_ab.sh base/peer_ops target/release/examples/peer_ops 15 \
#       get_tx_bytes_with_warm 1000000 200000 buffer_pool_size=1G
#
# Each round runs both binaries once, in alternating order (A B, then B A, ...), so that a
# drift in the machine's load hits both alike. The figure taken from each run is the
# measured part's CPU time per operation of the thread that ran it (for a `_2t` operation,
# the readers' summed CPU time per read), which a busy machine disturbs far less than the
# wall clock; wall time per operation is reported beside it. The summary gives each build's
# median, quartiles and range, the ratio of the medians, and the median of the per-round
# ratios B/A (each round pairs runs made close together in time): below 1 means B is faster.
#
# With CALLGRIND=1 each binary also runs once under callgrind (valgrind must be installed)
# with the cache simulator, N reduced to CALLGRIND_N (default 20000): instructions (Ir),
# first-level data misses (D1mr) and last-level data misses (DLmr) per operation of the
# measured part, a machine-independent figure where hardware counters (`perf stat -e
# instructions`) are not available, as in most VMs. Only the calling thread is counted, so
# use it with the one-thread operations.
#
# Every run's line is also written to ab-runs.tsv in the current directory.
set -euo pipefail

if [ $# -lt 6 ]; then
    sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
A=$1
B=$2
ROUNDS=$3
shift 3
OP=$1
ROWS=$2
N=$3
shift 3
KNOBS=("$@")

# One run: prints "cpu_ns wall_ns" per operation.
run() {
    local out
    out=$("$1" "$OP" "$ROWS" "$N" "${KNOBS[@]}")
    if [[ $OP == *_2t* ]]; then
        awk '/2 threads:/ { print $6, $3 }' <<<"$out"
    else
        awk '/ns\/op wall/ { print $4, $1 }' <<<"$out"
    fi
}

printf 'round\tbuild\tcpu_ns\twall_ns\n' >ab-runs.tsv
for ((r = 1; r <= ROUNDS; r++)); do
    if ((r % 2)); then order="A B"; else order="B A"; fi
    for w in $order; do
        if [ "$w" = A ]; then bin=$A; else bin=$B; fi
        read -r cpu wall < <(run "$bin")
        printf '%d\t%s\t%s\t%s\n' "$r" "$w" "$cpu" "$wall" | tee -a ab-runs.tsv
    done
done

awk -F'\t' '
function sort(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
}
function q(a, n, p,   x, i) { x = 1 + (n - 1) * p; i = int(x); return a[i] + (x - i) * (a[i + 1 > n ? n : i + 1] - a[i]) }
NR > 1 {
    k = $2; c[k, ++n[k]] = $3; w[k, n[k]] = $4; by[$1, k] = $3
    rounds = $1
}
END {
    for (b = 0; b < 2; b++) {
        k = b ? "B" : "A"
        for (i = 1; i <= n[k]; i++) { x[i] = c[k, i]; y[i] = w[k, i] }
        sort(x, n[k]); sort(y, n[k])
        med[k] = q(x, n[k], 0.5)
        printf "%s: CPU ns/op median %.0f (quartiles %.0f-%.0f, range %.0f-%.0f); wall median %.0f, %d runs\n",
            k, med[k], q(x, n[k], 0.25), q(x, n[k], 0.75), x[1], x[n[k]], q(y, n[k], 0.5), n[k]
    }
    m = 0
    for (r = 1; r <= rounds; r++) if (by[r, "A"] > 0 && by[r, "B"] != "") ratio[++m] = by[r, "B"] / by[r, "A"]
    sort(ratio, m)
    printf "B/A: ratio of medians %.3f; per-round ratios median %.3f (quartiles %.3f-%.3f, range %.3f-%.3f)\n",
        med["B"] / med["A"], q(ratio, m, 0.5), q(ratio, m, 0.25), q(ratio, m, 0.75), ratio[1], ratio[m]
}' ab-runs.tsv

if [ "${CALLGRIND:-0}" = 1 ]; then
    CN=${CALLGRIND_N:-20000}
    for w in A B; do
        if [ "$w" = A ]; then bin=$A; else bin=$B; fi
        f=$(mktemp)
        valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*measured*' \
            --cache-sim=yes --callgrind-out-file="$f" "$bin" "$OP" "$ROWS" "$CN" "${KNOBS[@]}" \
            >/dev/null 2>&1
        awk -v n="$CN" -v w="$w" '
            /^events:/ { for (i = 2; i <= NF; i++) ev[i - 1] = $i }
            /^(totals|summary):/ { for (i = 2; i <= NF; i++) t[ev[i - 1]] = $i }
            END { printf "%s: per op %.0f Ir, %.1f D1mr, %.1f DLmr (callgrind, %d ops)\n", w, t["Ir"] / n, t["D1mr"] / n, t["DLmr"] / n, n }
        ' "$f"
        rm -f "$f"
    done
fi
