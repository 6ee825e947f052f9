"""`benchmarks/gpu.py --lengths`: the shipped length quantiles of ChemProt and BC5-chem train
(gpu_models.py's CHEMPROT_LENGTHS and BC5CHEM_LENGTHS), computed from the mirror. A helper of
gpu.py, no benchmark."""

from __future__ import annotations

import tempfile
from pathlib import Path


def lengths(mirror: Path) -> None:
    """Print the shipped length quantiles of ChemProt and BC5-chem train, from the mirror."""
    import numpy as np

    from blurbflow.models.load import load_tokenizer
    from blurbflow.options import InputOptions
    from blurbflow.tasks import get_task
    from blurbflow.train.encode import encode_task, load_encoded

    from common import minilm_path, prepared

    for task, step in (("chemprot", 5), ("bc5chem", 1)):
        with tempfile.TemporaryDirectory() as tmp:
            encode_task(get_task(task), prepared(task, mirror), load_tokenizer(minilm_path()),
                        InputOptions(max_length=512), Path(tmp))  # fmt: skip
            found = np.array(load_encoded(Path(tmp), "train")["length"])
        quantiles = np.percentile(found, np.arange(0, 101, step), method="nearest")
        print(f"{task}: {len(found)} sentences, mean {found.mean():.1f}")
        print(tuple(int(q) for q in quantiles))
