"""What a task and a raw source are: keyword-only records, so an entry reads as a description."""

from __future__ import annotations

from dataclasses import dataclass, field

from blurbflow.tasks.types import TaskType, get_type


@dataclass(frozen=True, kw_only=True)
class Source:
    """A raw source: fetched (or generated) into `resources/raw/{name}/`, the files as they are
    after download and archive extraction. Parsers read only from there."""

    name: str
    urls: tuple[str, ...] = ()  # original URLs; each is fetched into resources/raw/{name}/
    archive: bool = False  # extract each fetched file into the source folder
    manual: str | None = None  # manual download: where to get it (BioASQ needs registration)
    manual_files: tuple[str, ...] = ()  # archives the user puts into the manual folder
    nested: tuple[str, ...] = ()  # globs of archives inside archives, extracted in place
    # What the parsers read: glob -> sha256 over its sorted "path  sha256" lines
    # (blurbflow.data.fetch.tree_digest). Empty where the files were not obtainable to pin.
    checksums: dict[str, str] = field(default_factory=dict)
    # A generator in blurbflow.data.generate writes synthetic files in this layout (demo, tests).
    # False: real downloads only; `data.source: generated` then fails naming the task.
    generated: bool = True


@dataclass(frozen=True, kw_only=True)
class TaskSpec:
    """One task: its type, metric, labels, input length, where its data comes from and how it is
    parsed, and its typical training-set size (runtime estimates before any data exists)."""

    name: str
    type: str  # a key of blurbflow.tasks.types.TYPES
    labels: tuple[str, ...] = ()  # label vocabulary; empty for regression
    metric: str = ""  # a key of blurbflow.metrics.METRICS; empty: the type's default
    max_length: int = 512  # Gu et al.'s input length in sub-word tokens
    raw: tuple[Source, ...] = ()  # raw sources the parser reads
    parser: str = ""  # a key of blurbflow.data.parsers.PARSERS
    size: int | None = None  # training instances; None: read from the prepared stats.json
    negative_label: str | None = None  # excluded from micro F1 (ChemProt, DDI) or GAD's negative
    seeds: int = 5  # Gu et al.: 10 for the small, unstable tasks
    options: dict = field(default_factory=dict)  # parser options (e.g. GAD's train line count)
    folds: int = 0  # cross-validation partitions the source publishes (GAD, EU-ADR); 0: none
    data: dict = field(default_factory=dict)  # a user task's data section of the config
    builtin: bool = True
    # bumped when this entry's prepared files change (labels, options): blurbflow.stage_versions
    version: int = 1

    def __post_init__(self) -> None:
        if not self.metric:
            object.__setattr__(self, "metric", self.kind.metrics[0])

    @property
    def kind(self) -> TaskType:
        """The task type's behaviour (encoding, head, decoding, metrics, stats)."""
        return get_type(self.type)

    @property
    def sources(self) -> tuple[str, ...]:
        """Names of the raw sources (folders under resources/raw/)."""
        return tuple(source.name for source in self.raw)
