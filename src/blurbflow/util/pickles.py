"""Unpickling that runs nothing: `PackageUnpickler` resolves only this package's data classes
(dataclasses, enums, the unset-option marker) and pathlib's paths, never a function or another
module's class, so a planted or damaged pickle is refused instead of run (the job cache's file;
a seed process's payload). tests/reliability/test_security.py holds every unpickler to this."""

from __future__ import annotations

import dataclasses
import enum
import importlib
import pathlib
import pickle

PATHS = {"PosixPath": pathlib.PosixPath, "PurePosixPath": pathlib.PurePosixPath}


class PackageUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if module == "pathlib" and name in PATHS:
            return PATHS[name]
        found = None
        if module == "blurbflow" or module.startswith("blurbflow."):  # nothing else is imported
            found = getattr(importlib.import_module(module), name, None)
        if isinstance(found, type) and (
            dataclasses.is_dataclass(found) or issubclass(found, enum.Enum) or name == "_Unset"
        ):
            return found
        raise pickle.UnpicklingError(f"{module}.{name} is not one of blurbflow's data classes")
