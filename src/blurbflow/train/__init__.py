"""Fine-tuning cells: encoding, batching, optimisation and the cell loop."""


class Preempted(RuntimeError):
    """SIGTERM arrived: the state is saved and the cell exits non-zero so that it is retried.
    Defined here, free of torch, so the CLI can catch it without importing the engine."""


class CellsFailed(RuntimeError):
    """Some seeds of a job raised; their result.json (status failed) says why."""


class JobLocked(RuntimeError):
    """Another live process runs this job (blurbflow.train.lock); the message names it."""
