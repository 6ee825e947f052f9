"""The config error every check raises (blurbflow.validate, blurbflow.tasks.custom)."""


class ConfigError(ValueError):
    """A config problem, reported with the key path that is wrong and how to fix it."""
