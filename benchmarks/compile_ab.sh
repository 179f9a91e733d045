#!/bin/bash
# compile_ab.sh: this code and an older commit's compiled MNIST steps alternately on one GPU
# host (the ratio to PyTorch moves with the host, so versions are compared within one call).
#
# Here, pack both trees into a carried folder:
#   mkdir -p .bench/infer; tar czf .bench/infer/src.tgz core webgpu shaders demos benchmarks
#   git archive 2170ed7 core webgpu shaders demos benchmarks | (mkdir -p /tmp/s6 && tar x -C /tmp/s6)
#   tar czf .bench/infer/s6.tgz -C /tmp/s6 core webgpu shaders demos benchmarks
#   cp benchmarks/compile_ab.sh .bench/infer/ab.sh
# On the GPU machine (carry .gl, .whl, .bench/infer), from the repository root:
#   T=40 bash .bench/infer/ab.sh TAG anatomy anatomy0 new1 s61 s62 new2 kernels
# Modes: anatomy (infer_anatomy.py), anatomy0 (its --no-narrow), newN / s6N (compile.py's MNIST
# rows with this code / the older one), kernels (step_kernels.py --quick). Each run is cut
# at T seconds (default 60); JSON into $OUT with TAG in the names.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for v in new s6; do
  src=.bench/infer/src.tgz; [ $v = s6 ] && src=.bench/infer/s6.tgz
  mkdir -p /tmp/$v/w /tmp/$v/pp/pyrite && tar xzf $src -C /tmp/$v/w
  cp -r /tmp/$v/w/core/. /tmp/$v/pp/pyrite/ && cp -r /tmp/$v/w/webgpu /tmp/$v/w/shaders /tmp/$v/w/demos /tmp/$v/pp/pyrite/
done
export XDG_RUNTIME_DIR=$(mktemp -d) VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYRITE_AUTOTUNE=off
TAG=$1; shift
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
run() {  # run VERSION SCRIPT ARGS...
  v=$1; shift
  (cd /tmp/$v/w/benchmarks && PYTHONPATH=/tmp/$v/pp:/tmp/site timeout ${T:-60} python3 "$@") 2>&1 | tail -${TAIL:-3}
}
for mode in "$@"; do
  case $mode in
    anatomy) TAIL=1 run new infer_anatomy.py --out $OUT/infer_anatomy_h100_s7i_$TAG.json ;;
    anatomy0) TAIL=1 run new infer_anatomy.py --no-narrow --out $OUT/infer_anatomy_h100_s7i_${TAG}_no_narrow.json ;;
    new*) i=${mode#new}; run new compile.py --only train,infer --out $OUT/compile_h100_s7i_${TAG}_new_$i.json ;;
    s6*) i=${mode#s6}; run s6 compile.py --skip charlm,generate --out $OUT/compile_h100_s7i_${TAG}_s6_$i.json ;;
    kernels) run new step_kernels.py --quick --out $OUT/step_kernels_h100_s7i_$TAG.json ;;
  esac
done
