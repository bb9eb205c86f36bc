#!/usr/bin/env bash
# Run the benchmarks and write their output to $OUT/{speed,phases,phases_1m,accuracy,order,analysis,end_to_end,dask,graph,null_sweep}.txt.
# Usage: benchmarks/run.sh [--quick]
# Environment: PYTHON (interpreter, default python), OUT (output folder, default benchmarks/output),
# ONLY (space-separated names to run, e.g. ONLY="speed dask"; default all but the comparisons below).
# ONLY=versions BASE=REV compares this checkout's default profile with revision REV's in one
# process ($OUT/versions.txt; BASE defaults to HEAD~1), ONLY=versions_10m the same at 10M tokens
# of bytes, BPE-8k and BPE-32k ($OUT/versions_10m.txt); ONLY=range_tasks BASE=REV the same for
# the Dask engine's range tasks ($OUT/range_tasks.txt), ONLY=shard_tasks BASE=REV for its shard
# tasks, of 4M-position shards ($OUT/shard_tasks.txt); ONLY=range_tasks_12m BASE=REV the range
# tasks' comparison on 12M tokens of BPE, whose tables exceed a part (tables.CHUNK_ENTRIES);
# ONLY=graph_tasks BASE=REV a profile's block, range and combine tasks as bench_dask.py's graph
# has them (2M tokens, 20 blocks of 4 shards), in one process ($OUT/graph_tasks.txt).
# ONLY=large_shards times the Dask engine's shard and merge tasks at the shard size a 10^11-token
# BPE profile plans, on the Linux kernel's C sources (Debian's linux-source-6.1; about half an hour).
# ONLY=scaling times a profile at 10^6 to 10^8 tokens and 8 to 57 offsets of the same C sources
# ($OUT/scaling.txt): whether time grows linearly in tokens x offsets; ONLY=scaling_words the same
# for word tokens, whose vocabulary grows with the text ($OUT/scaling_words.txt); ONLY=scaling_1g up to
# 10^9 tokens of bytes and all 1.1 GB of the C sources in BPE-8k ($OUT/scaling_1g.txt).
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
OUT="${OUT:-benchmarks/output}"
mkdir -p "$OUT"

speed_args=()
phases_args=()
phases_1m_args=(--tokens 1000000 --offsets 10)
accuracy_args=()
order_args=()
analysis_args=()
end_to_end_args=()
dask_args=()
null_sweep_args=()
versions_args=(--base "${BASE:-HEAD~1}")
if [[ "${1:-}" == "--quick" ]]; then
    speed_args=(--tokens 250000 --repeats 2)
    phases_args=(--tokens 250000 --repeats 1)
    phases_1m_args=(--tokens 100000 --offsets 10 --repeats 1)
    accuracy_args=(--quick)
    order_args=(--quick)
    analysis_args=(--quick)
    end_to_end_args=(--mb 10 --max-offset 256 --encode-mb 2)
    dask_args=(--tokens 300000)
    null_sweep_args=(--tokens 300000 --repeats 2)
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

run() {
    local name=$1
    shift
    if [[ -n "${ONLY:-}" && " $ONLY " != *" $name "* ]] || [[ -z "${ONLY:-}" && $name =~ ^(versions|versions_10m|range_tasks|range_tasks_12m|shard_tasks|graph_tasks|large_shards|scaling|scaling_words|scaling_1g)$ ]]; then
        return
    fi
    echo "== $name" >&2
    { header "$@"; "$@"; } | tee "$OUT/$name.txt"
}

run speed "$PYTHON" benchmarks/bench_speed.py "${speed_args[@]}"
run phases "$PYTHON" benchmarks/bench_phases.py "${phases_args[@]}"
run phases_1m "$PYTHON" benchmarks/bench_phases.py "${phases_1m_args[@]}"
run accuracy "$PYTHON" benchmarks/bench_accuracy.py "${accuracy_args[@]}"
run analysis "$PYTHON" benchmarks/bench_analysis.py "${analysis_args[@]}"
run end_to_end "$PYTHON" benchmarks/bench_end_to_end.py "${end_to_end_args[@]}"
run dask "$PYTHON" benchmarks/bench_dask.py "${dask_args[@]}"
run graph "$PYTHON" benchmarks/bench_graph.py
run null_sweep "$PYTHON" benchmarks/bench_null_sweep.py "${null_sweep_args[@]}"
run large_shards "$PYTHON" benchmarks/bench_large_shards.py
run scaling "$PYTHON" benchmarks/bench_scaling.py
run scaling_words "$PYTHON" benchmarks/bench_scaling.py --streams words --mb 1100
run scaling_1g "$PYTHON" benchmarks/bench_scaling.py --streams bytes,bpe-8k --sizes 1e7,1e8,3e8,1e9 --offset-counts 8,29 \
    --rounds 2 --mb 1100
run order "$PYTHON" benchmarks/bench_order.py "${order_args[@]}"
run versions "$PYTHON" benchmarks/bench_versions.py "${versions_args[@]}"
run versions_10m "$PYTHON" benchmarks/bench_versions.py --tokens 10000000 --streams bytes,bpe-8k,bpe-32k --rounds 5 \
    "${versions_args[@]}"
run range_tasks "$PYTHON" benchmarks/bench_versions.py "${versions_args[@]}" --range-tasks
run shard_tasks "$PYTHON" benchmarks/bench_versions.py --shard-tasks --tokens 4194304 --rounds 5 "${versions_args[@]}"
run range_tasks_12m "$PYTHON" benchmarks/bench_versions.py --range-tasks --tokens 12000000 --streams bpe-8k,bpe-32k \
    --rounds 5 "${versions_args[@]}"
run graph_tasks "$PYTHON" benchmarks/bench_versions.py --graph-tasks --tokens 2000000 --streams bpe-8k,bpe-32k \
    --rounds 5 "${versions_args[@]}"
echo "wrote ${ONLY:-speed phases phases_1m accuracy analysis end_to_end dask graph null_sweep} into $OUT" >&2
