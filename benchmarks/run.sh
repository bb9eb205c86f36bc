#!/usr/bin/env bash
# Run the benchmark suite; each benchmark NAME writes its results page $OUT/NAME.txt whole.
# Usage: benchmarks/run.sh [--quick]   (--quick: smaller corpora and fewer repeats, for a check)
# Environment:
#   ONLY    space-separated names to run (default: the suite, speed marginal accuracy order analysis end_to_end dask)
#   PYTHON  interpreter (default python); OUT: output folder (default benchmarks/output)
#   BASE    git revision that ONLY=versions / versions_10m compare this checkout with (default HEAD~1);
#           marginal runs it beside this checkout only when BASE is set
# Run only when named in ONLY:
#   versions       this checkout's default profile against BASE's, interleaved in one process (1M tokens)
#   versions_10m   the same at 10M tokens of bytes, BPE-8k and BPE-32k
#   first_run      a new user's first `depstat profile` (empty Numba and token caches) against the same
#                  command with Numba's cache filled, this checkout and BASE in the same rounds
#   scaling        time and memory against 10^6 to 10^8 tokens and 8 to 57 offsets of the Linux kernel's
#                  C sources (Debian's linux-source-6.1), scaling_words the same for word tokens,
#                  scaling_1g up to 10^9 tokens of bytes and 1.1 GB of the sources in BPE-8k
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
OUT="${OUT:-benchmarks/output}"
SUITE="speed marginal accuracy order analysis end_to_end dask"
for name in ${ONLY:-}; do
    if [[ " $SUITE versions versions_10m first_run scaling scaling_words scaling_1g " != *" $name "* ]]; then
        echo "unknown benchmark in ONLY: $name (the suite: $SUITE; also versions versions_10m first_run scaling scaling_words scaling_1g)" >&2
        exit 2
    fi
done
mkdir -p "$OUT"

speed_args=()
marginal_args=()
accuracy_args=()
order_args=()
analysis_args=()
end_to_end_args=()
dask_args=()
versions_args=(--base "${BASE:-HEAD~1}")
if [[ "${1:-}" == "--quick" ]]; then
    speed_args=(--tokens 250000 --repeats 2)
    marginal_args=(--tokens 500000 --rounds 1)
    accuracy_args=(--quick)
    order_args=(--quick)
    analysis_args=(--quick)
    end_to_end_args=(--mb 10 --max-offset 256 --encode-mb 2)
    dask_args=(--tokens 300000)
    versions_args+=(--tokens 300000 --rounds 3)
elif [[ $# -gt 0 ]]; then
    echo "usage: $0 [--quick]" >&2
    exit 2
fi

header() {
    echo "command: $*"
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "nproc: $(nproc); CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "depstat commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- depstat 2>/dev/null || echo ' (depstat/ has uncommitted changes)')"
    echo
}

ran=()
run() {
    local name=$1
    shift
    if [[ " ${ONLY:-$SUITE} " != *" $name "* ]]; then
        return
    fi
    echo "== $name" >&2
    { header "$@"; "$@"; } | tee "$OUT/$name.txt"
    ran+=("$name")
}

run speed "$PYTHON" benchmarks/bench_speed.py "${speed_args[@]}"
run marginal "$PYTHON" benchmarks/bench_marginal.py ${BASE:+--base "$BASE"} "${marginal_args[@]}"
run accuracy "$PYTHON" benchmarks/bench_accuracy.py "${accuracy_args[@]}"
run order "$PYTHON" benchmarks/bench_order.py "${order_args[@]}"
run analysis "$PYTHON" benchmarks/bench_analysis.py "${analysis_args[@]}"
run end_to_end "$PYTHON" benchmarks/bench_end_to_end.py "${end_to_end_args[@]}"
run dask "$PYTHON" benchmarks/bench_dask.py "${dask_args[@]}"
run versions "$PYTHON" benchmarks/bench_versions.py "${versions_args[@]}"
run versions_10m "$PYTHON" benchmarks/bench_versions.py --tokens 10000000 --streams bytes,bpe-8k,bpe-32k --rounds 5 \
    "${versions_args[@]}"
run first_run "$PYTHON" benchmarks/bench_first_run.py --base "${BASE:-HEAD~1}"
run scaling "$PYTHON" benchmarks/bench_scaling.py
run scaling_words "$PYTHON" benchmarks/bench_scaling.py --streams words --mb 1100
run scaling_1g "$PYTHON" benchmarks/bench_scaling.py --streams bytes,bpe-8k --sizes 1e7,1e8,3e8,1e9 --offset-counts 8,29 \
    --rounds 2 --mb 1100
echo "wrote ${ran[*]:-nothing} into $OUT" >&2
