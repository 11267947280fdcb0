"""`cltr propensities estimate --method em` on the engine (--chunks, --backend): the chunked
EM gives the in-process estimate, and the relevance models that cannot run chunked are refused."""

import numpy as np


def test_em_chunks_on_the_command_line_give_the_in_process_estimate(tmp_path, invoke):
    from cltr.pipeline.workspace import Workspace

    invoke("prepare", "synthetic", "--queries", "20", workdir=tmp_path)
    invoke("simulate", "--passes", "3", workdir=tmp_path)
    workspace = Workspace(tmp_path)
    estimates = []
    for extra in ([], ["--chunks", "3"]):
        invoke(
            "propensities",
            "estimate",
            "--method",
            "em",
            "--bootstrap",
            "2",
            "--max-rank",
            "4",
            *extra,
            workdir=tmp_path,
        )
        estimates.append(workspace.load("synthetic", "propensities", workspace.current("synthetic")["propensities"]))
    plain, chunked = estimates
    assert chunked.info["chunks"] == 3 and "chunks" not in plain.info  # two estimates, not one reused
    assert chunked.config["chunks"] == 3 and "chunks" not in plain.config
    for name in ("propensity", "low", "high"):
        np.testing.assert_allclose(chunked.arrays[name], plain.arrays[name], rtol=0, atol=1e-8)
    out = invoke(
        "propensities",
        "estimate",
        "--method",
        "em",
        "--relevance-model",
        "classes",
        "--chunks",
        "2",
        workdir=tmp_path,
        expect=2,
    ).output
    assert "runs regression EM with --relevance-model logistic only" in " ".join(out.split())


def test_the_engine_options_say_em_takes_them():
    from cltr.estimators import get

    assert {"backend", "scheduler", "chunks"} <= set(get("em").options().to_dict())
