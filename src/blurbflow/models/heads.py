"""Task heads beyond transformers' own ones (recipe options `head`, `re_pooling`).

`TaskModel` wraps a bare encoder (`AutoModel`) under its usual attribute name (`bert`,
`electra`, `roberta` …), so parameter names, `model.base_model` and `model.config` are those of
the matching `*For*Classification` model and layer surgery finds the layers unchanged.

- `head: cls_linear` (Gu et al. 2021 §5.2's "linear layer"): exactly one new linear layer.
  Sequence tasks with `re_pooling: cls`: the pretrained pooler's output where the checkpoint has
  one (BERT's NSP-trained pooler: the same computation as BertForSequenceClassification), else
  the raw [CLS] state (RoBERTa, ELECTRA, DeBERTa, ModernBERT, whose own heads add a new dense
  layer); a pooler that is not read is removed (blurbflow.models.load.cls_linear_encoder), so
  nothing else is newly initialised. Token tasks: one linear layer per token, as `linear` for
  BERT, RoBERTa, ELECTRA and DeBERTa (ModernBERT's own token head adds dense + act + norm).
- a model entry's `untrained_pooler` (a BERT pretrained without next-sentence prediction, e.g.
  BioM-BERT-L with ELECTRA's code): no sequence head reads its pooler, which is removed;
  `linear` is then this model's one linear layer on the raw [CLS] state (ELECTRA's fine-tuning
  head), the same as `cls_linear`.
- token tasks: encoder states → [BiLSTM] → dropout → linear, per token;
- sequence tasks: encoder states → [BiLSTM] → pooled feature → dropout → linear. Pooling:
  `cls` = the state at position 0 ([CLS]) — except after a BiLSTM, where it is the mean of the
  BiLSTM states over the real tokens (position 0's forward state has only seen [CLS]);
  `max` = the element-wise max of each entity's token states, e1 and e2 concatenated (Gu et
  al. 2021, Table 12's "mention pooling"); `mention` = the mean of them, concatenated;
  `entity_start` = the states at each entity's start token ([E1]/[E2]; the cell allows it with
  entity markers only, as in the paper), concatenated.
- BiLSTM: one bidirectional layer, hidden = encoder hidden / 2 per direction, over the real
  (unpadded) tokens only.

Losses as transformers': cross-entropy ignoring -100 (token and single-label tasks), BCE with
logits (multi-label), MSE (regression, one output).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from blurbflow.options import choices

HEADS = choices("head")  # the recipe options' allowed values, written once (blurbflow.options)
POOLINGS = choices("re_pooling")
SPAN_POOLINGS = ("max", "mention")


@dataclass
class HeadOutput:
    loss: torch.Tensor | None
    logits: torch.Tensor


class TaskModel(nn.Module):
    def __init__(
        self,
        encoder: nn.Module,
        *,
        token_level: bool,
        num_labels: int,
        problem_type: str | None,
        head: str = "linear",
        pooling: str = "cls",
        dropout: float = 0.1,
        use_pooler: bool = False,
    ):
        super().__init__()
        if head not in HEADS:
            raise ValueError(f"head: unknown head {head!r}; use one of {', '.join(HEADS)}")
        if pooling not in (*POOLINGS, "mean"):  # mean: recipe option `pooling`
            raise ValueError(f"re_pooling: unknown {pooling!r}; use one of {', '.join(POOLINGS)}")
        if token_level and pooling != "cls":
            raise ValueError(f"re_pooling={pooling!r} applies to relation extraction only")
        if use_pooler and (token_level or pooling != "cls" or head != "cls_linear"):
            raise ValueError("the pretrained pooler feeds head: cls_linear with [CLS] pooling only")
        self.use_pooler = use_pooler
        self.prefix = getattr(encoder, "base_model_prefix", "") or "encoder"
        setattr(self, self.prefix, encoder)
        self.config = encoder.config
        self.token_level, self.problem_type = token_level, problem_type
        self.head, self.pooling, self.num_labels = head, pooling, num_labels
        hidden = int(self.config.hidden_size)
        if head == "bilstm":
            self.lstm = nn.LSTM(hidden, hidden // 2, batch_first=True, bidirectional=True)
            hidden = 2 * (hidden // 2)
        features = hidden * (1 if pooling in ("cls", "mean") else 2)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(features, num_labels)
        std = float(getattr(self.config, "initializer_range", 0.02))
        nn.init.normal_(self.classifier.weight, std=std)
        nn.init.zeros_(self.classifier.bias)

    @property
    def base_model(self) -> nn.Module:
        return getattr(self, self.prefix)

    def get_input_embeddings(self) -> nn.Module:
        return self.base_model.get_input_embeddings()

    def _bilstm(self, states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        lengths = mask.sum(-1).clamp(min=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(
            states, lengths, batch_first=True, enforce_sorted=False
        )
        out, _ = self.lstm(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(
            out, batch_first=True, total_length=states.shape[1]
        )
        return out

    def _pool(self, states, mask, entity_spans, entity_starts) -> torch.Tensor:
        if self.pooling in ("cls", "mean"):
            if self.head == "bilstm" or self.pooling == "mean":
                weights = mask.unsqueeze(-1).to(states.dtype)
                return (states * weights).sum(1) / weights.sum(1).clamp(min=1)
            return states[:, 0]
        if self.pooling == "entity_start":
            if entity_starts is None:
                raise ValueError("re_pooling=entity_start needs entity positions in the batch")
            rows = torch.arange(states.shape[0], device=states.device)
            return torch.cat([states[rows, entity_starts[:, k]] for k in (0, 1)], dim=-1)
        if entity_spans is None:
            raise ValueError(f"re_pooling={self.pooling} needs entity spans in the batch")
        positions = torch.arange(states.shape[1], device=states.device)[None, :]
        pooled = []
        for k in (0, 1):
            start, end = entity_spans[:, k, 0:1], entity_spans[:, k, 1:2]
            inside = ((positions >= start) & (positions < end)).unsqueeze(-1)
            if self.pooling == "max":
                lowest = torch.finfo(states.dtype).min
                best = states.masked_fill(~inside, lowest).amax(1)
                pooled.append(torch.where(inside.any(1), best, torch.zeros_like(best)))
            else:
                weights = inside.to(states.dtype)
                pooled.append((states * weights).sum(1) / weights.sum(1).clamp(min=1))
        return torch.cat(pooled, dim=-1)

    def forward(
        self,
        input_ids,
        attention_mask=None,
        token_type_ids=None,
        labels=None,
        entity_spans=None,
        entity_starts=None,
    ) -> HeadOutput:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            kwargs["token_type_ids"] = token_type_ids
        encoded = self.base_model(**kwargs)
        if self.use_pooler:  # the pretrained pooler's output: the pooled [CLS] state
            logits = self.classifier(self.dropout(encoded.pooler_output))
            return HeadOutput(self.loss(logits, labels) if labels is not None else None, logits)
        states = encoded.last_hidden_state
        if self.head == "bilstm":
            states = self._bilstm(states, attention_mask)
        if not self.token_level:
            states = self._pool(states, attention_mask, entity_spans, entity_starts)
        logits = self.classifier(self.dropout(states))
        return HeadOutput(self.loss(logits, labels) if labels is not None else None, logits)

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if self.problem_type == "regression":
            return nn.functional.mse_loss(logits.squeeze(-1), labels.squeeze(-1).to(logits.dtype))
        if self.problem_type == "multi_label_classification":
            return nn.functional.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
        return nn.functional.cross_entropy(
            logits.reshape(-1, self.num_labels), labels.reshape(-1), ignore_index=-100
        )
