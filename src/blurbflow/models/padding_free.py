"""The padding-free path (engine setting `shapes: padding_free`, docs/engine.md "On a GPU"): a
padded batch's real tokens run through the encoder as one row, and attention is computed per
sequence with torch's scaled_dot_product_attention on jagged (nested) tensors, which dispatches
to the variable-length flash or memory-efficient kernels on CUDA and to the math kernel on the
CPU; attention dropout works as in SDPA. ModernBERT's local layers (a window of ±w tokens): a
sequence no longer than the window attends to itself whole, on the jagged path; a longer one
runs padded with a band mask. After the encoder the token states are put back in the padded
layout (zeros at the pads), so poolers, heads and losses run on the padded batch unchanged.

Covered: BERT, ELECTRA, ALBERT, RoBERTa and ModernBERT (their embeddings take absolute
`position_ids`, or rotary ones; each sequence gets its own from its first position). Not:
DeBERTa-v2 (relative positions, eager attention). The model runs under the attention name
`NAME`, registered with transformers: outside `running` it is plain sdpa, so evaluation of
padded batches and every other caller see the model unchanged."""

from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

NAME = "sdpa_padding_free"
# model type -> the position id of a sequence's first token: its pad id + 1 (RoBERTa's
# embeddings count from there), else 0
FIRST_AFTER_PAD = {"bert": False, "electra": False, "albert": False, "roberta": True}
MODEL_TYPES = {**FIRST_AFTER_PAD, "modernbert": False}


def first_position(config) -> int:
    """The position id of a sequence's first token in this model's embeddings."""
    return config.pad_token_id + 1 if FIRST_AFTER_PAD.get(config.model_type) else 0


def supports(model) -> bool:
    """Whether `model` can run padding-free: a covered architecture under sdpa, whose forward
    takes `position_ids`, with its encoder where `_encoder` finds it."""
    config = getattr(model, "config", None)
    if getattr(config, "model_type", None) not in MODEL_TYPES:
        return False
    if getattr(config, "_attn_implementation", None) not in ("sdpa", NAME):
        return False
    if "position_ids" not in inspect.signature(model.forward).parameters:
        return False
    return _encoder(model) is not None


def enable(model) -> None:
    """Run `model` under NAME (sdpa outside `running`)."""
    register()
    model.set_attn_implementation(NAME)


@dataclass
class Packed:
    """A padded batch's real tokens as one row: where each sits in the padded layout and where
    each sequence starts (host tensors, moved to the device with the batch)."""

    index: torch.Tensor  # flat positions in the padded (rows × width) layout of the real tokens
    offsets: torch.Tensor  # sequence starts in the row, and its length at the end
    lengths: list[int]
    shape: tuple[int, int]  # the padded batch's (rows, width)
    _windowed: dict = field(default_factory=dict)  # (window, device) -> _windowed's tensors

    def to(self, device) -> Packed:
        moved = {k: to_device(v, device) for k, v in self._tensors().items()}
        return Packed(lengths=self.lengths, shape=self.shape, **moved)

    def _tensors(self) -> dict:
        return {"index": self.index, "offsets": self.offsets}


def pack(batch: dict, first: int = 0) -> tuple[dict, Packed]:
    """The model inputs of a right-padded `batch` (attention_mask 1 on its real tokens) as one
    row of real tokens, with per-sequence `position_ids` from `first`; the padded
    attention_mask and labels stay as they are (heads and losses read them after the
    encoder)."""
    mask = batch["attention_mask"]
    rows, width = mask.shape
    index = mask.reshape(-1).nonzero().squeeze(1)
    lengths = mask.sum(1).tolist()
    offsets = torch.zeros(rows + 1, dtype=torch.long)
    offsets[1:] = torch.tensor(lengths).cumsum(0)
    out = {k: v for k, v in batch.items() if k not in ("input_ids", "token_type_ids")}
    out["input_ids"] = batch["input_ids"].reshape(-1)[index][None]
    if "token_type_ids" in batch:
        out["token_type_ids"] = batch["token_type_ids"].reshape(-1)[index][None]
    out["position_ids"] = (index % width + first)[None]
    return out, Packed(index, offsets, lengths, (rows, width))


def to_device(tensor: torch.Tensor, device) -> torch.Tensor:
    """`tensor` on `device` without the host waiting: a copy from pageable memory to a GPU
    waits for the stream first, one from pinned memory does not."""
    if torch.device(device).type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)


_active: Packed | None = None


@contextlib.contextmanager
def running(model, packed: Packed):
    """Inside: `model`'s attention runs per sequence of `packed` (on the model's device), and
    its encoder's token states come out in the padded layout."""
    global _active
    encoder = _encoder(model)
    hook = encoder.register_forward_hook(lambda module, args, output: _unpack(output, packed))
    _active = packed
    try:
        yield
    finally:
        _active = None
        hook.remove()


def _encoder(model):
    """The module whose output is the token states before any pooler: a BERT-style model's
    encoder (its pooler reads position 0 after it), else the base model (ModernBERT's final
    norm is inside it)."""
    base = getattr(model, "base_model", model)
    if hasattr(base, "pooler") or hasattr(base, "encoder"):
        return getattr(base, "encoder", None)
    return base if hasattr(base, "layers") else None


def _unpack(output, packed: Packed):
    rows, width = packed.shape
    states = output[0] if isinstance(output, tuple) else output["last_hidden_state"]
    flat = states.new_zeros(rows * width, states.shape[-1])
    flat = flat.index_copy(0, packed.index, states[0]).view(rows, width, -1)
    if isinstance(output, tuple):
        return (flat, *output[1:])
    output["last_hidden_state"] = flat
    return output


# -- the attention function -----------------------------------------------------------------
def attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """transformers' attention interface: (batch, heads, tokens, dim) in, (batch, tokens,
    heads, dim) out. Plain sdpa unless `running`."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    packed = _active
    if packed is None:
        kwargs.pop("sliding_window", None)
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    window = kwargs.get("sliding_window")
    out = per_sequence(query[0], key[0], value[0], packed, dropout, scaling, window)
    return out[None], None


def per_sequence(q, k, v, packed: Packed, dropout: float, scale, window: int | None = None):
    """Attention of (heads, tokens, dim) inputs within each sequence of `packed`; `window`: a
    token attends to those less than `window` positions away (ModernBERT passes its half window
    + 1). Returns (tokens, heads, dim)."""
    if window is None or max(packed.lengths) <= window:
        return _jagged(q, k, v, packed.offsets, packed.lengths, dropout, scale)
    short, long, gather, valid = _windowed(packed, window, q.device)
    out = q.new_empty(q.shape[1], q.shape[0], q.shape[2])
    tokens, offsets, lengths = short
    if lengths:  # sequences within the window
        part = [x[:, tokens] for x in (q, k, v)]
        out[tokens] = _jagged(*part, offsets, lengths, dropout, scale)
    # the long sequences padded, each position attending within the band and its sequence
    qg, kg, vg = (x[:, gather].transpose(0, 1) for x in (q, k, v))  # (seqs, heads, width, dim)
    width = gather.shape[1]
    near = torch.arange(width, device=q.device)
    band = (near[:, None] - near[None, :]).abs() < window
    mask = band[None] & valid[:, None, :] | torch.eye(width, dtype=torch.bool, device=q.device)
    dense = F.scaled_dot_product_attention(
        qg, kg, vg, attn_mask=mask[:, None], dropout_p=dropout, scale=scale
    )
    out[long] = dense.transpose(1, 2)[valid]
    return out


def _jagged(q, k, v, offsets, lengths, dropout, scale):
    def nested(x):  # (heads, tokens, dim) -> (sequences, heads, jagged, dim)
        flat = x.transpose(0, 1).contiguous()
        return torch.nested.nested_tensor_from_jagged(
            flat, offsets, min_seqlen=min(lengths), max_seqlen=max(lengths)
        ).transpose(1, 2)

    out = F.scaled_dot_product_attention(
        nested(q), nested(k), nested(v), dropout_p=dropout, scale=scale
    )
    return out.transpose(1, 2).values()


def _windowed(packed: Packed, window: int, device):
    """(short: (tokens, offsets, lengths) of the sequences within the window, long: their
    tokens' positions in the row, gather: (long sequences, width) positions, valid: its real
    entries), computed once per batch and window."""
    if (window, device) not in packed._windowed:
        starts = [0]
        for n in packed.lengths[:-1]:
            starts.append(starts[-1] + n)
        short_tokens, short_lengths, long_rows = [], [], []
        for i, n in enumerate(packed.lengths):
            if n <= window:
                short_tokens.extend(range(starts[i], starts[i] + n))
                short_lengths.append(n)
            else:
                long_rows.append(i)
        width = max(packed.lengths[i] for i in long_rows)
        gather = torch.zeros(len(long_rows), width, dtype=torch.long)
        valid = torch.zeros(len(long_rows), width, dtype=torch.bool)
        for r, i in enumerate(long_rows):
            n = packed.lengths[i]
            gather[r, :n] = torch.arange(starts[i], starts[i] + n)
            valid[r, :n] = True
        offsets = torch.zeros(len(short_lengths) + 1, dtype=torch.long)
        offsets[1:] = torch.tensor(short_lengths, dtype=torch.long).cumsum(0)
        short = (torch.tensor(short_tokens, dtype=torch.long), offsets, short_lengths)
        long = gather[valid]
        short = (to_device(short[0], device), to_device(short[1], device), short[2])
        found = (short, *(to_device(t, device) for t in (long, gather, valid)))
        packed._windowed[window, device] = found
    return packed._windowed[window, device]


def _mask(*args, **kwargs):
    """transformers' mask interface: none while `running` (the attention knows the sequences),
    else sdpa's."""
    from transformers.masking_utils import sdpa_mask

    return None if _active is not None else sdpa_mask(*args, **kwargs)


def register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    AttentionInterface.register(NAME, attention)
    AttentionMaskInterface.register(NAME, _mask)
