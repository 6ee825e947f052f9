"""A padded batch turned into the model inputs of the cell's shape policy (blurbflow.train.engine)
and put on the device, for training steps and evaluation alike, and the next batch prepared
while the device computes (`ahead`).

- widths rounded up to a multiple of `pad_multiple` (bucket widths: fewer distinct shapes for
  kernels that build a graph per shape, or a compiled model), never past the cell's max_length;
- padding-free: the real tokens as one row (blurbflow.models.padding_free);
- on CUDA, an sdpa model of BERT's family gets its padding mask as a 4-D boolean
  (rows, 1, 1, width) built on the host: from a 2-D mask transformers checks on the device
  whether anything is padded, a host sync every forward pass;
- copies from pinned host memory, `non_blocking`, so they overlap the device's work.
On the CPU with the default policy the batch is returned as it is."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import torch

from blurbflow.models import padding_free
from blurbflow.train.encode import IGNORE

# what a widened batch's token columns are padded with (None: the pad id)
PADDED = {"input_ids": None, "attention_mask": 0, "token_type_ids": 0, "labels": IGNORE}


@dataclass(frozen=True)
class Shapes:
    """How a cell's batches become model inputs on `device`."""

    device: torch.device
    pad_id: int = 0
    mode: str = "micro_batches"  # blurbflow.train.engine.Policy.batch_shapes
    pad_multiple: int = 1
    max_width: int | None = None  # the cell's max_length: rounding stops there
    first_position: int = 0  # padding-free position ids start here (padding_free.first_position)
    host_mask: bool = False
    graphs: bool = False  # the model replays CUDA graphs (blurbflow.train.compiled)

    def inputs(self, batch: dict) -> tuple[dict, padding_free.Packed | None]:
        """(the inputs on the device, the packing while padding-free, else None)."""
        if self.mode == "padding_free":
            batch, packed = padding_free.pack(batch, self.first_position)
            return self._to_device(batch), packed.to(self.device)
        batch = self.bucketed(batch)
        if self.host_mask:
            batch = dict(batch)
            batch["attention_mask"] = batch["attention_mask"].bool()[:, None, None, :]
        return self._to_device(batch), None

    def bucketed(self, batch: dict) -> dict:
        """The padded batch widened to its bucket width (as it is without buckets)."""
        if self.pad_multiple > 1:
            return widen(batch, self.pad_multiple, self.pad_id, self.max_width)
        return batch

    def _to_device(self, batch: dict) -> dict:
        if self.device.type == "cpu":
            return batch
        return {k: padding_free.to_device(v, self.device) for k, v in batch.items()}


def for_policy(policy, model, device: torch.device, pad_id: int, max_width: int | None) -> Shapes:
    """The Shapes of a cell's engine policy (blurbflow.train.engine.Policy) for `model`."""
    free = policy.batch_shapes == "padding_free"
    return Shapes(
        device=device,
        pad_id=pad_id,
        mode=policy.batch_shapes,
        pad_multiple=policy.pad_multiple,
        max_width=max_width,
        first_position=padding_free.first_position(model.config) if free else 0,
        host_mask=not free and uses_host_mask(model, device),
        graphs=policy.graphs,
    )


def widen(batch: dict, multiple: int, pad_id: int, limit: int | None = None) -> dict:
    """`batch` padded on the right to a width that is a multiple of `multiple` (at most `limit`,
    or its own width when that is longer): ids with `pad_id`, masks and token types with 0,
    token labels with IGNORE, so every real token's logits and the loss are unchanged."""
    width = batch["input_ids"].shape[1]
    target = -(-width // multiple) * multiple
    if limit is not None:
        target = max(width, min(target, int(limit)))
    if target == width:
        return batch
    out = dict(batch)
    for key, fill in PADDED.items():
        value = batch.get(key)
        if value is not None and value.dim() == 2:  # labels of a sequence task: one per row
            fill = pad_id if fill is None else fill
            out[key] = torch.nn.functional.pad(value, (0, target - width), value=fill)
    return out


def uses_host_mask(model, device: torch.device) -> bool:
    """Whether `model` takes its padding mask 4-D from the host (see the module's note): a
    transformers model (blurbflow's own heads read the 2-D mask) of BERT's family under sdpa."""
    from transformers import PreTrainedModel

    config = getattr(model, "config", None)
    return (
        device.type == "cuda"
        and isinstance(model, PreTrainedModel)
        and getattr(config, "model_type", None) in padding_free.FIRST_AFTER_PAD
        and getattr(config, "_attn_implementation", None) in ("sdpa", padding_free.NAME)
    )


def ahead(items: Iterable, prepare: Callable, enabled: bool) -> Iterator[tuple]:
    """(item, get) for each item, where get() returns prepare(item): with `enabled`, the next
    item is prepared in a worker thread while the caller works on this one; else get()
    prepares it when called. prepare must not touch what the caller changes (it builds
    inputs from the data only), so the results are the same either way."""
    items = list(items)
    if not enabled:
        for item in items:
            yield item, (lambda item=item: prepare(item))
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="prefetch") as pool:
        future = pool.submit(prepare, items[0]) if items else None
        for i, item in enumerate(items):
            current = future
            future = pool.submit(prepare, items[i + 1]) if i + 1 < len(items) else None
            yield item, current.result
