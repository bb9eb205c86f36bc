#!/usr/bin/env bash
# Run both benchmarks and write their output to benchmarks/output/{speed,accuracy}.txt.
# Usage: benchmarks/run.sh [--quick]    (PYTHON=/path/to/python to choose the interpreter)
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
OUT=benchmarks/output
mkdir -p "$OUT"

speed_args=()
accuracy_args=()
if [[ "${1:-}" == "--quick" ]]; then
    speed_args=(--tokens 250000 --repeats 2)
    accuracy_args=(--quick)
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

run() {
    local name=$1
    shift
    echo "== $name" >&2
    { header "$@"; "$@"; } | tee "$OUT/$name.txt"
}

run speed "$PYTHON" benchmarks/bench_speed.py "${speed_args[@]}"
run accuracy "$PYTHON" benchmarks/bench_accuracy.py "${accuracy_args[@]}"
echo "wrote $OUT/speed.txt and $OUT/accuracy.txt" >&2
