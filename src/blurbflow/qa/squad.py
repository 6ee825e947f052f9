"""Reading SQuAD-format JSON (v1.1 and v2.0): `{"version", "data": [{"title", "paragraphs":
[{"context", "qas": [{"id", "question", "answers": [{"text", "answer_start"}],
"is_impossible"?}]}]}]}`. v2.0 marks unanswerable questions with `is_impossible: true` and an
empty `answers` list (their `plausible_answers` are ignored).

Each question becomes one example dict: id, title, question, context, answer_texts,
answer_starts, is_impossible. Every answer must lie at its `answer_start` in the context; a bad
record is a DataFormatError naming the file, the line of the question id and the fix.
"""

from __future__ import annotations

from pathlib import Path

from blurbflow.data.errors import DataFormatError
from blurbflow.data.parsers.common import line_of, read_json, read_text

FIX = "check that this is an original SQuAD-format file (v1.1 or v2.0) and fetch it again"


def _bad(path: Path, text: str, qid: str | None, problem: str, fix: str = FIX):
    line = line_of(text, f'"{qid}"') if qid else None
    return DataFormatError.at(path, line, problem, fix)


def _answers(path: Path, text: str, qid: str, context: str, qa: dict) -> tuple[list, list]:
    answers = qa.get("answers", [])
    if not isinstance(answers, list):
        raise _bad(path, text, qid, f"question {qid}: answers must be a list")
    texts, starts = [], []
    for answer in answers:
        if not isinstance(answer, dict):
            raise _bad(path, text, qid, f"question {qid}: an answer is not an object")
        value, start = answer.get("text"), answer.get("answer_start")
        if not isinstance(value, str) or not isinstance(start, int) or isinstance(start, bool):
            raise _bad(
                path, text, qid, f"question {qid}: an answer needs a text and an answer_start"
            )
        if context[start : start + len(value)] != value:
            raise _bad(
                path,
                text,
                qid,
                f"question {qid}: answer {value!r} is not at character {start} of its context "
                f"(found {context[start : start + len(value)]!r})",
            )
        texts.append(value)
        starts.append(start)
    return texts, starts


def read_squad(path: str | Path, source: str = "squad") -> list[dict]:
    """The questions of a SQuAD-format file, in file order (see the module docstring)."""
    path = Path(path)
    data = read_json(path, source)
    text = read_text(path, source)
    articles = data.get("data") if isinstance(data, dict) else None
    if not isinstance(articles, list):
        raise DataFormatError.at(path, 1, 'expected an object with a "data" list', FIX)
    examples: list[dict] = []
    seen: set[str] = set()
    for a_number, article in enumerate(articles, 1):
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            raise DataFormatError.at(path, None, f"article #{a_number} has no paragraphs list", FIX)
        title = str(article.get("title", ""))
        for paragraph in paragraphs:
            context = paragraph.get("context") if isinstance(paragraph, dict) else None
            qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
            if not isinstance(context, str) or not isinstance(qas, list):
                raise DataFormatError.at(
                    path,
                    None,
                    f"a paragraph of article #{a_number} ({title!r}) needs a "
                    "context string and a qas list",
                    FIX,
                )
            for qa in qas:
                qid = qa.get("id") if isinstance(qa, dict) else None
                if not isinstance(qid, str) or not qid:
                    raise DataFormatError.at(
                        path, None, f"a question of article {title!r} has no string id", FIX
                    )
                if qid in seen:
                    raise _bad(path, text, qid, f"question id {qid} occurs twice")
                seen.add(qid)
                question = qa.get("question")
                if not isinstance(question, str) or not question.strip():
                    raise _bad(path, text, qid, f"question {qid} has no question text")
                impossible = bool(qa.get("is_impossible", False))
                texts, starts = _answers(path, text, qid, context, qa)
                if impossible and texts:
                    raise _bad(path, text, qid, f"question {qid} is impossible but has answers")
                if not impossible and not texts:
                    raise _bad(path, text, qid, f"question {qid} has no answer")
                examples.append(
                    {
                        "id": qid,
                        "title": title,
                        "question": question.strip(),
                        "context": context,
                        "answer_texts": texts,
                        "answer_starts": starts,
                        "is_impossible": impossible,
                    }
                )
    return examples
