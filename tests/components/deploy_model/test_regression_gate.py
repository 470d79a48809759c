"""The deploy gate on regressors: RMSE or MAE on the label's values, lower is better; a
classifier's metric is refused for a regressor (and the other way round)."""

import pytest

from tfkfp.components.deploy_model.errors import GateInputError
from tfkfp.components.deploy_model.gate import gate


def test_a_regressor_is_gated_on_its_rmse(regression_model, regression_dataset, tmp_path):
    from tfkfp.components.train.core import train

    worse = str(tmp_path / "worse")
    train(regression_dataset, worse, epochs=1, hidden_units="2", learning_rate=0.0001)
    kept_out = gate(worse, regression_dataset, baseline_uri=regression_model, metric="rmse")
    assert not kept_out.deploy and kept_out.candidate > kept_out.baseline
    assert kept_out.reason().startswith("keep the serving model: candidate rmse")
    goes_out = gate(regression_model, regression_dataset, baseline_uri=worse, metric="mae")
    assert goes_out.deploy and goes_out.candidate < goes_out.baseline
    first = gate(regression_model, regression_dataset, metric="rmse")
    assert first.deploy and first.candidate == pytest.approx(kept_out.baseline)


def test_a_metric_that_does_not_measure_the_model_is_refused(regression_model, demo_model,
                                                             regression_dataset, demo_dataset):
    with pytest.raises(GateInputError, match="gate metric 'accuracy' does not measure model "
                                             ".*, a regression model; use rmse or mae"):
        gate(regression_model, regression_dataset, metric="accuracy")
    with pytest.raises(GateInputError, match="a classification model; use accuracy or "
                                             "log_loss"):
        gate(demo_model, demo_dataset, metric="rmse")
