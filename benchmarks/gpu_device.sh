#!/bin/sh
# The GPU suite on a lent GPU machine, as ONE command for the device tool's `run`
# (benchmarks/README.md, "GPU suite"): installs the wheels carried in .whl/ (no network there),
# runs `benchmarks/gpu.py --suite` (≤ 300 s: its parts' budget) on this source tree and leaves
# in $OUT its JSON and markdown table (written after each part), each part's JSON and log
# (gpu-suite.parts/), the suite's log and the machine's description.
#   run(command="sh benchmarks/gpu_device.sh", carry=[".whl"], timeout_s=420)
# Here, without a GPU: `DRY=1 sh benchmarks/gpu_device.sh --smoke` prints the install and runs
# the suite's smoke (tiny models, the CPU) the same way. Extra arguments go to gpu.py.
set -eu
OUT=${OUT:-$(mktemp -d)}
if [ -z "${PYTHON:-}" ]; then
    PYTHON=python3
    [ -x .venv/bin/python ] && PYTHON=.venv/bin/python
fi
SITE=/tmp/blurbflow-site
install="$PYTHON -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $SITE"
if [ "${DRY:-0}" = 1 ]; then
    echo "would run: $install .whl/*.whl"
elif ls .whl/*.whl >/dev/null 2>&1; then
    $install .whl/*.whl
    export PYTHONPATH="$SITE"
else
    echo "no .whl/*.whl here: running with this machine's packages" >&2
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{ nvidia-smi || echo "no nvidia-smi"; } >"$OUT/machine.txt" 2>&1
"$PYTHON" -c 'import sys, torch, transformers, tokenizers
print(sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__,
      "tokenizers", tokenizers.__version__, "cuda", torch.cuda.is_available())' | tee -a "$OUT/machine.txt"
status=0
"$PYTHON" benchmarks/gpu.py --suite --out "$OUT/gpu-suite.json" "$@" >"$OUT/log.txt" 2>&1 || status=$?
tail -n 60 "$OUT/log.txt"
echo "results in $OUT"
exit "$status"
