#!/bin/bash
# The device call that looked for the cause of SqueezeNet's slow processes (session 8): fresh
# processes of onnx_squeezenet_diag.py in a rotated order, the NVIDIA driver's shader disk cache
# cold, warm or off, the readback's spin on or off, with nvidia-smi sampling the clocks
# throughout. Run from benchmarks/ with the environment of benchmarks/README.md's H100 recipe:
#     bash onnx_squeezenet_diag.sh PREBUILT_DIR OUT_DIR  (PREBUILT_DIR: onnx_models.py --prebuild)
M=$1; O=$2; T0=$(date +%s); BUDGET=${BUDGET:-100}
nvidia-smi --query-gpu=name,driver_version,persistence_mode,clocks.sm,clocks.mem,pstate,power.draw,temperature.gpu --format=csv
nvidia-smi --query-gpu=clocks_event_reasons.active --format=csv,noheader || true
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,pstate,utilization.gpu,power.draw --format=csv -lms 200 > "$O/smi.csv" &
SMI=$!
one() {  # label env... : one fresh process, skipped when the budget is nearly spent
  local label=$1; shift
  local left=$((BUDGET - ($(date +%s) - T0)))
  if [ $left -lt 14 ]; then echo "$label skipped (${left}s left)"; return; fi
  echo "$label starts at $(( $(date +%s) - T0 ))s: $*"
  env "$@" timeout $((left - 2)) python3 onnx_squeezenet_diag.py --prebuilt "$M" --label "$label" \
    --iters 30 --out "$O/d_$label.json" ${ORDER:+--order $ORDER} ${SPIN:+--spin-off} 2>&1 \
    | grep -v -i warn
  echo "  caches: c1 $(du -sk /tmp/c1 2>/dev/null | cut -f1)k c2 $(du -sk /tmp/c2 2>/dev/null | cut -f1)k home $(du -sk ~/.cache/nvidia 2>/dev/null | cut -f1)k"
}
mkdir -p /tmp/c1 /tmp/c2
one cold1 __GL_SHADER_DISK_CACHE_PATH=/tmp/c1
one warm1 __GL_SHADER_DISK_CACHE_PATH=/tmp/c1
ORDER=turns-peer-first,turns-nospin,gpu,alone,turns,alone one cold2 __GL_SHADER_DISK_CACHE_PATH=/tmp/c2
SPIN=1 one nospin __GL_SHADER_DISK_CACHE_PATH=/tmp/c1
one nocache __GL_SHADER_DISK_CACHE=0
one warm1b __GL_SHADER_DISK_CACHE_PATH=/tmp/c1
kill $SMI
