"""Extractive QA as a task type (`span`) through the pipeline: the registry entries, windows
encoded with what decoding needs, the span head loaded per task, predictions decoded per
instance from all of its windows, the span metrics and their chance baselines, and (e2e) a
demo-size `snakemake all` on generated SQuAD data whose test F1 beats chance."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

from blurbflow.data.generate import GENERATORS
from blurbflow.data.parsers import parse_task
from blurbflow.metrics import also_reported, chance_baseline, compute_metric
from blurbflow.metrics.span import factoid_lenient, factoid_mrr, factoid_strict, squad_f1
from blurbflow.models.load import load_for_task
from blurbflow.options import InputOptions
from blurbflow.qa import SpanModel
from blurbflow.tasks import get_task
from blurbflow.train import encode, predict

from model_helpers import tiny_config
from workflow_helpers import copy_workflow, snakemake


def _texts(frames) -> list[str]:
    train = frames["train"]
    return list(train["context"]) + list(train["question"])


def _tiny_model(folder, texts, layers=2, positions=64):
    from transformers import BertModel

    from blurbflow.models.build import train_tokenizer

    torch.manual_seed(0)
    tokenizer = train_tokenizer(texts, 400)
    config = tiny_config(len(tokenizer), layers, max_position_embeddings=positions)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return tokenizer


def test_entries_sources_and_generators():
    squad, squad2, factoid = (get_task(n) for n in ("squad", "squad2", "bioasq-factoid"))
    assert (squad.type, squad.metric, squad.options["version"]) == ("span", "squad_f1", "1.1")
    assert squad.raw[0].urls == (
        "https://rajpurkar.github.io/SQuAD-explorer/dataset/train-v1.1.json",
        "https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json",
    )
    assert squad2.options["version"] == "2.0" and squad2.sources == ("squad-v2.0",)
    assert factoid.metric == "factoid_mrr" and factoid.raw[0].manual_files == (
        "BioASQ-training7b.zip",
        "Task7BGoldenEnriched.zip",
    )
    assert "participants-area.bioasq.org" in factoid.raw[0].manual
    for spec in (squad, squad2, factoid):
        assert set(spec.sources) <= set(GENERATORS)
        assert not spec.kind.blurb and spec.kind.inputs == "windows"


def test_squad_fetches_through_the_mirror_and_bioasq_factoid_names_its_manual_files(tmp_path):
    from blurbflow.data.errors import ManualDownloadMissing
    from blurbflow.data.fetch import fetch_source

    dataset = tmp_path / "mirror/rajpurkar.github.io/SQuAD-explorer/dataset"
    GENERATORS["squad-v2.0"](dataset, 0)
    raw = tmp_path / "raw"
    fetch_source("squad-v2.0", raw / "squad-v2.0", mirror=str(tmp_path / "mirror"))
    frames = parse_task("squad2", raw)
    assert sorted(p.name for p in (raw / "squad-v2.0").iterdir()) == [
        "dev-v2.0.json",
        "train-v2.0.json",
    ]
    assert frames["test"]["is_impossible"].any() and len(frames["dev"]) > 0

    manual = tmp_path / "manual"
    with pytest.raises(
        ManualDownloadMissing, match=r"participants-area\.bioasq\.org.*data\.bioasq_dir"
    ):
        fetch_source("bioasq-factoid", raw / "bioasq-factoid", manual_dir=manual)
    GENERATORS["bioasq-factoid"](manual, 0)  # the two zips' extracted folders
    fetch_source("bioasq-factoid", raw / "bioasq-factoid", manual_dir=manual)
    frames = parse_task("bioasq-factoid", raw)
    spec = get_task("bioasq-factoid")
    test = frames["test"]
    assert test["question_id"].nunique() == 100 < len(test)  # one instance per snippet
    gold = predict.gold_labels(spec, test)
    oracle = [
        {"text": g["answers"][0], "score": 1.0, "nbest": [[g["answers"][0], 1.0]]} for g in gold
    ]
    assert compute_metric(spec, gold, oracle) == 100.0


def test_span_metrics_group_instances_by_question():
    gold = [
        {"question_id": "q1", "answers": ["TP53", "p53 protein"]},
        {"question_id": "q1", "answers": ["TP53", "p53 protein"]},
        {"question_id": "q2", "answers": ["aspirin"]},
    ]
    pred = [
        {"text": "BRCA1", "score": 2.0, "nbest": [["BRCA1", 0.6], ["tp53", 0.4]]},
        {"text": "TP53", "score": 5.0, "nbest": [["TP53", 0.9], ["EGFR", 0.1]]},
        {
            "text": "heparin",
            "score": 1.0,
            "nbest": [["heparin", 0.7], ["x", 0.2], ["aspirin", 0.1]],
        },
    ]
    # squad: q1 answers with its best-scoring instance (TP53), q2 is wrong
    assert squad_f1(gold, pred, "1.1") == pytest.approx(50.0)
    # factoid: q1 ranks TP53 (0.9) first; q2 ranks aspirin third
    assert factoid_strict(gold, pred) == pytest.approx(50.0)
    assert factoid_lenient(gold, pred) == pytest.approx(100.0)
    assert factoid_mrr(gold, pred) == pytest.approx(100 * (1 + 1 / 3) / 2)
    reported = also_reported(get_task("bioasq-factoid"), gold, pred)
    assert reported == pytest.approx(
        {"factoid_mrr": 100 * (1 + 1 / 3) / 2, "factoid_strict": 50.0, "factoid_lenient": 100.0}
    )
    assert set(also_reported(get_task("squad"), gold, pred)) == {"squad_f1", "squad_em"}
    assert also_reported(get_task("gad"), ["1"], ["1"]) == {}  # other tasks: nothing more


def test_chance_of_span_metrics_is_computed():
    spec = get_task("squad2")
    train = [{"question_id": str(i), "answers": [] if i % 4 == 0 else ["x"]} for i in range(8)]
    test = [{"question_id": str(i), "answers": [] if i % 2 == 0 else ["y"]} for i in range(6)]
    # "x" is right on 6 of 8 train questions and beats "no answer" (2 of 8) there;
    # on test it matches nothing: 0
    assert chance_baseline(spec, train, test) == 0.0
    mostly_empty = [{"question_id": str(i), "answers": [] if i else ["x"]} for i in range(4)]
    assert chance_baseline(spec, mostly_empty, test) == pytest.approx(50.0)  # "no answer"
    factoid = get_task("bioasq-factoid")
    golds = [{"question_id": str(i), "answers": ["x"] if i < 3 else ["y"]} for i in range(5)]
    assert chance_baseline(factoid, golds, golds) == pytest.approx(100 * (3 + 2 / 2) / 5)


@pytest.fixture(scope="module")
def squad_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("qa")
    GENERATORS["squad-v1.1"](root / "raw" / "squad-v1.1", 0)
    frames = parse_task("squad", root / "raw")
    tokenizer = _tiny_model(root / "model", _texts(frames))
    for split, frame in frames.items():
        frame.to_parquet(root / f"{split}.parquet")
    return root, frames, tokenizer


def test_windows_encode_decode_and_score(squad_data):
    root, frames, tokenizer = squad_data
    spec = get_task("squad")
    meta = encode.encode_task(spec, root, tokenizer, InputOptions(max_length=64), root / "encoded")
    assert meta["windows"] == {"doc_stride": 16, "max_question_length": 16}
    test_meta = meta["splits"]["test"]
    assert test_meta["examples"] == len(frames["test"]) < test_meta["instances"]
    data = encode.load_encoded(root / "encoded", "test")
    assert max(data["length"]) <= 64 and data["id"][0] == frames["test"]["id"].iloc[0]
    # oracle logits at each window's labels decode to the gold answers (where a window has one)
    rows = list(range(len(data["input_ids"])))
    width = max(data["length"])
    logits = torch.full((len(rows), width, 2), -10.0)
    for w in rows:
        logits[w, data["start_positions"][w], 0] = 10.0
        logits[w, data["end_positions"][w], 1] = 10.0
    preds = predict.decode(spec, logits, data, rows)
    gold = predict.gold_labels(spec, frames["test"])
    assert len(preds) == len(gold) == len(frames["test"])
    assert compute_metric(spec, gold, preds) > 95
    assert chance_baseline(spec, predict.gold_labels(spec, frames["train"]), gold) < 10
    json.dumps(preds)  # predictions.parquet stores them as JSON

    model = load_for_task(str(root / "model"), spec, dropout=0.0)
    assert isinstance(model, SpanModel)
    fmt = predict.BatchFormat(0, predict.label_dtype(spec))
    batch = predict.make_batch(data, rows[:4], fmt)
    out = model(**batch)
    assert out.logits.shape == (*batch["input_ids"].shape, 2) and out.loss.item() > 0
    untrained = predict.predict(model, spec, data, 64, fmt)
    assert len(untrained) == len(frames["test"])
    assert all(isinstance(p["text"], str) for p in untrained)


@pytest.mark.e2e
@pytest.mark.slow
def test_snakemake_span_task_beats_chance(tmp_path, squad_data):
    _, frames, _ = squad_data
    workdir = copy_workflow(tmp_path / "wf")
    _tiny_model(workdir / "resources/models/tiny-qa", _texts(frames))
    config = {
        "data": {"source": "generated", "generated_seed": 0},
        "models": {"tiny-qa": {"path": "resources/models/tiny-qa", "size": "tiny"}},
        "tasks": {"squad": {"max_length": 64}},
        "recipes": {
            "quick": {"lr": 3.0e-3, "epochs": 6, "batch_size": 16, "adam_bias_correction": True}
        },
        "studies": {
            "qa": {
                "title": "Extractive QA on generated SQuAD",
                "models": ["tiny-qa"],
                "tasks": ["squad"],
                "recipes": ["quick"],
                "seeds": 1,
                "table": {"rows": "task", "columns": ["model", "recipe"]},
            }
        },
    }
    (workdir / "qa.yaml").write_text(json.dumps(config))
    run = snakemake(workdir, "--configfile", "qa.yaml", "--cores", "2", "all")
    assert run.returncode == 0, run.stderr[-5000:]
    (result_path,) = (workdir / "results/cells/tiny-qa/squad").rglob("result.json")
    result = json.loads(result_path.read_text())
    assert result["status"] == "ok" and result["task_type"] == "span"
    assert result["metric"] == "squad_f1"
    selected = next(e for e in result["epochs"] if e["epoch"] == result["selected_epoch"])
    assert selected["test_scores"]["squad_f1"] == result["test"]
    assert 0 < selected["test_scores"]["squad_em"] <= result["test"]
    assert result["test"] > result["chance_test"] + 10, result
    predictions = pd.read_parquet(result_path.parent / "predictions.parquet")
    assert len(predictions) == len(frames["dev"]) + len(frames["test"])
    first = json.loads(predictions["pred"].iloc[0])
    assert isinstance(first["text"], str) and first["nbest"]
    cells = pd.read_parquet(workdir / "results/cells.parquet")
    assert list(cells["status"]) == ["ok"]
