#!/usr/bin/env bash
# make gpu-check: teachllm on a CUDA GPU, as a GPU user meets it. Four parts, run side by side on the one GPU:
#   1. the engine, viz and serving tests on CUDA in float32 (TEACHLLM_DEVICE=cuda TEACHLLM_DTYPE=float32);
#   2. the same tests in bfloat16 (the tolerances follow the dtype: teachllm/tolerances.py);
#   3. every chapter of both editions on CUDA with the defaults a GPU user gets (device auto, bfloat16): the committed
#      notebooks in a Jupyter kernel where Jupyter is installed, else cell by cell from notebooks/src
#      (scripts/run_chapters.py --engine auto);
#   4. the GPU bench on the bundled architecture (python -m teachllm.bench --device cuda --random-weights --quick).
# One summary line per part; exit 1 if any part failed, 3 if there is no CUDA GPU. Logs and JSON in OUT (the first
# argument, else $OUT, else artifacts/gpu-check).
#
# GPU_CHECK_DEVICE=second rehearses it on a machine without a GPU: the same parts on the emulated second device of
# tests/second_device.py (no bench: it measures CUDA). GPU_CHECK_TESTS replaces the list of test files.
#
# It needs Python with torch (CUDA) and transformers. Everything else teachllm and its tests need (plotly,
# ipywidgets, gguf, ...) comes from the project's .venv where there is one, or as wheels on a machine with no
# internet: ../shared/gpu/pack.sh packs them, .gpu/bin/gpu.sh installs them and then runs this script.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-artifacts/gpu-check}}
mkdir -p "$out"
py=${PY:-}
if [ -z "$py" ]; then
    if [ -x .venv/bin/python ]; then py=.venv/bin/python; else py=python3; fi
fi
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TRANSFORMERS_VERBOSITY=error
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

device=${GPU_CHECK_DEVICE:-cuda}
if [ "$device" = cuda ]; then
    if ! "$py" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
        echo "gpu-check: no CUDA GPU here (torch.cuda.is_available() is False); the CPU's checks are make test and" \
             "make test-bf16 (GPU_CHECK_DEVICE=second rehearses this script on an emulated device)" >&2
        exit 3
    fi
    "$py" -c "import torch, transformers; print('gpu-check:', torch.cuda.get_device_name(), '· torch', \
torch.__version__, '· transformers', transformers.__version__)" | tee "$out/facts.txt"
else
    echo "gpu-check: a rehearsal on the device '$device' (no GPU)" | tee "$out/facts.txt"
fi

TESTS=${GPU_CHECK_TESTS:-"tests/test_bundled_parity.py tests/test_tiny_models.py tests/test_generate.py
       tests/test_sampling.py tests/test_cache.py tests/test_serving.py tests/test_serving_model.py tests/test_cost.py
       tests/test_roofline.py tests/test_viz.py tests/test_viz_serving.py tests/test_viz_static.py"}
threads=$(( $(nproc) / 4 > 0 ? $(nproc) / 4 : 1 ))
start=$(date +%s)

tests() {  # $1: dtype
    OMP_NUM_THREADS=$threads TEACHLLM_DEVICE=$device TEACHLLM_DTYPE=$1 timeout 420 \
        "$py" -m pytest -q -p no:cacheprovider $TESTS > "$out/tests-$1.log" 2>&1
    echo $? > "$out/tests-$1.rc"
}
tests float32 &
tests bfloat16 &
( OMP_NUM_THREADS=$threads timeout 420 "$py" scripts/run_chapters.py --device "$device" --engine auto --jobs 4 \
      --timeout 300 --json "$out/chapters.json" > "$out/chapters.log" 2>&1; echo $? > "$out/chapters.rc" ) &
if [ "$device" = cuda ]; then
    ( OMP_NUM_THREADS=$threads timeout 420 "$py" -m teachllm.bench --device cuda --random-weights --quick \
          --out "$out/bench.json" > "$out/bench.log" 2>&1; echo $? > "$out/bench.rc" ) &
fi
wait

status=0
summary() {  # $1: part, $2: rc file, $3: summary text
    rc=$(cat "$2" 2>/dev/null || echo "?")
    if [ "$rc" = "0" ]; then echo "PASS  $1: $3"; else echo "FAIL  $1 (exit $rc): $3"; status=1; fi
}
for dtype in float32 bfloat16; do
    line=$(grep -E "[0-9]+ (passed|failed)" "$out/tests-$dtype.log" | tail -1)
    summary "tests on $device, $dtype" "$out/tests-$dtype.rc" "${line:-no summary, see $out/tests-$dtype.log}"
done
summary "chapters on $device, both editions, default dtype" "$out/chapters.rc" \
    "$(grep -E "^chapters on" "$out/chapters.log" | tail -1 || echo "see $out/chapters.log")"
if [ "$device" = cuda ]; then
    summary "bench on cuda" "$out/bench.rc" \
        "$(grep -iE "tokens/s" "$out/bench.log" | head -1 || echo "see $out/bench.log")"
fi
echo "gpu-check: $(( $(date +%s) - start )) s; logs in $out"
exit $status
