"""TuneOptions: tune's settings declared once, checked when built (what the pipelines check a
request with), and taken by the core as an object or as keywords, not both."""

import dataclasses

import pytest

from tfkfp.components.tune import remote_options
from tfkfp.components.tune.component import tune as tune_component
from tfkfp.components.tune.core import tune
from tfkfp.components.tune.errors import SearchSpaceError, TuneError
from tfkfp.components.tune.options import DEFAULT_SPACE, DIRECTIONS, TuneOptions


@pytest.mark.parametrize("name, value, choices", [
    ("direction", "up", "auto, maximize, minimize"),
    ("engine", "vizier", "local, katib, vertex"),
])
def test_a_setting_outside_its_choices_is_refused_naming_them(name, value, choices):
    with pytest.raises(TuneError, match=f"{name} {value!r} is not one of {choices}$"):
        TuneOptions(**{name: value})
    assert TuneOptions.choices("direction") == DIRECTIONS
    assert set(TuneOptions.choices("engine")) == {"local", "katib", "vertex"}


def test_the_core_takes_options_or_keyword_settings_not_both(tmp_path):
    with pytest.raises(TypeError, match="give TuneOptions or keyword settings, not both"):
        tune(str(tmp_path / "data"), str(tmp_path / "model"), TuneOptions(), trials=2)
    with pytest.raises(TypeError, match="tirals: not a setting of TuneOptions"):
        tune(str(tmp_path / "data"), str(tmp_path / "model"), tirals=2)
    with pytest.raises(TypeError, match="search_space=..."):  # the old positional space
        tune(str(tmp_path / "data"), str(tmp_path / "model"), dict(DEFAULT_SPACE))
    assert not (tmp_path / "model").exists()


def test_a_bad_space_is_still_a_search_space_error_and_a_tune_error():
    with pytest.raises(SearchSpaceError, match="'dropout'") as refused:
        TuneOptions(search_space={"dropout": {"type": "float", "low": 0.1, "high": 0.5}})
    assert isinstance(refused.value, TuneError) and TuneOptions.error is TuneError


def test_the_engine_options_and_study_dir_are_checked_when_built():
    with pytest.raises(TuneError, match="engine 'local' takes none"):
        TuneOptions(engine_options={"namespace": "team"})
    with pytest.raises(TuneError, match="not known to engine 'katib'"):
        TuneOptions(engine="katib", engine_options={"colour": "red"})
    with pytest.raises(TuneError, match="gpu_type and gpus go together"):
        TuneOptions(engine="vertex", algorithm="random", engine_options={"gpus": 1})
    with pytest.raises(TuneError, match="study_dir is the local engine's"):
        TuneOptions(engine="katib", study_dir="/tmp/study")
    katib = TuneOptions(engine="katib", engine_options={"namespace": "team"})
    assert isinstance(katib.engine_settings(), remote_options.KatibOptions)
    assert katib.engine_settings().namespace == "team"
    assert TuneOptions().engine_settings() is None


def test_the_space_and_fixed_settings_come_from_the_fields_without_changing_them():
    options = TuneOptions(train_options={"epochs": 2.0})
    space, fixed = options.parsed()
    assert space == DEFAULT_SPACE and fixed == {"epochs": 2}
    assert options.search_space == {} and options.train_options == {"epochs": 2.0}
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.trials = 3


def test_the_component_s_parameters_are_the_options_settings():
    """The component builds TuneOptions.of(its parameters): every setting it has is one,
    and what it lacks (heartbeat_seconds) keeps the options' default."""
    inputs = tune_component.component_spec.inputs
    assert {name for name in inputs if name != "dataset"} <= set(TuneOptions.names())
    built = TuneOptions.of({"dataset": "d", "gcp_resources": "g", "trials": 3})
    assert built == TuneOptions(trials=3)
