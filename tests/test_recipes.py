"""Recipe options of DESIGN §6 on tiny BERT, ELECTRA and RoBERTa models built here: training data
(train+dev, subsample), segment ids, tagging schemes, BiLSTM head, RE inputs and pooling, the
tokenization cache key, and layer surgery on all three architectures."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from blurbflow.config import cell_options, expand_cells, input_key
from blurbflow.config.grid import grid_points
from blurbflow.config.recipes import resolve_recipe
from blurbflow.metrics import compute_metric
from blurbflow.models import surgery
from blurbflow.models.heads import TaskModel
from blurbflow.models.load import ENTITY_MARKERS, load_for_task, load_tokenizer
from blurbflow.options import CellOptions, InputOptions, defaults
from blurbflow.tasks import get_task
from blurbflow.train import tagging
from blurbflow.train.cell import build_model_and_optimizer, train_cell
from blurbflow.train.encode import encode_task, load_encoded
from blurbflow.train.inputs import check_encoded, training_data
from blurbflow.train.predict import BatchFormat, decode, make_batch

from model_helpers import make_options

WORDS = "the a of in patients with was were and gene protein cell levels study".split()
DISEASES = "cancer diabetes asthma fever tumour".split()
CHEMICALS = "aspirin insulin cisplatin caffeine".split()
GENES = "BRCA1 TP53 COX2 EGFR".split()


# ---------------------------------------------------------------- data in the prepared schema
def _sentence(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(WORDS) for _ in range(n)]


def ner_frame(split: str, n: int, seed: int) -> pd.DataFrame:
    rng, rows = random.Random(seed), []
    for i in range(n):
        tokens, tags = _sentence(rng, rng.randint(3, 8)), []
        tags = ["O"] * len(tokens)
        for _ in range(rng.randint(0, 2)):
            at, width = rng.randrange(len(tokens)), rng.randint(1, 2)
            words = [rng.choice(DISEASES) for _ in range(width)]
            tokens[at:at] = words
            tags[at:at] = ["B"] + ["I"] * (width - 1)
        rows.append({"id": f"{split}{i}", "split": split, "tokens": tokens, "tags": tags})
    return pd.DataFrame(rows)


def pico_frame(split: str, n: int, seed: int) -> pd.DataFrame:
    rng, rows = random.Random(seed), []
    for i in range(n):
        tokens = _sentence(rng, rng.randint(4, 9))
        tags = [rng.choice(["O", "O", "I-PAR", "I-INT", "I-OUT"]) for _ in tokens]
        rows.append({"id": f"{split}{i}", "split": split, "tokens": tokens, "tags": tags})
    return pd.DataFrame(rows)


def re_frame(split: str, n: int, seed: int, spans: bool = True) -> pd.DataFrame:
    """ChemProt-like rows (original text + offsets), or GAD-like ones (dummified text only)."""
    rng, rows = random.Random(seed), []
    labels = ("CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "false") if spans else ("0", "1")
    for i in range(n):
        before, middle, after = (_sentence(rng, rng.randint(1, 4)) for _ in range(3))
        chem = rng.choice(CHEMICALS)
        gene = f"{rng.choice(GENES)} {rng.choice(['protein', 'gene'])}"
        head = " ".join(before) + " "
        original = head + chem + " " + " ".join(middle) + " " + gene + " " + " ".join(after)
        s1 = len(head)
        t1 = s1 + len(chem)
        s2 = original.index(gene, t1)
        t2 = s2 + len(gene)
        dummy = original[:s1] + "@CHEMICAL$" + original[t1:s2] + "@GENE$" + original[t2:]
        row = {"id": f"{split}{i}", "split": split, "text": dummy, "label": rng.choice(labels)}
        if spans:
            row.update(original_text=original, e1_start=s1, e1_end=t1, e2_start=s2, e2_end=t2)
        else:
            row.update(original_text=None, e1_start=None, e1_end=None, e2_start=None, e2_end=None)
        rows.append(row)
    return pd.DataFrame(rows)


def qa_frame(split: str, n: int, seed: int) -> pd.DataFrame:
    rng = random.Random(seed)
    return pd.DataFrame(
        {
            "id": f"{split}{i}",
            "split": split,
            "question": " ".join(_sentence(rng, 4)) + " ?",
            "context": " ".join(_sentence(rng, 12)),
            "label": rng.choice(["yes", "no", "maybe"]),
        }
        for i in range(n)
    )


def sts_frame(split: str, n: int, seed: int) -> pd.DataFrame:
    rng = random.Random(seed)
    return pd.DataFrame(
        {
            "id": f"{split}{i}",
            "split": split,
            "text_a": " ".join(_sentence(rng, 6)),
            "text_b": " ".join(_sentence(rng, 5)),
            "score": rng.uniform(0, 4),
        }
        for i in range(n)
    )


FRAMES = {
    "ncbidisease": ner_frame,
    "ebmpico": pico_frame,
    "chemprot": re_frame,
    "gad": lambda split, n, seed: re_frame(split, n, seed, spans=False),
    "pubmedqa": qa_frame,
    "biosses": sts_frame,
}
SIZES = {"train": 40, "dev": 12, "test": 12}


def corpus() -> list[str]:
    words = WORDS + DISEASES + CHEMICALS + GENES + ["protein", "gene", "?", "@", "$"]
    rng = random.Random(0)
    texts = [" ".join(rng.choice(words) for _ in range(10)) for _ in range(200)]
    return texts + ["@CHEMICAL$ @GENE$ yes no maybe"] * 5


# ---------------------------------------------------------------- tiny models of 3 layouts
def build_tiny(kind: str, out: Path) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import (
        BertConfig,
        BertModel,
        ElectraConfig,
        ElectraModel,
        RobertaConfig,
        RobertaModel,
        RobertaTokenizerFast,
    )

    from blurbflow.models.build import train_tokenizer

    torch.manual_seed(0)
    size = {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
    }
    if kind == "roberta":
        bpe = Tokenizer(models.BPE())
        bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
        bpe.decoder = decoders.ByteLevel()
        specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
        bpe.train_from_iterator(
            corpus(),
            trainers.BpeTrainer(
                vocab_size=400,
                special_tokens=specials,
                initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            ),
        )
        bpe.post_processor = processors.RobertaProcessing(
            ("</s>", bpe.token_to_id("</s>")),
            ("<s>", bpe.token_to_id("<s>")),
            add_prefix_space=True,
        )
        tokenizer = RobertaTokenizerFast(
            tokenizer_object=bpe,
            bos_token="<s>",
            eos_token="</s>",
            sep_token="</s>",
            cls_token="<s>",
            unk_token="<unk>",
            pad_token="<pad>",
            mask_token="<mask>",
            add_prefix_space=True,
        )
        model = RobertaModel(
            RobertaConfig(
                vocab_size=len(tokenizer),
                max_position_embeddings=130,
                pad_token_id=1,
                type_vocab_size=1,
                **size,
            )
        )
    else:
        tokenizer = train_tokenizer(corpus(), 200)
        if kind == "bert":
            model = BertModel(BertConfig(vocab_size=len(tokenizer), **size))
        else:
            model = ElectraModel(
                ElectraConfig(vocab_size=len(tokenizer), embedding_size=32, **size)
            )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("recipes")
    for kind in ("bert", "electra", "roberta"):
        build_tiny(kind, root / "models" / kind)
    for task, make in FRAMES.items():
        folder = root / "data" / task
        folder.mkdir(parents=True)
        for k, (split, n) in enumerate(SIZES.items()):
            make(split, n, k).to_parquet(folder / f"{split}.parquet")
    return root


def encode(root: Path, task: str, model: str = "bert", **inputs) -> Path:
    key = input_key(task, InputOptions(max_length=64, **inputs))
    out = root / "tokenized" / model / task / key
    if not out.exists():
        markers = inputs.get("re_input") == "markers"
        tokenizer = load_tokenizer(str(root / "models" / model), entity_markers=markers)
        encode_task(
            get_task(task), root / "data" / task, tokenizer, InputOptions.from_key(key), out
        )
    return out


def options(root: Path, task: str, model: str = "bert", **overrides) -> CellOptions:
    settings = {"lr": 1e-3, "batch_size": 8, "epochs": 1, "max_length": 64, "seed": 1}
    place = {"model": model, "model_source": str(root / "models" / model), "task": task}
    return make_options(**place, **{**settings, **overrides})


def run_cell(root: Path, name: str, task: str, **overrides) -> dict:
    opts = options(root, task, **overrides)
    inputs = {k: getattr(opts.inputs, k) for k in ("segment_ids", "tagging", "re_input")}
    encoded = encode(root, task, opts.model, **inputs)
    return train_cell(opts, encoded, root / "data" / task, root / "cells" / name / "result.json")


# ---------------------------------------------------------------- train_on, train_subsample
def test_subsample_is_the_same_for_every_seed_and_changes_with_subsample_seed(root):
    splits = {s: load_encoded(encode(root, "chemprot"), s) for s in SIZES}
    pick = {
        seed: training_data(splits, options(root, "chemprot", seed=seed, train_subsample=10))
        for seed in (1, 2, 3)
    }
    assert len(pick[1]["id"]) == 10 and pick[1]["id"] == pick[2]["id"] == pick[3]["id"]
    other = training_data(splits, options(root, "chemprot", train_subsample=10, subsample_seed=5))
    assert other["id"] != pick[1]["id"] and set(other["id"]) <= set(splits["train"]["id"])
    full = training_data(splits, options(root, "chemprot"))
    assert full["id"] == splits["train"]["id"]
    with pytest.raises(ValueError, match=r"train_subsample=41: task chemprot has 40"):
        training_data(splits, options(root, "chemprot", train_subsample=41))

    first = run_cell(root, "sub1", "chemprot", train_subsample=10, seed=1)
    second = run_cell(root, "sub2", "chemprot", train_subsample=10, seed=2)
    assert first["train_instances"] == second["train_instances"] == 10
    assert first["train_ids_sha"] == second["train_ids_sha"]


def test_train_plus_dev_trains_on_both_and_selects_the_last_epoch(root):
    result = run_cell(
        root, "trainplusdev", "chemprot", train_on="train+dev", epochs=2, select="best_dev"
    )
    assert result["train_instances"] == SIZES["train"] + SIZES["dev"]
    assert result["selection"] == "last" and result["selected_epoch"] == 2
    assert all("dev" in e and "test" in e for e in result["epochs"])
    config = yaml.safe_load(open("config/demo.yaml"))
    config["recipes"]["final"] = {"extends": "standard", "train_on": "train+dev"}
    opts = cell_options(config, "tiny-biobert", "gad", "final", 1e-3, 16)
    assert opts.select == "last" and opts.train_on == "train+dev"
    splits = {s: load_encoded(encode(root, "chemprot"), s) for s in SIZES}
    both = training_data(
        splits, options(root, "chemprot", train_on="train+dev", train_subsample=50)
    )
    assert len(both["id"]) == 50 and any(i.startswith("dev") for i in both["id"])


# ---------------------------------------------------------------- segment_ids
@pytest.mark.parametrize("task", ["pubmedqa", "biosses"])
def test_single_segment_ids_are_all_zero_and_pair_has_ones(root, task):
    pair = load_encoded(encode(root, task, segment_ids="pair"), "train")
    single = load_encoded(encode(root, task, segment_ids="single"), "train")
    assert pair["input_ids"] == single["input_ids"]  # same text pair, [SEP] between
    assert all(1 in row for row in pair["token_type_ids"])
    assert all(set(row) == {0} for row in single["token_type_ids"])


# ---------------------------------------------------------------- tagging
def test_bioul_and_io_round_trip_to_bio():
    gold = ["O", "B", "I", "I", "O", "B", "O", "B", "I", "B"]
    bioul = tagging.to_scheme(gold, "BIOUL", "ner")
    assert bioul == ["O", "B", "I", "L", "O", "U", "O", "B", "L", "U"]
    assert tagging.to_gold_format(bioul, "BIOUL", "ner") == gold
    no_neighbours = ["B", "I", "O", "B", "O", "O", "B", "I", "I"]
    io = tagging.to_scheme(no_neighbours, "IO", "ner")
    assert io == ["I", "I", "O", "I", "O", "O", "I", "I", "I"]
    assert tagging.to_gold_format(io, "IO", "ner") == no_neighbours
    # IO cannot separate adjacent entities: they merge (the scheme's known loss)
    assert tagging.to_gold_format(tagging.to_scheme(["B", "B"], "IO", "ner"), "IO", "ner") == [
        "B",
        "I",
    ]
    assert tagging.to_scheme(gold, "BIO", "ner") == gold


def test_pico_schemes_keep_types():
    gold = ["O", "I-PAR", "I-PAR", "I-INT", "O", "I-OUT", "I-OUT", "I-OUT"]
    bioul = tagging.to_scheme(gold, "BIOUL", "pico")
    assert bioul == ["O", "B-PAR", "L-PAR", "U-INT", "O", "B-OUT", "I-OUT", "L-OUT"]
    assert tagging.to_gold_format(bioul, "BIOUL", "pico") == gold
    assert tagging.to_scheme(gold, "IO", "pico") == gold == tagging.to_scheme(gold, "BIO", "pico")
    labels = tagging.scheme_labels("pico", get_task("ebmpico").labels, "BIOUL")
    assert len(labels) == 13 and labels[-1] == "O" and "U-PAR" in labels
    assert tagging.scheme_labels("ner", ("B", "I", "O"), "BIOUL") == ("B", "I", "O", "U", "L")
    assert tagging.scheme_labels("ner", ("B", "I", "O"), "IO") == ("I", "O")


def test_invalid_predictions_are_repaired_deterministically():
    # L/I with nothing open start an entity; B and U close the open one; an unclosed B-I ends at O
    pred = ["L", "I", "U", "B", "O", "I", "L", "B", "I"]
    assert tagging.to_gold_format(pred, "BIOUL", "ner") == [
        "B", "B", "B", "B", "O", "B", "I", "B", "I"
    ]  # fmt: skip
    mixed = ["I-PAR", "L-INT", "U-OUT", "B-PAR", "I-INT"]
    assert tagging.to_gold_format(mixed, "BIOUL", "pico") == [
        "I-PAR", "I-INT", "I-OUT", "I-PAR", "I-INT"
    ]  # fmt: skip
    assert tagging.to_gold_format(["I", "O", "I", "I"], "IO", "ner") == ["B", "O", "B", "I"]
    with pytest.raises(ValueError, match="tagging: unknown scheme 'BILOU'"):
        tagging.to_scheme(["O"], "BILOU", "ner")


@pytest.mark.parametrize(
    ("task", "scheme"), [("ncbidisease", "BIOUL"), ("ncbidisease", "IO"), ("ebmpico", "BIOUL")]
)
def test_scheme_labels_train_and_decode_to_the_gold_format(root, task, scheme):
    spec = get_task(task)
    data = load_encoded(encode(root, task, tagging=scheme), "dev")
    labels = tagging.scheme_labels(spec.type, spec.labels, scheme)
    gold = pd.read_parquet(root / "data" / task / "dev.parquet")
    # perfect logits in the scheme decode to the prepared tags: the metric sees BIO
    rows = list(range(len(data["input_ids"])))
    width = max(map(len, data["input_ids"]))
    logits = torch.zeros(len(rows), width, len(labels))
    for r in rows:
        for t, label in enumerate(data["labels"][r]):
            if label != -100:
                logits[r, t, label] = 1.0
    pred = decode(spec, logits, data, rows, scheme)
    expected = [list(t) for t in gold["tags"]]
    if scheme == "IO":  # adjacent entities merge in IO
        expected = [
            tagging.to_gold_format(tagging.to_scheme(t, "IO", "ner"), "IO", "ner") for t in expected
        ]
    assert pred == expected
    assert compute_metric(spec, [list(t) for t in gold["tags"]], pred) > 0
    assert {t for p in pred for t in p} <= set(spec.labels)

    result = run_cell(root, f"tag-{task}-{scheme}", task, tagging=scheme)
    assert result["status"] == "ok"
    saved = pd.read_parquet(root / f"cells/tag-{task}-{scheme}/predictions.parquet")
    assert {t for p in saved["pred"] for t in json.loads(p)} <= set(spec.labels)


# ---------------------------------------------------------------- head: bilstm
def test_bilstm_head_shapes_gradients_and_surgery(root):
    source = str(root / "models/bert")
    model = load_for_task(source, get_task("ncbidisease"), head="bilstm")
    assert isinstance(model, TaskModel) and model.lstm.hidden_size == 16
    embeddings, layers, _ = surgery.encoder_parts(model)
    assert len(layers) == 2 and model.config.hidden_size == 32
    assert surgery.freeze_lower(model, 1) == 1
    groups = surgery.parameter_groups(model, 1.0, 0.01, 0.5)
    lr_of = {name: g["lr"] for g in groups for name in g["names"]}
    assert lr_of["lstm.weight_ih_l0"] == 1.0 and lr_of["classifier.weight"] == 1.0
    assert lr_of["bert.encoder.layer.1.output.dense.weight"] == pytest.approx(0.5**2)
    ids = torch.tensor([[2, 7, 8, 9, 3], [2, 7, 3, 0, 0]])
    mask = (ids != 0).long()
    labels = torch.tensor([[-100, 0, 1, 2, -100], [-100, 2, -100, -100, -100]])
    out = model(input_ids=ids, attention_mask=mask, labels=labels)
    assert out.logits.shape == (2, 5, 3) and out.loss.ndim == 0
    out.loss.backward()
    assert model.lstm.weight_hh_l0.grad is not None
    assert model.bert.encoder.layer[1].output.dense.weight.grad is not None
    assert model.bert.encoder.layer[0].output.dense.weight.grad is None  # frozen

    sequence = load_for_task(source, get_task("hoc"), head="bilstm")
    out = sequence(input_ids=ids, attention_mask=mask, labels=torch.zeros(2, 10))
    assert out.logits.shape == (2, 10)
    out.loss.backward()
    regression = load_for_task(source, get_task("biosses"), head="bilstm")
    out = regression(input_ids=ids, attention_mask=mask, labels=torch.tensor([1.0, 2.0]))
    assert out.logits.shape == (2, 1) and out.loss.item() > 0

    result = run_cell(root, "bilstm", "ncbidisease", head="bilstm", reinit_top=1)
    assert result["status"] == "ok"


# ---------------------------------------------------------------- re_input, re_pooling
def _tokens(tokenizer, ids, span):
    return tokenizer.decode(ids[span[0] : span[1]]).replace(" ", "").lower()


def test_markers_are_in_the_input_and_entity_positions_point_at_them(root):
    tokenizer = load_tokenizer(str(root / "models/bert"), entity_markers=True)
    marker_ids = [tokenizer.convert_tokens_to_ids(m) for m in ENTITY_MARKERS]
    assert marker_ids == list(range(len(tokenizer) - 4, len(tokenizer)))
    data = load_encoded(encode(root, "chemprot", re_input="markers"), "train")
    frame = pd.read_parquet(root / "data/chemprot/train.parquet")
    for i, ids in enumerate(data["input_ids"]):
        assert all(ids.count(m) == 1 for m in marker_ids)
        assert ids[data["e1_pos"][i]] == marker_ids[0] and ids[data["e2_pos"][i]] == marker_ids[2]
        a1, b1 = data["e1_span"][i]
        assert ids[a1 - 1] == marker_ids[0] and ids[b1] == marker_ids[1]
        row = frame.iloc[i]
        chem = row.original_text[row.e1_start : row.e1_end]
        gene = row.original_text[row.e2_start : row.e2_end]
        assert _tokens(tokenizer, ids, data["e1_span"][i]) == chem.replace(" ", "").lower()
        assert _tokens(tokenizer, ids, data["e2_span"][i]) == gene.replace(" ", "").lower()

    original = load_encoded(encode(root, "chemprot", re_input="original"), "train")
    assert not any(m in ids for ids in original["input_ids"] for m in marker_ids)
    for i, ids in enumerate(original["input_ids"]):
        row = frame.iloc[i]
        gene = row.original_text[row.e2_start : row.e2_end]
        assert _tokens(tokenizer, ids, original["e2_span"][i]) == gene.replace(" ", "").lower()
        assert original["e1_pos"][i] == original["e1_span"][i][0]

    dummy = load_encoded(encode(root, "gad"), "train")  # GAD: placeholders of the given text
    for i, ids in enumerate(dummy["input_ids"]):
        assert _tokens(tokenizer, ids, dummy["e1_span"][i]) == "@chemical$"
        assert _tokens(tokenizer, ids, dummy["e2_span"][i]) == "@gene$"


@pytest.mark.parametrize("re_input", ["markers", "original"])
def test_markers_and_original_are_impossible_for_gad(root, re_input):
    with pytest.raises(ValueError, match=rf"task gad: re_input='{re_input}' needs the original"):
        encode(root, "gad", re_input=re_input)


@pytest.mark.parametrize(
    ("re_input", "pooling", "model"),
    [
        ("markers", "entity_start", "bert"),
        ("markers", "mention", "roberta"),
        ("dummify", "mention", "electra"),
        ("original", "entity_start", "electra"),
    ],
)
def test_entity_pooling_shapes_and_a_step_trains(root, re_input, pooling, model):
    spec = get_task("chemprot")
    opts = options(root, "chemprot", model, re_input=re_input, re_pooling=pooling)
    encoded = encode(root, "chemprot", model, re_input=re_input)
    data = load_encoded(encoded, "train")
    tokenizer = load_tokenizer(opts.model_source, entity_markers=re_input == "markers")
    net, optimizer, _ = build_model_and_optimizer(opts, spec, 40, len(tokenizer))
    assert net.get_input_embeddings().num_embeddings >= len(tokenizer)
    assert net.classifier.in_features == 2 * 32
    fmt = BatchFormat(tokenizer.pad_token_id, torch.long, entities=True)
    batch = make_batch(data, list(range(8)), fmt)
    assert batch["entity_spans"].shape == (8, 2, 2) and batch["entity_starts"].shape == (8, 2)
    before = net.classifier.weight.detach().clone()
    out = net(**batch)
    assert out.logits.shape == (8, len(spec.labels)) and torch.isfinite(out.loss)
    out.loss.backward()
    optimizer.step()
    assert not torch.equal(before, net.classifier.weight)


def test_a_marker_cell_with_mention_pooling_runs(root):
    result = run_cell(root, "markers", "chemprot", re_input="markers", re_pooling="mention")
    assert result["status"] == "ok" and result["dev"] is not None


# ---------------------------------------------------------------- tokenization cache key
def test_cache_key_changes_with_input_options_only():
    def key(task: str, **changes) -> str:  # the key of a cell's inputs, the cell's defaults
        return input_key(task, make_options(**{"max_length": 256, **changes}).inputs)

    assert key("chemprot") == "L256-dummify"
    assert key("chemprot", re_input="markers") == "L256-markers"
    assert key("chemprot", lr=1e-5, head="bilstm") == "L256-dummify"
    assert key("chemprot", re_pooling="mention") == "L256-dummify"
    assert key("ncbidisease", tagging="BIOUL") == "L256-BIOUL"
    assert key("ncbidisease", re_input="markers") == "L256-BIO"
    assert key("pubmedqa", segment_ids="single") == "L256-single"
    assert key("hoc", segment_ids="single", tagging="IO") == "L256"
    assert key("biosses", max_length=128) == "L128-pair"
    for k in ("L256-markers", "L512-BIOUL", "L64-single", "L512"):
        assert InputOptions.from_key(k).max_length == int(k.split("-")[0][1:])
    assert InputOptions.from_key("L256-markers").re_input == "markers"
    with pytest.raises(ValueError, match="unknown or repeated part 'bogus'"):
        InputOptions.from_key("L256-bogus")


def test_workflow_tokenized_dirs_follow_the_key():
    config = yaml.safe_load(open("config/demo.yaml"))

    def dirs(cfg):
        return {c.path: input_key(c.task, c.options.inputs) for c in expand_cells(cfg).values()}

    before = dirs(config)
    assert before["results/cells/tiny-biobert/gad/standard/lr0.001-bs16/seed1"] == "L128-dummify"
    lr_only = copy.deepcopy(config)
    lr_only["recipes"]["standard"]["lr"] = 2e-3
    assert set(dirs(lr_only).values()) == set(before.values())
    markers = copy.deepcopy(config)
    markers["recipes"]["standard"].update(re_input="markers", tagging="BIOUL")
    changed = {p.split("/")[3]: k for p, k in dirs(markers).items() if "/standard/" in p}
    assert changed["gad"] == "L128-markers" and changed["ncbidisease"] == "L512-BIOUL"
    assert changed["biosses"] == "L512-pair"


def test_schema_declares_every_recipe_option():
    import jsonschema

    schema = yaml.safe_load(open("workflow/schemas/config.schema.yaml"))
    options_schema = schema["$defs"]["options"]["properties"]
    assert set(defaults()) <= set(options_schema)
    config = yaml.safe_load(open("config/demo.yaml"))
    config["recipes"]["all"] = {
        "train_on": "train+dev",
        "train_subsample": 100,
        "subsample_seed": 3,
        "segment_ids": "single",
        "tagging": "BIOUL",
        "head": "bilstm",
        "re_input": "markers",
        "re_pooling": "entity_start",
    }
    jsonschema.validate(config, schema)
    config["recipes"]["all"]["tagging"] = "BILOU"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(config, schema)


def test_cli_tokenize_takes_the_input_key(root, tmp_path):
    from blurbflow.cli import main

    source = str(root / "models/bert")
    out = tmp_path / "L64-markers"
    args = ["tokenize", "--task", "chemprot", "--data", str(root / "data/chemprot")]
    assert (
        main([*args, "--tokenizer", source, "--input-key", "L64-markers", "--out", str(out)]) == 0
    )
    meta = json.loads((out / "meta.json").read_text())
    assert meta["inputs"] == {"max_length": 64, "re_input": "markers"}
    assert set(meta["added_tokens"]) == set(ENTITY_MARKERS)
    bad = main(
        [*args, "--tokenizer", source, "--input-key", "L64-BIO", "--out", str(tmp_path / "x")]
    )
    assert bad == 1 and not (tmp_path / "x").exists()


# ---------------------------------------------------------------- architectures and surgery
@pytest.mark.parametrize("model", ["bert", "electra", "roberta"])
@pytest.mark.parametrize("task", ["ncbidisease", "pubmedqa"])
def test_one_step_with_layer_surgery_on_each_architecture(root, model, task):
    spec = get_task(task)
    opts = options(root, task, model, freeze_lower=1, layerwise_lr_decay=0.8, reinit_top=1, lr=1e-2)
    net, optimizer, scheduler = build_model_and_optimizer(opts, spec, 40)
    embeddings, layers, pooler = surgery.encoder_parts(net)
    # only BERT's sequence model has a pooler (reinit_top re-draws it there)
    assert len(layers) == 2 and (pooler is not None) == (model == "bert" and task == "pubmedqa")
    lr_of = {id(p): g["initial_lr"] for g in optimizer.param_groups for p in g["params"]}
    top = next(layers[1].parameters())
    assert lr_of[id(top)] == pytest.approx(1e-2 * 0.8**2)
    frozen = {n: p.detach().clone() for n, p in net.named_parameters() if not p.requires_grad}
    assert frozen and all(not p.requires_grad for p in embeddings.parameters())
    trained = top.detach().clone()
    data = load_encoded(encode(root, task, model), "train")
    pad = load_tokenizer(opts.model_source).pad_token_id
    loss = net(**make_batch(data, list(range(8)), BatchFormat(pad, torch.long))).loss
    assert torch.isfinite(loss)
    loss.backward()
    optimizer.step()
    scheduler.step()
    assert not torch.equal(trained, top)
    for name, param in net.named_parameters():
        if name in frozen:
            assert torch.equal(param, frozen[name]), name


def test_truncated_or_missing_entities_point_at_cls_and_block_entity_pooling(root, tmp_path):
    spec = get_task("chemprot")
    tokenizer = load_tokenizer(str(root / "models/bert"), entity_markers=True)
    short = InputOptions(max_length=8, re_input="markers")
    meta = encode_task(spec, root / "data/chemprot", tokenizer, short, tmp_path / "short")
    assert meta["splits"]["train"]["entities_truncated"] > 0
    data = load_encoded(tmp_path / "short", "train")
    cut = [i for i, ids in enumerate(data["input_ids"]) if ids.count(len(tokenizer) - 2) == 0]
    assert cut and all(data["e2_pos"][i] == 0 and data["e2_span"][i] == [0, 1] for i in cut)

    gad = pd.read_parquet(root / "data/gad/train.parquet")
    gad.loc[0, "text"] = "no placeholder in this sentence"
    folder = tmp_path / "gad"
    folder.mkdir()
    for split in SIZES:
        gad.to_parquet(folder / f"{split}.parquet")
    meta = encode_task(
        get_task("gad"), folder, tokenizer, InputOptions(max_length=64), tmp_path / "gad-encoded"
    )
    assert meta["splits"]["train"]["entities_not_found"] == 2
    check_encoded(meta, get_task("gad"), options(root, "gad"), tmp_path)  # cls: fine
    with pytest.raises(ValueError, match="task gad: re_pooling='mention' needs both entities"):
        check_encoded(meta, get_task("gad"), options(root, "gad", re_pooling="mention"), tmp_path)
    with pytest.raises(ValueError, match="tokenized with re_input='dummify'"):
        check_encoded(meta, get_task("gad"), options(root, "gad", re_input="original"), tmp_path)


# ---------------------------------------------------------------- config.yaml's optimisers

PAPER_CONFIG = yaml.safe_load((Path(__file__).parent.parent / "config.yaml").read_text())


@pytest.mark.parametrize(("recipe", "corrected"), [("standard", False), ("tinn-improved", True)])
def test_paper_recipes_build_the_papers_adam(root, recipe, corrected):
    """`standard` is the original BERT optimizer (no bias correction, epsilon 1e-6); Tinn's
    improved optimisation turns bias correction on; both warm up from a rate of 0."""
    lr, bs, axes = grid_points(resolve_recipe(PAPER_CONFIG, recipe))[0]
    paper = cell_options(PAPER_CONFIG, "pubmedbert", "gad", recipe, lr, bs, axes)
    keys = (
        "adam_bias_correction",
        "adam_epsilon",
        "adam_beta1",
        "adam_beta2",
        "warmup_ratio",
        "weight_decay",
        "lr",
        "batch_size",
        "epochs",
    )
    opts = options(root, "gad", **{k: getattr(paper, k) for k in keys})
    _, optimizer, schedule = build_model_and_optimizer(opts, get_task("gad"), 100)
    assert {g["bias_correction"] for g in optimizer.param_groups} == {corrected}
    assert {g["eps"] for g in optimizer.param_groups} == {1e-6}
    assert schedule.get_last_lr()[0] == 0.0


def test_a_technique_axis_point_reaches_the_model(root):
    """A `reinit_top` list is a grid axis: each point's cells build the model with its depth."""
    config = {
        "models": {"bert": {"path": str(root / "models" / "bert")}},
        "recipes": {"r": {"lr": 1e-3, "batch_size": 8, "epochs": 1, "reinit_top": [0, 1]}},
        "studies": {"s": {"models": ["bert"], "tasks": ["gad"], "recipes": ["r"], "seeds": 1}},
    }
    cells = {c.hparams: c.options for c in expand_cells(config).values()}
    assert set(cells) == {"lr0.001-bs8-reinit0", "lr0.001-bs8-reinit1"}
    top = {}
    for name, cell in cells.items():
        opts = options(root, "gad", reinit_top=cell.reinit_top, seed=1)
        net, _, _ = build_model_and_optimizer(opts, get_task("gad"), 40)
        top[name] = (
            next(
                p
                for n, p in net.named_parameters()
                if ".layer.1." in n and n.endswith("attention.self.query.weight")
            )
            .detach()
            .clone()
        )
    assert not torch.equal(top["lr0.001-bs8-reinit0"], top["lr0.001-bs8-reinit1"])
