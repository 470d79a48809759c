"""A local run's console: a line as each task starts and ends, every task's log in a file under
the run's folder, the failed component's own message at the end; figures from the logs."""

import builtins
import io
import os
import sys
import tempfile

import pytest
from kfp import dsl

from tfkfp.cli import figures, local_run
from tfkfp.cli.task_logs import TaskRecord, task_error


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def say(word: str) -> str:
    import logging
    import sys

    logging.basicConfig(level=logging.INFO)
    logging.getLogger("step").info("the step says %s", word)
    print("and writes to its stderr", file=sys.stderr)
    return word + word


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def refuse(word: str):
    raise ValueError(f"the step's own reason: {word!r} is not a number")


@dsl.pipeline(name="two-steps")
def two_steps(word: str = "hi") -> str:
    """Says a word twice."""
    return say(word=say(word=word).output).output


@dsl.pipeline(name="refusing")
def refusing(word: str = "hi"):
    refuse(word=say(word=word).output)


def test_a_quiet_run_prints_a_line_as_each_task_starts_and_ends_and_logs_the_rest(tmp_path):
    console, before = io.StringIO(), (sys.stdout, sys.stderr, builtins.print)
    run = local_run.run_pipeline(two_steps, {"word": "hi"}, str(tmp_path), console=console)
    assert (sys.stdout, sys.stderr, builtins.print) == before  # all put back
    lines = console.getvalue().splitlines()
    assert lines[0] == f"logs   {run.log_dir}{os.sep}"
    assert [line.split()[:2] for line in lines[1:]] == [
        ["start", "say"], ["done", "say"], ["start", "say-2"], ["done", "say-2"]]
    assert run.outputs == {"Output": "hihihihi"}
    assert os.path.dirname(run.log_dir) == run.run_dir
    assert os.path.dirname(run.run_dir) == str(tmp_path)
    for task in run.tasks:
        log = open(task.log).read()
        assert "the step says hi" in log and "and writes to its stderr" in log
        assert "executor_input" in log or "Executing task" in log
    assert os.path.exists(os.path.join(run.log_dir, "pipeline.log"))
    assert "the step says" not in console.getvalue()


def test_verbose_streams_everything_and_still_keeps_the_logs(tmp_path):
    console = io.StringIO()
    run = local_run.run_pipeline(two_steps, {}, str(tmp_path), verbose=True, console=console)
    assert "the step says hi" in console.getvalue()
    assert "the step says hi" in open(run.tasks[0].log).read()


def test_a_failed_task_ends_the_run_with_the_components_own_message(tmp_path):
    console = io.StringIO()
    with pytest.raises(local_run.TaskFailed) as failed:
        local_run.run_pipeline(refusing, {}, str(tmp_path), console=console)
    assert str(failed.value) == "refuse: ValueError: the step's own reason: 'hihi' is not a number"
    last = console.getvalue().splitlines()[-1]
    assert last.startswith("FAILED refuse ") and last.endswith(failed.value.record.log)


def test_a_run_leaves_nothing_in_the_system_temp_folder(tmp_path, monkeypatch):
    """kfp's launch command writes each task's source into ``$(mktemp -d)``: a local run used
    to leave a ``tmp.*/ephemeral_component.py`` folder per task there."""
    system = tmp_path / "system-temp"  # this test's own, so other runs cannot change it
    system.mkdir()
    monkeypatch.setenv("TMPDIR", str(system))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    before = sorted(p.name for p in system.glob("tmp.*"))
    run = local_run.run_pipeline(two_steps, {"word": "hi"}, str(tmp_path / "root"),
                                 console=io.StringIO())
    assert run.outputs == {"Output": "hihihihi"}
    assert sorted(p.name for p in system.glob("tmp.*")) == before == []
    assert os.listdir(system) == []  # the run's own temp folder went with it


def indented(text: str) -> str:
    """As kfp.local writes a task's output into its log: four spaces in."""
    return "\n".join("    " + line for line in text.splitlines())


TRACEBACK = """Traceback (most recent call last):
  File "x.py", line 1, in <module>
    main()
{error}

12:00:00.000 - ERROR - Task 'shard-tfrecords' finished with status FAILURE"""


@pytest.mark.parametrize("error,message", [
    ("tfkfp.components.shard_tfrecords.errors.ShardInputError: label column 'x' is not in "
     "a.csv; its columns are ['y']", "label column 'x' is not in a.csv; its columns are ['y']"),
    ("tensorflow.python.framework.errors_impl.FailedPreconditionError: Error executing an "
     "HTTP request\n\t when reading metadata of gs://b/a.csv\nI0000 00:00:1.0 123 x.cc:1] bye",
     "FailedPreconditionError: Error executing an HTTP request when reading metadata of "
     "gs://b/a.csv"),
    ("KeyError: 'pixel_0'", "KeyError: 'pixel_0'"),
    ("MemoryError", "MemoryError"),
])
def test_the_error_of_a_task_is_its_last_exception(error, message):
    earlier = TRACEBACK.format(error="OSError: the first")
    chained = "\nThe above exception was the direct cause of the following exception:\n\n"
    assert task_error(indented(earlier + chained + TRACEBACK.format(error=error))) == message


def test_a_frames_caret_markers_at_the_exceptions_depth_are_not_the_error():
    frames = """Traceback (most recent call last):
  File "x.py", line 1, in <module>
    return next(self.gen)
^^^^^^^^^^^^^^^^^^^^^^^^^
ValueError: 'mean radius_float/' is not a valid root scope name
"""
    assert task_error(indented(frames)) == \
        "ValueError: 'mean radius_float/' is not a valid root scope name"


def test_a_log_without_a_traceback_has_no_error():
    assert task_error(indented("killed\n")) == ""


def test_key_figures_come_from_the_outputs_metadata():
    dataset = dsl.Dataset(name="dataset", uri="/d", metadata={
        "records": {"train": 90.0, "eval": 10.0}, "records_per_second": 12.5,
        "compression": "none"})
    assert figures.key_figures({"dataset": dataset}) == (
        "100 records (train 90, eval 10), 12 records/s")
    assert figures.key_figures({"Output": [0, 1]}) == "2 group(s)"


def test_a_pipeline_without_outputs_lists_what_its_tasks_made_and_the_decisions(tmp_path):
    """batch_prediction and serving declare no outputs: the summary says where the
    predictions are, and what the gate decided and why, instead of nothing."""
    gate_log, merge_log = tmp_path / "deploy-gate.log", tmp_path / "merge.log"
    gate_log.write_text("INFO:tfkfp:deploy gate: keep the serving model: candidate accuracy "
                        "0.9000, serving model (gs://m) 0.9500 on 180 examples\n")
    merge_log.write_text("")
    predictions = dsl.Dataset(name="all_predictions", uri=str(tmp_path / "p"),
                              metadata={"predictions": 1797.0, "errors": 3.0})
    tasks = [TaskRecord("deploy-gate", str(gate_log), 2.0, True,
                        {"metrics": dsl.Metrics(name="metrics", uri="/m"), "Output": "keep"}),
             TaskRecord("merge-predictions", str(merge_log), 1.0, True,
                        {"all_predictions": predictions, "Output": {"shards": [1, 2]},
                         "summary": dsl.Markdown(name="summary", uri="/s")})]
    run = local_run.LocalRun("serving", {}, {}, tasks, str(tmp_path), str(tmp_path / "logs"), 3)
    text = "\n".join(local_run.summary_lines(run))
    assert "has no outputs" not in text
    assert "all_predictions  1,797 predictions, 3 errors (merge-predictions, 1.0 s)\n" in text
    assert "\n                 p\n" in text  # its path, under the run folder, below it
    shown = {line.strip() for line in text.splitlines()}
    assert not shown & {"/m", "/s"}  # reports are not what a task made
    assert "shards" not in text  # nor a summary dict, whose figures its artifacts carry
    assert "keep\n" not in text  # nor the gate's parameter output: its account says it
    assert "deploy-gate: keep the serving model: candidate accuracy 0.9000" in text
    assert tasks[0].line() == ("done   deploy-gate  2.0 s  keep the serving model: candidate "
                               "accuracy 0.9000, serving model (gs://m) 0.9500 on 180 examples")


def batch_prediction_run(root):
    """What batch_prediction's tasks hand back locally: a group list, a Beam step's
    gcp_resources, per-group predictions with long figures, and their merge."""
    run_dir = root / "tfkfp-batch-prediction-2026-11-28-14-20-11-123456"
    logs = run_dir / "logs"
    logs.mkdir(parents=True)
    meta = {"predictions": 1797.0, "errors": 0.0, "error_fraction": 0.0,
            "records_per_second": 2140.5, "records": {"train": 1617.0, "eval": 180.0}}
    tasks = [TaskRecord("group-numbers", str(logs / "g.log"), 0.1, True, {"Output": [0.0]})]
    for k in (1, 2):
        path = run_dir / "tfkfp-predict-shards" / "batch-predict" / f"predictions-{k}"
        tasks.append(TaskRecord(f"batch-predict #{k}", str(logs / f"b{k}.log"), 12.3, True, {
            "predictions": dsl.Dataset(name="predictions", uri=str(path), metadata=meta),
            "gcp_resources": '{"resources": []}', "Output": "sha256:" + "0" * 64,
            "metrics": dsl.Metrics(name="metrics", uri=str(path) + "-metrics")}))
    for task in tasks:
        open(task.log, "w").close()
    return local_run.LocalRun("batch_prediction", {}, {}, tasks, str(run_dir), str(logs), 31)


def test_the_summary_fits_100_columns_with_paths_under_the_run_folder_and_no_internals(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = batch_prediction_run(tmp_path / "tfkfp-runs")
    lines = local_run.summary_lines(run)
    text = "\n".join(lines)
    assert max(len(line) for line in lines) < 100, text
    assert "|" not in text and str(tmp_path) not in text  # no table; no absolute path
    assert "tfkfp-predict-shards/batch-predict/predictions-1" in text
    assert "run folder  tfkfp-runs/tfkfp-batch-prediction-2026-11-28-14-20-11-123456" in text
    assert "task logs   logs/ in it" in text
    for internal in ("group-numbers", "gcp_resources", "resources", "sha256", "[0.0]"):
        assert internal not in text, internal
    assert text.count("1,797 predictions") == 2 and "(batch-predict #2, 12.3 s)" in text


def test_declared_outputs_are_aligned_with_their_figures_step_and_relative_path(tmp_path):
    model = tmp_path / "run" / "train" / "model"
    meta = {"eval_accuracy": 0.9611, "examples_per_second": 12345.0, "mode": "dynamic",
            "size_bytes": 123456.0, "accuracy": 0.95, "agreement": 0.99, "rmse": 0.1,
            "records": {"train": 1617.0, "eval": 180.0}, "records_per_second": 2140.5,
            "predictions": 180.0, "errors": 1.0, "error_fraction": 0.005}
    artifact = dsl.Model(name="model", uri=str(model), metadata=meta)
    train = TaskRecord("train", str(tmp_path / "t.log"), 20.1, True, {"model": artifact})
    open(train.log, "w").close()
    run = local_run.LocalRun("training", {"model": artifact, "deploy": "keep"},
                             {"model": "The trained SavedModel, " * 8}, [train],
                             str(tmp_path / "run"), str(tmp_path / "run" / "logs"), 53)
    lines = local_run.summary_lines(run)
    assert max(len(line) for line in lines) < 100, "\n".join(lines)
    first = lines.index(next(line for line in lines if line.startswith("model ")))
    block = lines[first:lines.index("        train/model") + 1]  # its path last, relative
    assert block[0].startswith("model   1,797 records (train 1,617, eval 180), ")
    assert all(line.startswith("        ") for line in block[1:])
    assert "eval accuracy 0.9611" in " ".join(block) and block[-2].endswith("(train, 20.1 s)")
    assert "deploy  keep" in lines and "The trained SavedModel" not in "\n".join(lines)


def test_a_task_goes_by_its_display_name_and_a_run_by_the_name_typed(tmp_path, monkeypatch):
    """The name the Kubeflow UI, tfkfp check and the docs give a task (its display name), not
    its component's; the pipeline's as `tfkfp run` takes it, not its compiled name."""
    from tfkfp.pipelines import registry

    @dsl.pipeline(name="tfkfp-greeting")
    def greeting(word: str = "hi") -> str:
        return say(word=word).set_display_name("greet").output

    monkeypatch.setattr(registry, "load", lambda name: greeting)
    console = io.StringIO()
    run = local_run.run_local("greeting", {}, str(tmp_path), console=console)
    assert [line.split()[:2] for line in console.getvalue().splitlines()[1:]] == [
        ["start", "greet"], ["done", "greet"]]
    assert run.name == "greeting" and run.tasks[0].log.endswith("greet.log")
    assert "pipeline 'greeting' finished" in "\n".join(local_run.summary_lines(run))
