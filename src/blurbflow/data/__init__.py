"""Data layer: synthetic raw sources (`generate`), raw-file parsers (`parsers`) and the
`prepare` step that writes the uniform parquet schema of docs/data.md.

Submodules are imported lazily by callers (`from blurbflow.data.prepare import prepare_task`)
so that importing one piece never pulls in the others.
"""

from blurbflow.data.errors import DataFormatError

__all__ = ["DataFormatError"]
