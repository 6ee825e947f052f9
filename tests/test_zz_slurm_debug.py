from pathlib import Path

import pytest

from test_slurm import *  # noqa


@pytest.fixture(scope="session")
def demo():
    return Path("/tmp/lay")
