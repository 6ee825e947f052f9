"""Tokenizers of model folders through transformers' AutoTokenizer: their casing (a cased
vocabulary kept cased), RoBERTa's prefix space, and the entity markers of `re_input: markers`
(split from `models.load`, which re-exports these names)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from blurbflow.models.spm import check_sentencepiece
from blurbflow.options import UNSET, ModelOptions

# Entity markers of `re_input: markers`, added as special tokens in this order, so that the
# tokenizer at tokenize time and the model's embeddings at load time agree on their ids.
ENTITY_MARKERS = ("[E1]", "[/E1]", "[E2]", "[/E2]")


def add_entity_markers(tokenizer) -> dict[str, int]:
    """Add the entity markers as special tokens (idempotent, deterministic); their ids."""
    missing = [m for m in ENTITY_MARKERS if m not in tokenizer.get_vocab()]
    if missing:
        tokenizer.add_special_tokens(
            {"additional_special_tokens": missing}, replace_extra_special_tokens=False
        )
    return {m: tokenizer.convert_tokens_to_ids(m) for m in ENTITY_MARKERS}


# A vocabulary whose share of word pieces with upper-case letters reaches this is cased: an
# uncased vocabulary has none (its tokenizer lower-cases everything it sees).
CASED_VOCAB_SHARE = 0.01


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def lowercases(tokenizer) -> bool:
    """Whether the tokenizer lower-cases its input (its normalizer, else `do_lower_case`)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:  # upper and lower case normalised alike: SentencePiece normalizers
        normalizer = backend.normalizer  # change spaces ("DNA▁IL"), not case
        return normalizer is not None and (
            normalizer.normalize_str("DNA IL") == normalizer.normalize_str("dna il")
        )
    return bool(getattr(tokenizer, "do_lower_case", False))


def _set_lowercase(tokenizer, lower: bool) -> None:
    from tokenizers import normalizers

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ValueError(
            f"{type(tokenizer).__name__} has no tokenizers backend whose casing can be set; "
            "remove `cased` from the model's config entry"
        )
    normalizer = backend.normalizer
    if isinstance(normalizer, normalizers.BertNormalizer):
        normalizer.lowercase = lower
    elif lower:
        parts = [normalizer] if normalizer is not None else []
        backend.normalizer = normalizers.Sequence([*parts, normalizers.Lowercase()])
    elif isinstance(normalizer, normalizers.Lowercase):
        backend.normalizer = normalizers.Sequence([])
    elif isinstance(normalizer, normalizers.Sequence):
        kept = [normalizer[i] for i in range(len(normalizer))]
        backend.normalizer = normalizers.Sequence(
            [n for n in kept if not isinstance(n, normalizers.Lowercase)]
        )
    if hasattr(tokenizer, "do_lower_case"):
        tokenizer.do_lower_case = lower
    if lowercases(tokenizer) != lower:
        raise ValueError(f"could not make the tokenizer {'un' if lower else ''}cased")


def _vocab_cased(source: str, tokenizer) -> str | None:
    """Why the tokenizer of `source` should keep case although it lower-cases: it is built from
    a bare vocab.txt (no tokenizer.json, no `do_lower_case` in tokenizer_config.json), whose
    word pieces include upper case, e.g. dmis-lab/biobert-base-cased-v1.1. None otherwise."""
    folder = Path(source)
    if not folder.is_dir() or (folder / "tokenizer.json").exists():
        return None
    try:
        settings = json.loads((folder / "tokenizer_config.json").read_text())
    except (OSError, ValueError):
        settings = {}
    if "do_lower_case" in settings:
        return None
    pieces = [p for p in tokenizer.get_vocab() if not (p.startswith("[") and p.endswith("]"))]
    upper = sum(any(c.isupper() for c in p) for p in pieces)
    if pieces and upper / len(pieces) >= CASED_VOCAB_SHARE:
        return f"{upper} of {len(pieces)} word pieces have upper case"
    return None


def _prefix_space(source: str, add_prefix_space: bool | None, trust_remote_code: bool):
    if add_prefix_space is not None:
        return add_prefix_space
    from transformers import AutoConfig

    # RoBERTa's byte-level BPE needs a prefix space to tokenize pre-split words.
    config = AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code)
    return True if config.model_type in ("roberta", "deberta") else None


def _byte_level_parts(tokenizer) -> list:
    """The byte-level pre-tokenizers of the tokenizer's backend (top level or in a Sequence)."""
    from tokenizers import pre_tokenizers

    backend = getattr(tokenizer, "backend_tokenizer", None)
    pre = backend.pre_tokenizer if backend is not None else None
    parts = [pre]
    if isinstance(pre, pre_tokenizers.Sequence):
        parts, index = [], 0
        while True:
            try:
                parts.append(pre[index])
            except IndexError:
                break
            index += 1
    return [p for p in parts if isinstance(p, pre_tokenizers.ByteLevel)]


def _set_byte_level_prefix(tokenizer, prefix: bool) -> None:
    """Apply add_prefix_space to the backend's byte-level pre-tokenizer: transformers 5's
    generic fast tokenizer (ModernBERT's tokenizer.json) records the keyword but tokenizes
    pre-split words (NER, PICO) without the leading-space marker "Ġ" all the same."""
    for part in _byte_level_parts(tokenizer):  # set in place: the backend holds these objects
        part.add_prefix_space = prefix


def load_tokenizer(
    source: str | Path,
    add_prefix_space: bool | None = None,
    entity_markers: bool = False,
    *,
    trust_remote_code: bool = False,
    cased: bool | None = None,
):
    """The tokenizer of the model folder `source`. `cased`: keep case (True) or lower-case
    (False) whatever the tokenizer files say; None: as they say, except that a bare cased
    vocab.txt keeps case. `add_prefix_space` (byte-level BPE, RoBERTa): None = on for RoBERTa
    and DeBERTa. `trust_remote_code` only when the model's config entry says so."""
    from transformers import AutoTokenizer

    source = str(source)
    check_sentencepiece(source)
    prefix = _prefix_space(source, add_prefix_space, trust_remote_code)
    kwargs = {} if prefix is None else {"add_prefix_space": prefix}
    tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code, **kwargs)
    if prefix is not None:
        _set_byte_level_prefix(tokenizer, prefix)
    if prefix is not None and getattr(tokenizer, "add_prefix_space", prefix) != prefix:
        raise ValueError(
            f"{source}: {type(tokenizer).__name__} ignores add_prefix_space={prefix}; remove "
            "add_prefix_space from the model's config entry"
        )
    because = "the tokenizer's own setting"
    if cased is None and lowercases(tokenizer):
        detected = _vocab_cased(source, tokenizer)
        if detected:
            cased, because = True, f"a cased vocabulary ({detected})"
    elif cased is not None:
        because = f"cased: {str(cased).lower()} in the model's config entry"
    if cased is not None and lowercases(tokenizer) == cased:
        _set_lowercase(tokenizer, not cased)
    _log(
        f"tokenizer {type(tokenizer).__name__} from {source}: {len(tokenizer)} tokens, "
        f"{'lower-cases' if lowercases(tokenizer) else 'keeps case'} ({because})"
        + ("" if prefix is None else f", add_prefix_space={prefix}")
    )
    if entity_markers:
        add_entity_markers(tokenizer)
    return tokenizer


def tokenizer_settings(model: ModelOptions) -> dict:
    """`load_tokenizer` keyword arguments from a model's options (unset settings: None)."""
    return {
        "cased": model.cased if model.cased is not UNSET else None,
        "add_prefix_space": model.add_prefix_space if model.add_prefix_space is not UNSET else None,
        "trust_remote_code": bool(model.trust_remote_code),
    }
