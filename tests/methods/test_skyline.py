"""The skyline: the linear Ranking SVM on the full-information training set (C on
validation labels), an upper reference for every click learner."""

from cltr.methods import train


def test_skyline_beats_every_click_trained_linear_model(noise_free_clicks, avg_dcg_of):
    dataset, _, data, test_relevant = noise_free_clicks
    skyline, info = train("skyline", data, {})
    assert set(info["selection"][0]) >= {"C", "validation_label_avg_dcg"}
    assert "validation_snips_avg_dcg" not in info["selection"][0]
    assert info["validation_snips_avg_dcg"] == data.estimate(skyline)  # reported, not selected on
    sky = avg_dcg_of(skyline, dataset, test_relevant)
    for method in ("svm-rank", "svm-proprank"):
        scorer, _ = train(method, data, {})
        assert sky > avg_dcg_of(scorer, dataset, test_relevant), method
