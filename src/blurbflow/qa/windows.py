"""Long contexts as overlapping windows ("features"), with a fast tokenizer's overflow.

Each window is `[CLS] question [SEP] context part [SEP]` of at most `max_length` tokens;
consecutive windows of one example share `doc_stride` context tokens (the tokenizer's `stride`,
as in transformers' run_qa.py; Google's run_squad.py calls the step between window starts
`doc_stride` instead). A question longer than `max_question_length` tokens is cut there (BERT's
`max_query_length`), so that every window keeps room for its context.

Training labels per window: the token positions of the first gold answer's first and last
token when the answer lies wholly inside the window's context part; otherwise, and for
unanswerable questions, both point at the CLS token (index 0), SQuAD 2.0's "no answer".
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Windows:
    """Model inputs and bookkeeping of all windows, in example order."""

    input_ids: list[list[int]] = field(default_factory=list)
    attention_mask: list[list[int]] = field(default_factory=list)
    token_type_ids: list[list[int]] | None = None
    example_index: list[int] = field(default_factory=list)  # index into the examples
    # per token: (start, end) character span in the context, None outside the context part
    offsets: list[list[tuple[int, int] | None]] = field(default_factory=list)
    start_positions: list[int] = field(default_factory=list)
    end_positions: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.input_ids)

    def of_example(self, index: int) -> list[int]:
        return [w for w, e in enumerate(self.example_index) if e == index]


def _cut_questions(tokenizer, questions: list[str], max_question_length: int) -> list[str]:
    encoded = tokenizer(questions, add_special_tokens=False, return_offsets_mapping=True)
    return [
        q if len(offsets) <= max_question_length else q[: offsets[max_question_length - 1][1]]
        for q, offsets in zip(questions, encoded["offset_mapping"], strict=True)
    ]


def _check(tokenizer, max_length: int, doc_stride: int, max_question_length: int) -> None:
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"{type(tokenizer).__name__} is not a fast tokenizer: windows need its offset "
            "mapping and overflow; load the model's tokenizer.json (or convert it with "
            "transformers, which needs sentencepiece for SentencePiece models)"
        )
    specials = tokenizer.num_special_tokens_to_add(pair=True)
    room = max_length - specials - max_question_length
    if doc_stride >= room:
        raise ValueError(
            f"doc_stride={doc_stride} must be smaller than the context room of a window "
            f"({room} = max_length {max_length} - {specials} special tokens - "
            f"max_question_length {max_question_length}); lower doc_stride or raise max_length"
        )


def _label(offsets, sequence_ids, example: dict, cls_index: int) -> tuple[int, int]:
    if example.get("is_impossible") or not example.get("answer_texts"):
        return cls_index, cls_index
    start_char = example["answer_starts"][0]
    end_char = start_char + len(example["answer_texts"][0])
    context = [i for i, s in enumerate(sequence_ids) if s == 1]
    if not context:
        return cls_index, cls_index
    first, last = context[0], context[-1]
    if offsets[first][0] > start_char or offsets[last][1] < end_char:
        return cls_index, cls_index  # the answer is (partly) outside this window
    start = first
    while start <= last and offsets[start][1] <= start_char:
        start += 1
    end = last
    while end >= first and offsets[end][0] >= end_char:
        end -= 1
    return start, end


def make_windows(
    tokenizer,
    examples: list[dict],
    max_length: int = 384,
    doc_stride: int = 128,
    max_question_length: int = 64,
) -> Windows:
    """Windows of `examples` (dicts with question, context and, for training, answer_texts /
    answer_starts / is_impossible as `blurbflow.data.parsers.squad.read_squad` gives them); no
    padding (the batcher pads)."""
    _check(tokenizer, max_length, doc_stride, max_question_length)
    if not examples:
        return Windows()
    # The tokenizer's padding side does not matter: windows are encoded unpadded (the question
    # first) and the batcher pads on the right; decoder tokenizers (Llama, Mistral) default to
    # left padding, which is for generation.
    questions = _cut_questions(
        tokenizer, [e["question"].lstrip() for e in examples], max_question_length
    )
    encoded = tokenizer(
        questions,
        [e["context"] for e in examples],
        truncation="only_second",
        max_length=max_length,
        stride=doc_stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding=False,
    )
    windows = Windows(token_type_ids=[] if "token_type_ids" in encoded else None)
    for w, ids in enumerate(encoded["input_ids"]):
        index = encoded["overflow_to_sample_mapping"][w]
        sequence_ids = encoded.sequence_ids(w)
        offsets = encoded["offset_mapping"][w]
        cls_index = ids.index(tokenizer.cls_token_id) if tokenizer.cls_token_id in ids else 0
        start, end = _label(offsets, sequence_ids, examples[index], cls_index)
        windows.input_ids.append(ids)
        windows.attention_mask.append(encoded["attention_mask"][w])
        if windows.token_type_ids is not None:
            windows.token_type_ids.append(encoded["token_type_ids"][w])
        windows.example_index.append(index)
        windows.offsets.append(
            [tuple(o) if s == 1 else None for o, s in zip(offsets, sequence_ids, strict=True)]
        )
        windows.start_positions.append(start)
        windows.end_positions.append(end)
    return windows
