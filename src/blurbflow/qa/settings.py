"""The window and decoding settings of a span task: its entry's `options` over these defaults.

BERT's SQuAD run used windows of 384 tokens, doc_stride 128 and questions of at most 64
tokens; at a shorter `max_length` both shrink to a quarter of it, so that every window keeps
room for its context (at 64 tokens: stride 16, questions 16).
"""

from __future__ import annotations

DEFAULTS = {
    "version": "2.0",  # "1.1": always answer; "2.0": "" when the null score wins
    "max_answer_length": 30,  # tokens (BERT's run_squad.py)
    "n_best": 20,
    "null_threshold": 0.0,
}
WINDOW_KEYS = ("doc_stride", "max_question_length")  # these change the encoded input


def span_settings(task_options: dict, max_length: int) -> dict:
    """Every setting of a span task: its entry's `task_options` (TaskSpec.options, not a
    cell's options) over the defaults."""
    quarter = max(1, int(max_length) // 4)
    settings = {
        **DEFAULTS,
        "doc_stride": min(128, quarter),
        "max_question_length": min(64, quarter),
        **{k: v for k, v in (task_options or {}).items() if k in (*DEFAULTS, *WINDOW_KEYS)},
    }
    if str(settings["version"]) not in ("1.1", "2.0"):
        raise ValueError(f"SQuAD version {settings['version']!r}: use '1.1' or '2.0'")
    settings["version"] = str(settings["version"])
    return settings
