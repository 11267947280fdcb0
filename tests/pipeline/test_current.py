"""What is current in a workspace is explicit, and names are names (issue "Nothing
misleading"): the default ``--dataset`` is the dataset prepared last, an imported log is
never replaced by a simulated one, every hint is a command that works as printed, and a
dataset, spec or key is never a path."""

import re
import shlex

import pytest

from cltr.pipeline.experiments import load_spec
from cltr.pipeline.workspace import Workspace, check_name


@pytest.mark.parametrize(
    "name", ["../../escape", "a/b", "..", "a..b", "/abs", "", ".hidden", "a\\b", "x" * 101, "sp ace"]
)
def test_names_with_separators_or_dots_are_refused(name):
    with pytest.raises(ValueError, match="is not a valid name"):
        check_name(name, "dataset")


@pytest.mark.parametrize("name", ["synthetic", "letor-fold2", "MQ2008_1", "v1.2", "a" * 100])
def test_names_in_the_documented_set_pass(name):
    assert check_name(name) == name


def test_a_dataset_name_cannot_write_outside_the_workspace(tmp_path, invoke):
    work = tmp_path / "a" / "b" / "work"
    out = invoke("prepare", "synthetic", "--queries", "20", "--name", "../../escape", workdir=work, expect=2).output
    assert "is not a valid name" in out
    assert not list(tmp_path.rglob("escape*"))
    out = invoke("train", "svm-rank", "--dataset", "../x", workdir=work, expect=2).output
    assert "is not a valid name" in out
    with pytest.raises(ValueError, match="is not a valid name"):
        Workspace(work).save_dataset("../../escape", None)
    with pytest.raises(ValueError, match="is not a valid name"):
        Workspace(work).load("synthetic", "models", "../../../etc")


def test_a_spec_dataset_cannot_be_a_path(tmp_path, tiny_spec_text):
    text = re.sub(r"^dataset\s*=.*$", 'dataset = "../../x"', tiny_spec_text, flags=re.M)
    if 'dataset = "../../x"' not in text:
        text = text.replace("kind =", 'dataset = "../../x"\nkind =', 1)
    name = re.search(r'^name\s*=\s*"([^"]+)"', text, flags=re.M).group(1)
    (tmp_path / f"{name}.toml").write_text(text)
    with pytest.raises(ValueError, match="dataset '../../x' is not a valid name"):
        load_spec(name, tmp_path)


def test_the_default_dataset_is_the_one_prepared_last(tmp_path, invoke):
    invoke("prepare", "synthetic", "--queries", "40", "--name", "first", workdir=tmp_path)
    invoke("prepare", "synthetic", "--queries", "40", "--seed", "2", "--name", "second", workdir=tmp_path)
    out = invoke("produce", "--fraction", "0.1", workdir=tmp_path).output
    assert "'second'" in out and not (tmp_path / "synthetic").exists()
    assert Workspace(tmp_path).current("second").get("production")
    assert not Workspace(tmp_path).current("first").get("production")


def test_a_missing_vali_import_is_an_error_never_a_simulated_substitute(tmp_path, invoke):
    invoke("prepare", "synthetic", "--queries", "60", "--name", "mine", workdir=tmp_path)
    invoke("simulate", "--passes", "5", workdir=tmp_path)
    log = tmp_path / "train.tsv"
    invoke("clicks", "export", log, "--split", "train", workdir=tmp_path)
    # a fresh dataset of the same data: the user's only log is the train import
    invoke("prepare", "synthetic", "--queries", "60", "--name", "users", workdir=tmp_path)
    out = invoke("clicks", "import", log, "--split", "train", workdir=tmp_path).output
    hint = re.search(r"`cltr (clicks import LOG [^`]+)`", out).group(1)
    assert "--dataset users --split vali" in hint
    for command in (
        ["train", "svm-propdcg", "-C", "1"],
        ["propensities", "estimate"],
        ["clicks", "export", tmp_path / "x.tsv"],
    ):
        out = invoke(*command, workdir=tmp_path, expect=1).output
        assert "will not simulate clicks in place of a log you imported" in out, out
        assert "making one with default settings" not in out
    assert not Workspace(tmp_path).keys("users", "clicks")
    # the hint works as printed (LOG filled in), and then training uses the imported log
    vali = tmp_path / "vali.tsv"
    invoke("clicks", "export", vali, "--split", "vali", "--dataset", "mine", workdir=tmp_path)
    args = shlex.split(hint.replace("LOG", str(vali)))
    out = invoke(*args, workdir=tmp_path).output
    assert "click log" in out
    out = invoke("train", "svm-proprank", "-C", "1", workdir=tmp_path).output
    assert "making one with default settings" not in out
    model = Workspace(tmp_path).load("users", "models", Workspace(tmp_path).current("users")["models"])
    assert "imports" in Workspace(tmp_path).load("users", "clicks", model.config["clicks"]).config
    out = invoke("evaluate", "--production", workdir=tmp_path, expect=1).output
    assert "was imported" in out and "cltr evaluate --run" in out
