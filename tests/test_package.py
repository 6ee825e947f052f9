"""The basics of a real package: licence, citation, changelog and one version everywhere."""

import re
import tomllib

import yaml

from workflow_helpers import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]


def test_the_licence_is_the_one_pyproject_declares():
    assert PYPROJECT["project"]["license"] == "MIT"
    assert (REPO / "LICENSE").read_text().startswith("MIT License")


def test_citation_names_this_version_and_the_four_protocols():
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["version"] == VERSION
    dois = {ref["doi"] for ref in citation["references"]}
    assert dois == {
        "10.1145/3458754",  # Gu et al. 2021
        "10.1016/j.patter.2023.100729",  # Tinn et al. 2023
        "10.18653/v1/2020.clinicalnlp-1.17",  # Lewis et al. 2020 (Bio-LM)
        "10.18653/v1/2021.bionlp-1.24",  # Alrowili & Vijay-Shanker 2021 (BioM-Transformers)
    }


def test_the_changelog_starts_with_this_version():
    """Its first version is this one; an `Unreleased` section may come before it."""
    headings = re.findall(r"^## (\S+)", (REPO / "CHANGELOG.md").read_text(), re.MULTILINE)
    versions = headings[1:] if headings[:1] == ["Unreleased"] else headings
    assert versions and versions[0] == VERSION
