"""The strategy table is the one place a strategy name gets its meaning: a new entry is
checked, shaped and launched by what the table says, and the modules below it do not
import the modules that read it."""

import ast
import pathlib

import pytest

from tfkfp.components.common.training import strategies
from tfkfp.components.common.training.config import TrainConfig, TrainConfigError
from tfkfp.components.common.training.shape import LOCAL, ClusterShape, Placement, validate

TRAINING = pathlib.Path(__file__).resolve().parents[4] / "components" / "common" / "training"


def config(strategy, **fields):
    return TrainConfig(dataset="d", model_dir="m", strategy=strategy, **fields)


@pytest.fixture
def added(monkeypatch):
    """Two strategies no module names: one in-process, one with a chief and workers."""
    table = {**strategies.STRATEGIES,
             "one_more": strategies.Strategy("one_more", lambda c: None),
             "chief_and_workers": strategies.Strategy(
                 "chief_and_workers", lambda c: None, roles=("chief", "worker"),
                 devices="cluster")}
    monkeypatch.setattr(strategies, "STRATEGIES", table)


def test_a_strategy_added_to_the_table_is_checked_and_shaped_by_its_entry(added):
    cluster = Placement("cluster", max_workers=16, max_ps=4)
    validate(config("one_more"), cluster)
    assert ClusterShape.for_config(config("one_more")).replicas == {"chief": 1}
    shape = ClusterShape.for_config(config("chief_and_workers", workers=3))
    assert shape.replicas == {"chief": 1, "worker": 3}
    validate(config("chief_and_workers", workers=3), cluster)
    with pytest.raises(TrainConfigError, match="runs a chief and workers only; got"):
        ClusterShape("chief_and_workers", chief=1, workers=2, ps=1).validate(LOCAL)
    with pytest.raises(TrainConfigError, match="choose multi_worker_mirrored or "
                                               "parameter_server or chief_and_workers"):
        ClusterShape("one_more", chief=1, workers=1).validate(LOCAL)


def test_an_unknown_strategy_names_the_table():
    with pytest.raises(TrainConfigError, match="strategy 'horovod' is not known; expected one "
                                               f"of {', '.join(strategies.STRATEGIES)}$"):
        strategies.get("horovod")


def test_config_imports_no_module_that_reads_the_table():
    tree = ast.parse((TRAINING / "config.py").read_text())
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m and m.startswith("tfkfp.components.common.training")
                ]  # a leaf of its room: it imports nothing beside it
