"""The config error every check raises (blurbflow.config.validate, blurbflow.tasks.custom), and the
hint it gives for a misspelt name."""

import difflib


class ConfigError(ValueError):
    """A config problem, reported with the key path that is wrong and how to fix it."""


def did_you_mean(name: str, known) -> str:
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
