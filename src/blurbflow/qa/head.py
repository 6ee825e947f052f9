"""The span head of extractive QA: one linear layer from each token's hidden state to a start
and an end logit (BERT's SQuAD head), on any transformers `AutoModel` encoder.

Padding positions get the lowest logit so that neither the loss nor decoding can pick them.
The loss is the mean of the start and end cross-entropies; gold positions outside the input
(a truncated window) are clamped to the ignore index, as transformers' QA models do.
"""

from __future__ import annotations

import torch
from torch import nn


def span_loss(
    start_logits: torch.Tensor,
    end_logits: torch.Tensor,
    start_positions: torch.Tensor,
    end_positions: torch.Tensor,
) -> torch.Tensor:
    length = start_logits.size(1)
    start = start_positions.clamp(0, length)
    end = end_positions.clamp(0, length)
    loss = nn.CrossEntropyLoss(ignore_index=length)
    return (loss(start_logits, start) + loss(end_logits, end)) / 2


class SpanHead(nn.Module):
    """hidden states (batch, tokens, hidden) -> start and end logits (batch, tokens)."""

    def __init__(self, hidden_size: int, dropout: float = 0.0, initializer_range: float = 0.02):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.qa_outputs = nn.Linear(hidden_size, 2)
        nn.init.normal_(self.qa_outputs.weight, std=initializer_range)
        nn.init.zeros_(self.qa_outputs.bias)

    def forward(
        self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.qa_outputs(self.dropout(hidden_states))
        start, end = logits[..., 0], logits[..., 1]
        if attention_mask is not None:
            lowest = torch.finfo(logits.dtype).min
            start = start.masked_fill(attention_mask == 0, lowest)
            end = end.masked_fill(attention_mask == 0, lowest)
        return start, end


class SpanOutput(dict):
    """{"start_logits", "end_logits"[, "loss"]} that the training loop also reads as
    `.loss` and `.logits` ((batch, tokens, 2): start and end stacked), as transformers' outputs."""

    @property
    def loss(self) -> torch.Tensor | None:
        return self.get("loss")

    @property
    def logits(self) -> torch.Tensor:
        return torch.stack([self["start_logits"], self["end_logits"]], dim=-1)


class SpanModel(nn.Module):
    """An `AutoModel` encoder with a `SpanHead`; forward returns a `SpanOutput` with the loss
    when start/end positions are given (or `labels`: (batch, 2) start and end)."""

    def __init__(self, encoder: nn.Module, dropout: float | None = None):
        super().__init__()
        self.encoder = encoder
        config = encoder.config
        if dropout is None:
            dropout = float(getattr(config, "hidden_dropout_prob", 0.1))
        self.config = config
        self.head = SpanHead(
            config.hidden_size, dropout, float(getattr(config, "initializer_range", 0.02))
        )

    @property
    def base_model(self) -> nn.Module:  # layer surgery finds the encoder through this
        return self.encoder.base_model

    def get_input_embeddings(self) -> nn.Module:
        return self.encoder.get_input_embeddings()

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        start_positions: torch.Tensor | None = None,
        end_positions: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
    ) -> SpanOutput:
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        hidden = self.encoder(**inputs).last_hidden_state
        start, end = self.head(hidden, attention_mask)
        out = SpanOutput(start_logits=start, end_logits=end)
        if labels is not None:
            start_positions, end_positions = labels[:, 0], labels[:, 1]
        if start_positions is not None and end_positions is not None:
            out["loss"] = span_loss(start, end, start_positions, end_positions)
        return out
