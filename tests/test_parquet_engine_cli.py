"""`cltr propensities estimate --log LOG.parquet`: harvest on a Parquet log read chunk by
chunk where it is computed gives the estimate of the same log imported."""

import numpy as np
import pytest


@pytest.mark.slow  # 6 s of CLI stages; its fast twin below checks the option's wiring
def test_log_on_disk_gives_the_estimate_of_the_imported_log(tmp_path, invoke):
    pytest.importorskip("pyarrow")
    from cltr.pipeline.workspace import Workspace

    invoke("prepare", "synthetic", "--queries", "30", workdir=tmp_path)
    invoke("simulate", "--passes", "6", "--rankers", "2", workdir=tmp_path)
    # the simulated log's training split as a Parquet table: the same impressions (export -> import
    # is the identity, tests/pipeline), so the same estimate
    invoke("clicks", "export", str(tmp_path / "train.parquet"), workdir=tmp_path)
    workspace = Workspace(tmp_path)
    flags = ["--bootstrap", "10", "--max-rank", "5"]
    invoke("propensities", "estimate", *flags, workdir=tmp_path)
    want = workspace.load("synthetic", "propensities", workspace.current("synthetic")["propensities"])
    out = invoke(
        "propensities", "estimate", *flags, "--log", str(tmp_path / "train.parquet"), "--chunks", "3", workdir=tmp_path
    ).output
    key = out.split()[1].rstrip(":")
    got = workspace.load("synthetic", "propensities", key)
    assert got.info["chunks"] == 3 and got.config["clicks"] is None and "--propensities " + key in out
    assert workspace.current("synthetic")["propensities"] == want.key  # not made current
    for name in ("propensity", "low", "high"):
        np.testing.assert_allclose(got.arrays[name], want.arrays[name], rtol=0, atol=1e-8)
    again = invoke(
        "propensities", "estimate", *flags, "--log", str(tmp_path / "train.parquet"), "--chunks", "3", workdir=tmp_path
    ).output
    assert f"{key} (reused)" in again


def test_log_goes_with_harvest_and_says_so(tmp_path, invoke):
    log = tmp_path / "train.parquet"
    log.write_bytes(b"PAR1")
    out = invoke("propensities", "estimate", "--method", "em", "--log", str(log), workdir=tmp_path, expect=2).output
    # left out, em would read the workspace's log: said before any other option's refusal
    assert "--log goes with --method harvest" in " ".join(out.split())
    help_text = " ".join(invoke("propensities", "estimate", "--help").output.split())
    assert "--log PARQUET" in help_text and "never holds the log" in help_text
