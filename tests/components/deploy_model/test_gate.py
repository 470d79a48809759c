"""The deploy gate on real models: the demo model and an untrained one, measured on the same
eval split."""

import pytest

from tfkfp.components.deploy_model.errors import GateInputError
from tfkfp.components.deploy_model.gate import check_options, gate


def test_a_worse_model_is_kept_out(demo_model, untrained_model, demo_dataset):
    decision = gate(untrained_model, demo_dataset, baseline_uri=demo_model)
    assert not decision.deploy
    assert decision.candidate < decision.baseline - 0.3
    assert decision.metrics()["deploy"] == 0.0
    assert decision.reason().startswith("keep the serving model: candidate accuracy")


def test_a_better_or_equal_model_goes_out(demo_model, untrained_model, demo_dataset):
    assert gate(demo_model, demo_dataset, baseline_uri=untrained_model).deploy
    same = gate(demo_model, demo_dataset, baseline_uri=demo_model)
    assert same.deploy and same.candidate == same.baseline


def test_the_margin_and_the_direction_follow_the_metric(demo_model, untrained_model,
                                                        demo_dataset):
    loss = gate(untrained_model, demo_dataset, baseline_uri=demo_model, metric="log_loss")
    assert not loss.deploy and loss.candidate > loss.baseline
    lenient = gate(untrained_model, demo_dataset, baseline_uri=demo_model,
                   margin=loss.candidate - loss.baseline + 0.01, metric="log_loss")
    assert lenient.deploy


def test_the_first_deployment_passes_and_reports_the_candidate(demo_model, demo_dataset):
    decision = gate(demo_model, demo_dataset)
    assert decision.deploy and decision.baseline is None and decision.candidate > 0.8
    assert "serving_accuracy" not in decision.metrics()


def test_bad_gate_settings_and_mismatched_data_are_refused(demo_model, unlabeled_dataset):
    with pytest.raises(GateInputError, match="gate metric 'auc' is not one of accuracy"):
        check_options("auc", 0.0)
    with pytest.raises(GateInputError, match="margin -1"):
        check_options("accuracy", -1)
    with pytest.raises(GateInputError, match="has no label column"):
        gate(demo_model, unlabeled_dataset)


def test_an_endpoint_whose_model_changes_while_measured_is_refused(monkeypatch):
    """Answers from two versions measure neither: the version is asked again at the end."""
    from tfkfp.components.deploy_model import endpoint_model

    model = endpoint_model.EndpointModel("http://h:1/v1/models/m", "7", ["x"],
                                         "classification", ["a", "b"])
    asked = []
    monkeypatch.setattr(endpoint_model, "served_version",
                        lambda base, name: asked.append((base, name)) or "8")
    with pytest.raises(GateInputError, match=r"http://h:1/v1/models/m served version 7 when "
                                             r"the gate started and 8 when it finished"):
        endpoint_model.check_unchanged(model)
    assert asked == [("http://h:1", "m")]
