"""Multi-process strategies, checkpoints and resumption after a kill."""

import json
import os

import pytest
from process_helpers import kill, pids_with_tf_config, start_training, wait_for

from tfkfp.components.train.core import train


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["multi_worker_mirrored", "parameter_server"])
def test_multi_process_strategies_learn_the_digits(demo_dataset, tmp_path, strategy):
    result = train(demo_dataset, str(tmp_path / "model"), strategy=strategy, workers=2,
                   parameter_servers=1, epochs=3, batch_size=32, steps_per_execution=5)
    assert result.figures["eval_accuracy"] > 0.9
    assert result.figures["workers"] == 2
    expected_replicas = 2 if strategy == "multi_worker_mirrored" else 1
    assert result.figures["replicas"] == expected_replicas
    assert os.path.exists(os.path.join(result.model_dir, "saved_model.pb"))
    summary = result.classification()  # the chief's, returned through the cluster's result
    right = sum(summary["matrix"][i][i] for i in range(10))
    assert right / summary["examples"] == pytest.approx(result.figures["eval_accuracy"],
                                                        abs=1e-6)
    assert not pids_with_tf_config("worker", 0), "a worker process outlived the step"
    assert not pids_with_tf_config("ps", 0), "a parameter server outlived the step"


@pytest.mark.slow
def test_killed_run_resumes_from_its_last_checkpoint(demo_dataset, tmp_path):
    options = dict(epochs=10, batch_size=16, checkpoint_dir=str(tmp_path / "ckpt"))
    first = start_training(demo_dataset, str(tmp_path / "model"), **options)
    # ckpt-3 begun means ckpt-2 is complete and registered as the latest.
    wait_for(str(tmp_path / "ckpt" / "ckpt-3.index"), first)
    first.kill()
    first.wait()
    assert not os.path.exists(tmp_path / "model")
    result = train(demo_dataset, str(tmp_path / "model"), **options)
    assert 2 <= result.figures["initial_epoch"] < 10
    assert len(result.history["loss"]) == 10  # the report shows the whole run
    assert result.figures["eval_accuracy"] > 0.9
    assert "resumed after epoch" in result.markdown()


@pytest.mark.slow
def test_a_killed_worker_fails_the_step_and_the_rerun_resumes(demo_dataset, tmp_path):
    options = dict(strategy="multi_worker_mirrored", workers=2, epochs=6, batch_size=16,
                   checkpoint_dir=str(tmp_path / "ckpt"))
    run = start_training(demo_dataset, str(tmp_path / "model"), **options)
    wait_for(str(tmp_path / "ckpt" / "ckpt-1.index"), run)
    for pid in pids_with_tf_config("worker", 1):
        kill(pid)
    _, err = run.communicate(timeout=120)
    assert run.returncode != 0
    assert "training task worker-1 failed" in err and "SIGKILL" in err
    assert not pids_with_tf_config("worker", 0), "the surviving worker was not shut down"
    result = train(demo_dataset, str(tmp_path / "model"), **options)
    assert result.figures["initial_epoch"] >= 1
    assert result.figures["eval_accuracy"] > 0.9
    assert json.load(open(tmp_path / "ckpt" / "history.json"))["loss"].__len__() == 6
