#!/bin/bash
# onnx_models.py (the generated SqueezeNet module against onnxruntime, batch 1 and 16) in N fresh
# processes one after the other, nvidia-smi sampling the GPU's clocks throughout; the first
# process on a fresh machine meets the driver's shader cache cold. Run from benchmarks/ with
# the environment of the H100 recipe (benchmarks/README.md, onnx_models.py):
#     bash onnx_models_fresh.sh PREBUILT_DIR OUT_DIR [N] [SUFFIX]
# PREBUILT_DIR: `onnx_models.py --prebuild DIR` made where the onnx package is installed.
P=$1; O=$2; N=${3:-3}; S=${4:-s8s}; T0=$(date +%s); BUDGET=${BUDGET:-100}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,pstate --format=csv,noheader
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu,power.draw \
  --format=csv -lms 200 > "$O/onnx_models_h100_${S}_smi.csv" &
SMI=$!
for i in $(seq 1 "$N"); do
  left=$((BUDGET - ($(date +%s) - T0)))
  if [ $left -lt 20 ]; then echo "run $i skipped (${left}s left)"; continue; fi
  echo "run $i starts at $(( $(date +%s) - T0 ))s"
  timeout $((left - 2)) python3 onnx_models.py --prebuilt "$P" --devices webgpu \
    --kinds generated --no-scoreboard --batches 1,16 --iters 20 \
    --out "$O/onnx_models_h100_${S}_run$i.json" 2>&1 | grep -E "^batch"
done
kill $SMI
