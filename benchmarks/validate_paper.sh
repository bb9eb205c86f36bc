#!/usr/bin/env bash
# All four validation experiments at --scale paper on one CUDA GPU, each stopped after 10 minutes.
# Usage: benchmarks/validate_paper.sh [OUT]   (default OUT: validation-paper). A rerun resumes finished runs.
set -u
out=${1:-validation-paper}
mkdir -p "$out"
python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: this script is for a GPU')" || exit 2
for experiment in frequency-law base-sweep pi lerope; do
  start=$(date +%s)
  timeout 600 depstat validate "$experiment" --scale paper --device cuda --out "$out/$experiment" \
    > "$out/$experiment.log" 2>&1
  rc=$?
  echo "$experiment: exit $rc, $(( $(date +%s) - start )) s" | tee -a "$out/times.txt"
  tail -n 8 "$out/$experiment.log"
done
