"""CPU training throughput of a blurbflow cell vs Hugging Face `Trainer` on the same model (real
MiniLM-L6 BERT), the same tokenized real data (bc5chem train, first N sentences), batch size 32,
one epoch, 2 threads. Timed from the first batch to the end of the epoch (no evaluation).

    .venv/bin/python benchmarks/throughput.py [--sentences 2000]
    .venv/bin/python benchmarks/throughput.py --smoke  # 128 generated sentences, a tiny BERT
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch

from blurbflow.models.load import load_for_task, load_tokenizer
from blurbflow.options import CellOptions, InputOptions
from blurbflow.tasks import get_task
from blurbflow.train import cell as cell_module
from blurbflow.train import fit as fit_module
from blurbflow.train.encode import encode_task, load_encoded

from common import minilm_path, parser, prepared, smoke_data, tiny_model

TASK, BATCH, THREADS = "bc5chem", 32, 2


class EpochDone(Exception):
    pass


def subset(data_dir: Path, out: Path, n: int) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        frame = pd.read_parquet(data_dir / f"{split}.parquet")
        frame.head(n if split == "train" else 64).to_parquet(out / f"{split}.parquet")
    return out


def blurbflow_epoch(
    model_path: str, encoded: Path, data: Path, work: Path, batching_mode: str = "bucketed"
) -> float:
    marks: dict[str, float] = {}
    real_step = fit_module.Steps.step

    def timed_step(*args, **kwargs):  # from the first batch (packed or micro-batched)
        marks.setdefault("start", time.perf_counter())
        return real_step(*args, **kwargs)

    def stop_at_eval(*args, **kwargs):
        marks["end"] = time.perf_counter()
        raise EpochDone

    real_predict = fit_module.predict
    fit_module.Steps.step, fit_module.predict = timed_step, stop_at_eval
    options = CellOptions(
        model="minilm",
        model_source=model_path,
        task=TASK,
        recipe="standard",
        hparams="bench",
        lr=5e-5,
        batch_size=BATCH,
        epochs=1,
        inputs=InputOptions(max_length=512),
        seed=1,
        code_version="bench",
        batching=batching_mode,
    )
    try:
        cell_module.train_cell(options, encoded, data, work / "cell/result.json", threads=THREADS)
    except EpochDone:
        pass
    finally:
        fit_module.Steps.step, fit_module.predict = real_step, real_predict
    return marks["end"] - marks["start"]


def trainer_epoch(model_path: str, encoded: Path, group_by_length: bool, work: Path) -> float:
    from datasets import Dataset
    from gpu_trainer import trainer_args
    from transformers import DataCollatorForTokenClassification, Trainer

    torch.set_num_threads(THREADS)
    columns = load_encoded(encoded, "train")
    # a tokenizer that gives no token type ids (the smoke run's tiny BERT) encodes none
    keys = [k for k in ("input_ids", "token_type_ids", "labels") if k in columns]
    dataset = Dataset.from_dict({k: columns[k] for k in keys})
    tokenizer = load_tokenizer(model_path)
    model = load_for_task(model_path, get_task(TASK))
    args = trainer_args(
        str(work / "trainer"),
        group_by_length,
        per_device_train_batch_size=BATCH,
        num_train_epochs=1,
        use_cpu=True,
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=dataset,
        data_collator=DataCollatorForTokenClassification(tokenizer),
    )
    return trainer.train().metrics["train_runtime"]


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--sentences", type=int, default=2000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.smoke:
            source = smoke_data(TASK, work / "smoke")
            model_path = tiny_model(work / "smoke", [TASK])
            args.sentences = min(args.sentences, 128)
        else:
            source, model_path = prepared(TASK, args.mirror), minilm_path()
        data = subset(source, work / "data", args.sentences)
        encoded = work / "encoded"
        tokenizer = load_tokenizer(model_path)
        encode_task(get_task(TASK), data, tokenizer, InputOptions(max_length=512), encoded)
        n = len(load_encoded(encoded, "train")["input_ids"])
        results = {
            "blurbflow cell": blurbflow_epoch(model_path, encoded, data, work),
            "blurbflow cell (batching: random)": blurbflow_epoch(
                model_path, encoded, data, work / "random", "random"
            ),
            "HF Trainer (defaults)": trainer_epoch(model_path, encoded, False, work),
            "HF Trainer (group_by_length)": trainer_epoch(model_path, encoded, True, work),
        }
    base = results["HF Trainer (defaults)"]
    model = "a tiny BERT" if args.smoke else "MiniLM-L6-H384"
    print(f"{TASK}: {n} training sentences, {model}, batch {BATCH}, {THREADS} threads")
    for name, seconds in results.items():
        print(
            f"  {name:34} {seconds:7.1f} s/epoch  {n / seconds:7.1f} sentences/s  "
            f"{base / seconds:5.2f}x Trainer"
        )
    print(json.dumps({k: round(v, 2) for k, v in results.items()}))


if __name__ == "__main__":
    main()
