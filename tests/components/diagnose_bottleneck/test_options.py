"""DiagnoseOptions: train's defaults and choices, refused before anything is read."""

import dataclasses

import pytest

from tfkfp.components.common.training.config import PRECISIONS, TrainConfig, TrainConfigError
from tfkfp.components.diagnose_bottleneck.options import DiagnoseOptions


def test_a_bad_precision_is_refused_naming_the_allowed_values():
    with pytest.raises(TrainConfigError, match="precision 'int8' is not one of "
                                               + ", ".join(PRECISIONS)):
        DiagnoseOptions(precision="int8")


def test_given_refuses_a_setting_that_is_not_one_of_its_own():
    with pytest.raises(TypeError, match="epochs: not a setting of DiagnoseOptions"):
        DiagnoseOptions.given(None, {"epochs": 3})
    with pytest.raises(TypeError, match="not both"):
        DiagnoseOptions.given(DiagnoseOptions(), {"batch_size": 8})


def test_the_training_settings_default_as_train_does():
    train = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    options = DiagnoseOptions()
    assert options.training() and all(train[k] == v for k, v in options.training().items())
    assert set(options.training()) == set(DiagnoseOptions.names()) - {"memory_limit_mb",
                                                                       "seconds"}


def test_hidden_units_may_be_text_or_a_sequence():
    assert DiagnoseOptions.of({"hidden_units": "1024, 512"}).hidden_units == (1024, 512)
    assert DiagnoseOptions(hidden_units=[32]).hidden_units == (32,)
    assert DiagnoseOptions(hidden_units="").hidden_units == ()
