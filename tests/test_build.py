"""The demo model's WordPiece tokenizer: the same corpus gives the same vocabulary every time
(the `tokenizers` trainer alone does not: huggingface/tokenizers#1794)."""

from __future__ import annotations

import random

from blurbflow.models.build import SPECIAL_TOKENS, train_tokenizer


def corpus() -> list[str]:
    rng = random.Random(0)
    words = ["".join(rng.choices("abcdefghijklmnoprstu", k=rng.randint(2, 9))) for _ in range(300)]
    return [" ".join(rng.choices(words, k=12)) + "." for _ in range(400)]


def test_the_same_corpus_trains_the_same_vocabulary_every_time():
    texts = corpus()
    vocabularies = {
        tuple(sorted(train_tokenizer(texts, 300).get_vocab().items())) for _ in range(6)
    }
    assert len(vocabularies) == 1


def test_only_the_bert_tokens_are_special_and_text_round_trips():
    tokenizer = train_tokenizer(corpus(), 300)
    assert len(tokenizer) == 300 and set(tokenizer.get_added_vocab()) == set(SPECIAL_TOKENS)
    assert "##a" not in tokenizer.tokenize("##a")  # a "##x" piece is no added token
    ids = tokenizer("Ducks bite Toads STARE.")["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids)[:: len(ids) - 1] == ["[CLS]", "[SEP]"]
    assert tokenizer.decode(ids, skip_special_tokens=True) == "ducks bite toads stare."
