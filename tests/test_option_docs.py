"""One place per option: every field of the cell's options carries its help, and the
recipe options' schema (workflow/schemas/config.schema.yaml) and config/README.md's list are
what `python -m blurbflow.docgen` generates from that metadata; the choices that modules keep
(`heads.HEADS`, `batching.BATCHINGS`, `InputOptions.VALUES`) are the same metadata."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jsonschema
import yaml

from blurbflow.docgen.__main__ import REFERENCE, SCHEMA, generated, main
from blurbflow.docgen.options import option_schema
from blurbflow.options import UNSET, CellOptions, InputOptions, choices, defaults, recipe_options

REPO = Path(__file__).resolve().parents[1]


def _schema() -> dict:
    return yaml.safe_load((REPO / SCHEMA).read_text())


def test_every_field_has_help_and_every_recipe_option_its_schema():
    for cls in (CellOptions, InputOptions):
        for f in dataclasses.fields(cls):
            assert f.metadata.get("help"), f"{cls.__name__}.{f.name}: no help in its metadata"
    options = recipe_options()
    assert len(options) == 39
    for name, about in options.items():
        assert about["help"] and (about.get("schema") or about.get("choices")), name


def test_the_schema_and_the_metadata_agree():
    schema = _schema()
    properties = schema["$defs"]["options"]["properties"]
    options = recipe_options()
    assert list(properties) == list(options)  # names, in order
    assert set(defaults()) <= set(properties)
    for name, about in options.items():
        node = properties[name]
        assert node == option_schema(about), name  # types, enum, description
        assert "default" not in node  # Snakemake's validate would write it into every recipe
        if about.get("choices"):
            assert node["enum"] == list(about["choices"]), name
        default = about.get("default", UNSET)
        if default is not UNSET:  # the default is a value the schema accepts, and is stated
            jsonschema.validate(default, {**node, "$defs": schema["$defs"]})
            assert "(default: " in node["description"], name


def test_the_committed_schema_is_the_generated_text():
    want = generated(REPO, [SCHEMA])
    assert (REPO / SCHEMA).read_text() == want[SCHEMA], "run `python -m blurbflow.docgen`"


def test_the_modules_choices_are_the_metadata():
    from blurbflow.models.heads import HEADS, POOLINGS
    from blurbflow.train.batching import BATCHINGS

    assert HEADS == choices("head") == ("linear", "cls_linear", "bilstm")
    assert POOLINGS == choices("re_pooling") == ("cls", "max", "mention", "entity_start")
    assert BATCHINGS == choices("batching") == ("bucketed", "random")
    assert InputOptions.VALUES == {
        "segment_ids": ("pair", "single"),
        "tagging": ("BIO", "BIOUL", "IO"),
        "re_input": ("dummify", "markers", "original"),
    }


def test_the_generator_checks_and_rewrites(tmp_path, capsys):
    only = ["--only", SCHEMA, REFERENCE, "--root", str(tmp_path)]
    (tmp_path / SCHEMA).parent.mkdir(parents=True)
    (tmp_path / SCHEMA).write_text((REPO / SCHEMA).read_text())
    assert main(["--check", *only]) == 1  # no config/README.md there
    assert "config/README.md" in capsys.readouterr().err
    assert main(only) == 0
    assert main(["--check", *only]) == 0
    doc = tmp_path / REFERENCE
    doc.write_text(doc.read_text().replace("- `dropout` (", "- `drop_out` ("))
    assert main(["--check", *only]) == 1
