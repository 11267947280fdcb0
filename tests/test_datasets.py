"""Dataset loaders as the registry (``cltr.datasets``) gives them: ``api.load_dataset`` is
what ``cltr prepare`` stores, path and required options are checked, each loader's default
passes are recorded, and records written before cltr recorded them are read by name."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from cltr import api, datasets
from cltr.core.queries import default_passes
from cltr.data.loaders import load_letor
from cltr.data.store import dataset_arrays, dataset_fingerprint
from cltr.options import Options, option
from cltr.pipeline.workspace import Workspace

DOCS = Path(__file__).resolve().parents[1] / "docs"


def fingerprint(dataset) -> str:
    return dataset_fingerprint(dataset_arrays(dataset))


def test_load_dataset_is_what_prepare_stores(invoke, tmp_path, make_letor_tree):
    invoke("prepare", "synthetic", "--queries", "20", "--seed", "4", "--dcg-log", "2", "--name", "s", workdir=tmp_path)
    root = make_letor_tree(tmp_path / "MQ2008", fold=2)
    invoke("prepare", "letor", "--mq2008", root, "--fold", "2", "--relevant-from", "1", workdir=tmp_path)
    space = Workspace(tmp_path)
    for name, told in (
        ("s", api.load_dataset("synthetic", n_queries=20, seed=4, name="s", dcg_log="2")),
        ("letor", api.load_dataset("letor", mq2008=root, fold=2, relevant_from=1)),
    ):
        stored, record = space.load_dataset(name)
        assert fingerprint(told) == record["fingerprint"] == fingerprint(stored)
        assert (told.relevant_from, told.dcg_base) == (record["relevant_from"], record["dcg_base"])
        assert json.loads(json.dumps(told.meta)) == record["meta"]
    assert space.load_dataset("s")[0].dcg_base == 2.0 and space.load_dataset("letor")[0].dcg_base == math.e
    # the loader adds only its convention to what the reading function gives
    raw = load_letor(root, fold=2, relevant_from=1)
    assert fingerprint(raw) == space.dataset_record("letor")["fingerprint"]


def test_options_name_what_is_wrong(tmp_path):
    with pytest.raises(ValueError, match="options of loader letor: mq2008 must be given"):
        api.load_dataset("letor", fold=2)
    with pytest.raises(ValueError, match="mq2008 must be the path of an existing directory, found '.*nowhere'"):
        api.load_dataset("letor", mq2008=tmp_path / "nowhere")
    (tmp_path / "a.txt").write_text("0 qid:1 1:1\n")
    with pytest.raises(ValueError, match="train must be the path of an existing file, found '.*'"):
        api.load_dataset("svmlight", train=tmp_path, vali=tmp_path / "a.txt", test=tmp_path / "a.txt")
    with pytest.raises(
        ValueError, match="unknown dataset loader 'lettor'; known: baidu-ultr, letor, svmlight, synthetic, yahoo"
    ):
        api.load_dataset("lettor")
    with pytest.raises(ValueError, match="dcg_log must be one of e, 2, found '10'"):
        api.load_dataset("synthetic", n_queries=10, dcg_log="10")


def test_path_and_required_options():
    @dataclasses.dataclass(frozen=True)
    class Toy(Options):
        where: str = option(None, "A directory.", path="dir", required=True)
        size: int = option(1, "A size.")

    fields = {f.name: f for f in Toy.option_fields()}
    here = Path(__file__).parent
    assert Toy.from_dict({"where": here}).where == str(here)  # a path-like, as os.fspath gives it
    assert Toy.from_dict({"where": here}).to_dict() == {"where": str(here), "size": 1}
    with pytest.raises(ValueError, match="toy: where must be given"):
        Toy.from_dict({"size": 2}, where="toy")
    with pytest.raises(ValueError, match="where must be the path of an existing directory"):
        Toy.from_dict({"where": Path(__file__)})
    with pytest.raises(ValueError, match="path must be 'file' or 'dir'"):
        option(None, "x", path="folder")
    hooks_spec = importlib.util.spec_from_file_location("cltr_docs_hooks", DOCS / "hooks" / "registries.py")
    hooks = importlib.util.module_from_spec(hooks_spec)
    hooks_spec.loader.exec_module(hooks)
    assert hooks.options_table(Toy).splitlines()[2] == (
        "| `where` | `--where` | the path of an existing directory | `required` | A directory. |"
    )
    assert fields["size"].spec.path is None and not fields["size"].spec.required
    # the reference page lists every loader with every option
    page = hooks.expand((DOCS / "reference" / "datasets.md").read_text(encoding="utf-8"))
    for name, loader in datasets.loaders().items():
        assert f"## `{name}`" in page and f"`cltr prepare {name}`" in page
        for field in loader.options.option_fields():
            assert f"| `{field.name}` | `{field.cli_name}` |" in page, f"{name}: {field.name} not documented"


def test_default_passes_are_the_loaders_and_old_records_are_read_by_name():
    assert datasets.get("letor").passes("mine") == 100 and datasets.get("yahoo").passes("mine") == 10
    # loaders declaring none: by the name, as cltr read every record before loaders recorded it
    assert datasets.get("svmlight").passes("yahoo-small") == 10 and datasets.get("svmlight").passes("sv") == 100
    small = api.load_dataset("synthetic", n_queries=10, name="yahoo-like")
    assert small.meta["default_passes"] == 10 and default_passes("yahoo-like", small.meta) == 10
    assert api.load_dataset("synthetic", n_queries=10, name="yahoo-like").meta == small.meta
    # a record without default_passes (an older cltr's): 10 for a name starting with yahoo, else 100
    assert default_passes("yahoo", {}) == 10 and default_passes("letor", {}) == 100
    assert default_passes("yahoo", {"default_passes": 7}) == 7
    assert np.array_equal(small.train.X, api.load_dataset("synthetic", n_queries=10).train.X)
