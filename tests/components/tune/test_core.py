import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time

import optuna
import pytest
import sqlalchemy

from tfkfp.components.tune import options, study, trials
from tfkfp.components.tune.core import tune
from tfkfp.components.tune.errors import SearchSpaceError, TuneError

PLANTED = {"learning_rate": {"type": "categorical", "choices": [1e-6, 0.05]}}
TINY = {"epochs": 1, "hidden_units": "16"}


@pytest.mark.parametrize("space, named, why", [
    ({"dropout": {"type": "float", "low": 0.1, "high": 0.5}}, "dropout", "not a train setting"),
    ({"learning_rate": {"type": "float", "low": 0.1, "high": 0.1}}, "learning_rate",
     "range is empty"),
    ({"batch_size": {"type": "int", "low": 128, "high": 32}}, "batch_size", "range is empty"),
    ({"learning_rate": {"type": "float", "low": 0.0, "high": 0.1, "log": True}},
     "learning_rate", "log range"),
    ({"learning_rate": {"type": "float", "low": -1.0, "high": 0.1, "log": True}},
     "learning_rate", "log range"),
    ({"optimizer": {"type": "categorical", "choices": []}}, "optimizer", "non-empty list"),
    ({"optimizer": {"type": "categorical", "choices": ["adam", "adamw"]}}, "optimizer",
     "'adamw' is refused by train"),
    ({"hidden_units": {"type": "categorical", "choices": ["64", "wide"]}}, "hidden_units",
     "refused by train"),
    ({"optimizer": {"type": "float", "low": 0, "high": 1}}, "optimizer", "does not fit"),
])
def test_a_bad_search_space_is_refused_before_any_trial(demo_dataset, tmp_path, space, named,
                                                        why):
    study_dir = tmp_path / "study"
    with pytest.raises(SearchSpaceError) as refused:
        tune(demo_dataset, str(tmp_path / "model"), search_space=space,
             study_dir=str(study_dir), train_options=TINY)
    assert repr(named) in str(refused.value) and why in str(refused.value)
    assert not study_dir.exists()  # no study was opened, so no trial ran


def test_grid_needs_categorical_settings_and_a_setting_is_searched_or_fixed(demo_dataset,
                                                                             tmp_path):
    space = {"learning_rate": {"type": "float", "low": 1e-4, "high": 0.1, "log": True}}
    with pytest.raises(SearchSpaceError, match="grid.*learning_rate"):
        tune(demo_dataset, str(tmp_path / "m"), search_space=space, algorithm="grid",
             train_options=TINY)
    with pytest.raises(SearchSpaceError, match="hidden_units.*both given and searched"):
        tune(demo_dataset, str(tmp_path / "m"), search_space=None,  # the default space
             train_options=TINY)
    assert not (tmp_path / "m").exists()


def test_the_objective_is_checked_against_what_train_reports(demo_dataset, tmp_path):
    with pytest.raises(TuneError, match="eval_rmse.*eval_accuracy, eval_loss.*classification"):
        tune(demo_dataset, str(tmp_path / "m"), search_space=PLANTED, objective="eval_rmse",
             train_options=TINY)
    with pytest.raises(TuneError, match="'accuracy'"):
        tune(demo_dataset, str(tmp_path / "m"), search_space=PLANTED, objective="accuracy",
             train_options=TINY)
    assert options.check_objective("", "auto", "regression") == ("eval_rmse", "minimize")
    assert options.check_objective("eval_r2", "auto", "regression") == ("eval_r2", "maximize")
    with pytest.raises(TuneError, match="direction 'up'"):
        options.check_objective("eval_loss", "up", "classification")


def test_the_default_space_is_used_when_none_is_given_and_train_accepts_it():
    assert options.parse_space(None) == options.DEFAULT_SPACE
    assert options.parse_space("") == options.DEFAULT_SPACE
    assert options.parse_space(json.dumps(options.DEFAULT_SPACE)) == options.DEFAULT_SPACE


def test_a_study_dir_with_another_study_is_refused(tmp_path):
    settings = {"objective": "eval_accuracy", "direction": "maximize", "space": PLANTED,
                "algorithm": "tpe", "pruning": True, "seed": 0, "fixed": TINY}
    study.open_study(str(tmp_path), settings, heartbeat_seconds=5)
    with pytest.raises(TuneError, match="other objective"):
        study.open_study(str(tmp_path), {**settings, "objective": "eval_loss"}, 5)


def test_the_budget_counts_finished_trials_but_not_failed_ones_run_again():
    the_study = optuna.create_study()
    states = optuna.trial.TrialState
    dist = {"x": optuna.distributions.FloatDistribution(0, 1)}
    for state in (states.COMPLETE, states.PRUNED, states.FAIL, states.FAIL):
        the_study.add_trial(optuna.trial.create_trial(
            state=state, params={"x": 0.5}, distributions=dist,
            value=0.5 if state == states.COMPLETE else None))
    retry = optuna.trial.create_trial(state=states.COMPLETE, params={"x": 0.5},
                                      distributions=dist, value=0.4,
                                      system_attrs={"failed_trial": 2, "retry_history": [2]})
    the_study.add_trial(retry)
    assert study.remaining(the_study, 6) == 2  # trials 0, 1, 3 and 4 count; 2 ran again


def test_a_study_finds_the_planted_better_setting(demo_dataset, tmp_path):
    model = tmp_path / "model"
    named = tmp_path / "gcp_resources"
    result = tune(demo_dataset, str(model), search_space=PLANTED, trials=2, parallel_trials=2,
                  algorithm="grid", train_options=TINY, gcp_resources=str(named))
    assert result.best_settings == {**TINY, "learning_rate": 0.05}
    assert json.loads(named.read_text()) == {"resources": []}  # nothing on Google Cloud
    assert result.best_value > 0.5 and result.best_metrics["eval_accuracy"] == result.best_value
    assert result.counts() == {"complete": 2, "pruned": 0, "failed": 0}
    assert (model / "saved_model.pb").exists()  # the best trial's SavedModel, as train writes
    kept = [n for n in os.listdir(model / "study" / "trials")
            if (model / "study" / "trials" / n / "model").exists()]
    assert kept == [f"{result.best_number:04d}"]
    report = result.markdown()
    assert "learning_rate=1e-06" in report and "learning_rate=0.05" in report
    assert result.metrics()["trials_done"] == 2.0


def _stamped(path):
    """Whether the run under test has written the storage's schema version: before that,
    Optuna's storage would stamp it itself, racing the run's own insert of the same row."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        try:
            return db.execute("SELECT version_num FROM alembic_version").fetchone() is not None
        except sqlite3.OperationalError:  # no such table yet, or the database is locked
            return False


def _study_trials(study_dir):
    """The study's trials as the storage holds them; none before the study exists (the
    reader creates no tables: the run under test does)."""
    path = os.path.join(study_dir, study.DATABASE)
    if not os.path.exists(path) or not _stamped(path):
        return []
    try:
        storage = optuna.storages.RDBStorage(f"sqlite:///{path}", skip_table_creation=True,
                                             skip_compatibility_check=True)
        return optuna.load_study(study_name=study.STUDY_NAME, storage=storage).get_trials()
    except (KeyError, sqlalchemy.exc.OperationalError):  # not created yet
        return []


KILLED_RUN = """
import sys
from tfkfp.components.tune.core import tune
tune(sys.argv[1], sys.argv[2],
     search_space={"learning_rate": {"type": "float", "low": 0.01, "high": 0.1}}, trials=3,
     study_dir=sys.argv[3], algorithm="random", sampler_seed=3, heartbeat_seconds=1,
     pruning=False, train_options={"epochs": 1, "hidden_units": "16"})
"""


@pytest.mark.slow
def test_a_killed_study_resumes_with_its_finished_trials_kept(demo_dataset, tmp_path,
                                                              caplog):
    study_dir = str(tmp_path / "study")
    run = subprocess.Popen([sys.executable, "-c", KILLED_RUN, demo_dataset,
                            str(tmp_path / "first"), study_dir], start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:  # one trial finished, the next one started
            found = _study_trials(study_dir)
            if any(t.state.name == "COMPLETE" for t in found) and any(
                    t.state.name == "RUNNING" for t in found):
                break
            assert run.poll() is None, "the study ended before it could be killed"
            time.sleep(0.5)
        time.sleep(2)  # the running trial's train process is under way
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    before = {t.number: t for t in _study_trials(study_dir)}
    killed = [n for n, t in before.items() if t.state.name == "RUNNING"]
    assert len(killed) == 1
    with caplog.at_level(logging.INFO, logger="tfkfp"):
        result = tune(demo_dataset, str(tmp_path / "second"),
                      search_space={"learning_rate": {"type": "float", "low": 0.01, "high": 0.1}},
                      trials=3, study_dir=study_dir, algorithm="random", sampler_seed=3,
                      heartbeat_seconds=1, pruning=False, train_options=TINY)
    assert "resuming the study" in caplog.text
    after = {t.number: t for t in _study_trials(study_dir)}
    for number, trial in before.items():  # finished trials kept as they were
        if trial.state.name == "COMPLETE":
            assert after[number].value == trial.value and after[number].params == trial.params
    assert after[killed[0]].state.name == "FAIL"
    retries = [t for t in after.values() if killed[0] in
               optuna.storages.RetryHeartbeatStaleTrialCallback.retry_history(t)]
    assert len(retries) == 1 and retries[0].params == before[killed[0]].params
    assert retries[0].state.name == "COMPLETE"
    assert result.counts()["complete"] == 3 and result.resumed


class _Running:
    """A trial process still training: poll() says it runs until kill()."""

    def __init__(self):
        self.killed = False

    def poll(self):
        return 0 if self.killed else None

    def kill(self):
        self.killed = True


def test_a_trial_trailing_the_median_is_pruned_from_train_s_history(tmp_path):
    the_study = optuna.create_study(direction="maximize",
                                    pruner=optuna.pruners.MedianPruner(n_startup_trials=1))
    dist = {"x": optuna.distributions.FloatDistribution(0, 1)}
    the_study.add_trial(optuna.trial.create_trial(
        params={"x": 0.5}, distributions=dist, value=0.9,
        intermediate_values={0: 0.8, 1: 0.9, 2: 0.9}))
    history = tmp_path / "history.json"
    history.write_text(json.dumps({"loss": [2.0], "val_accuracy": [0.1]}))
    trial, process = the_study.ask(), _Running()
    with pytest.raises(optuna.TrialPruned, match="after epoch 1"):
        trials._watch(trial, process, str(history), "eval_accuracy", epochs=3)
    assert process.killed and trial.storage.get_trial(trial._trial_id).intermediate_values == {
        0: 0.1}


def test_whole_numbers_kfp_hands_over_as_floats_become_train_s_ints():
    """KFP passes a dict parameter's whole numbers as floats (1.0): train's int fields need
    ints, or tf_keras refuses ``epochs=1.0`` mid-trial."""
    assert options.fixed_settings({"epochs": 1.0, "learning_rate": 1.0}, {}) == {
        "epochs": 1, "learning_rate": 1.0}
    space = options.parse_space({"batch_size": {"type": "categorical", "choices": [32.0, 64.0]}})
    assert space["batch_size"]["choices"] == [32, 64]
    assert all(type(c) is int for c in space["batch_size"]["choices"])


def test_train_defaults_fill_what_the_space_and_train_options_leave_out():
    """The training pipeline's own settings are the defaults: a searched setting overrides
    its default instead of being refused as both given and searched; train_options win."""
    space, fixed = options.TuneOptions(
        search_space={"learning_rate": {"type": "float", "low": 1e-3, "high": 0.1, "log": True}},
        train_options={"batch_size": 32},
        train_defaults={"learning_rate": 0.5, "batch_size": 64.0, "epochs": 3.0,
                        "hidden_units": "16"}).parsed()
    assert set(space) == {"learning_rate"}
    assert fixed == {"batch_size": 32, "epochs": 3, "hidden_units": "16"}
    assert type(fixed["epochs"]) is int  # a dict output's whole numbers arrive as floats
    with pytest.raises(TuneError, match="train_options with train_defaults refused.*precision"):
        options.TuneOptions(search_space=None, train_defaults={"precision": "float8"})
