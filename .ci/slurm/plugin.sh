#!/usr/bin/env bash
# Install the Snakemake SLURM executor plugin OUTSIDE the project venv, into a --target folder that is
# put on PYTHONPATH for SLURM runs only. (Installed in the venv, the plugin runs `scontrol show
# config` on every `snakemake` start, which hangs ~11 s when no slurmctld answers.) Only the two
# plugin packages go there, with --no-deps, so pip never upgrades snakemake or pulls torch; any of
# their requirements the venv does not satisfy are then added there too (none, with the venv today).
# Prints the folder. Use:
#   PYTHONPATH=$(.ci/slurm/plugin.sh) .venv/bin/snakemake --profile slurm ...
#   .ci/slurm/plugin.sh [TARGET]   (default <repo>/.slurm-plugins; VENV overrides <repo>/.venv)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
TARGET=$(realpath -m "${1:-$REPO/.slurm-plugins}")
PY=${VENV:-$REPO/.venv}/bin/python
PLUGINS=(
    "snakemake-executor-plugin-slurm==${SLURM_PLUGIN_VERSION:-2.8.0}"
    "snakemake-executor-plugin-slurm-jobstep==${SLURM_JOBSTEP_VERSION:-0.6.1}"
)

"$PY" -m pip install -q --disable-pip-version-check --upgrade --no-deps --target "$TARGET" "${PLUGINS[@]}" >&2

# Requirements of the plugins that neither the venv nor $TARGET satisfy.
missing=$("$PY" - "$TARGET" <<'EOF'
import sys
from importlib import metadata
from packaging.requirements import Requirement
target = sys.argv[1]
have = {d.metadata["Name"].lower().replace("_", "-"): d.version
        for d in [*metadata.distributions(), *metadata.distributions(path=[target])]}
for dist in metadata.distributions(path=[target]):
    for req in map(Requirement, dist.requires or []):
        if req.marker and not req.marker.evaluate():
            continue
        version = have.get(req.name.lower().replace("_", "-"))
        if version is None or not req.specifier.contains(version, prereleases=True):
            print(req)
EOF
)
if [[ -n $missing ]]; then
    echo "plugin.sh: the venv lacks, adding to $TARGET: $(echo $missing)" >&2
    mapfile -t reqs <<<"$missing"
    "$PY" -m pip install -q --disable-pip-version-check --upgrade --no-deps --target "$TARGET" "${reqs[@]}" >&2
fi
echo "$TARGET"
