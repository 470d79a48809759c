import os
import subprocess
import sys

import pytest

from conftest import write_csv
from tfkfp.cli.main import main


def test_shard_command_writes_a_dataset(table_csv, tmp_path, capsys):
    out = tmp_path / "ds"
    code = main(["shard", table_csv[0], str(out), "--label", "animal", "--keys", "id",
                 "--eval-fraction", "0.25", "--num-shards", "3", "--compression", "gzip",
                 "--column-types", "x=float32"])
    assert code == 0
    assert sorted(os.listdir(out / "train")) == [
        f"data-{k:05d}-of-00003.tfrecord.gz" for k in range(3)]
    assert "| train |" in capsys.readouterr().out


@pytest.mark.parametrize("layout,groups", [("columns", []), ("packed", ["packed_float32"])])
def test_shard_command_writes_the_layout_asked_for(table_csv, tmp_path, layout, groups):
    from tfkfp.components.common.data.schema import Schema

    out = tmp_path / "ds"
    assert main(["shard", table_csv[0], str(out), "--label", "animal", "--keys", "id",
                 "--layout", layout]) == 0
    schema = Schema.load(str(out))
    assert schema.layout == layout and [g.feature for g in schema.packed] == groups


def test_shard_command_refuses_an_unknown_layout_naming_the_choices(table_csv, tmp_path,
                                                                   capsys):
    with pytest.raises(SystemExit):
        main(["shard", table_csv[0], str(tmp_path / "ds"), "--layout", "rows"])
    assert "--layout: invalid choice: 'rows'" in capsys.readouterr().err


def test_shard_command_fails_with_the_error_on_stderr(tmp_path):
    path = write_csv(tmp_path / "r.csv", ["x", "label"], [[1, 0], [2]])
    proc = subprocess.run([sys.executable, "-m", "tfkfp.cli.main", "shard", path,
                           str(tmp_path / "out"), "--label", "label"],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "r.csv, line 3: ragged row" in proc.stderr
    assert proc.stdout == ""


def test_shard_command_prints_only_its_own_progress(table_csv, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tfkfp.cli.main", "shard", table_csv[0],
                           str(tmp_path / "out"), "--label", "animal"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "wrote " in proc.stderr
    # TensorFlow's C++ start-up lines (the CUDA probe logs at error level) stay hidden
    assert "absl" not in proc.stderr and "cuda" not in proc.stderr.lower(), proc.stderr


def test_shard_size_and_count_are_exclusive(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["shard", "in.csv", "out", "--shard-size-mb", "10", "--num-shards", "2"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_bad_column_type_option(table_csv, tmp_path, capsys):
    assert main(["shard", table_csv[0], str(tmp_path / "o"), "--label", "animal",
                 "--column-types", "x"]) == 1
    assert "expected NAME=TYPE" in capsys.readouterr().err


def test_demo_data_writes_csv_and_image_folder(tmp_path, capsys):
    assert main(["demo-data", str(tmp_path)]) == 0
    header = (tmp_path / "digits.csv").read_text().splitlines()[0].split(",")
    assert header[0] == "id" and header[-1] == "label" and len(header) == 66
    assert sorted(os.listdir(tmp_path / "digits_images")) == [str(d) for d in range(10)]
    pngs = sum(len(os.listdir(tmp_path / "digits_images" / str(d))) for d in range(10))
    assert pngs == 1797


@pytest.mark.slow
def test_demo_runs_the_training_pipeline_and_reports(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    summary = next(line for line in out.splitlines() if line.startswith("eval accuracy "))
    accuracy = float(summary.split()[2])  # the train task's line names it too: not that one
    assert accuracy > 0.9
    assert "examples/s" in out and "SavedModel" in out
    assert "quantization " in out and " MB, accuracy " in out  # the mode chosen, its figures
    assert len(out.splitlines()) < 40  # a line as each task starts and ends, the summary
    assert "cuInit" not in out and "executorInput" not in out  # those are in the task logs
    assert list((tmp_path / "pipeline_root").rglob("saved_model.pb"))


def test_compile_writes_every_pipeline(tmp_path, capsys):
    from tfkfp.pipelines import registry

    assert main(["compile", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{n}.yaml" for n in registry.names()]


XY = ["--set", "input_uri=x", "--set", "label=y"]


USAGE, REFUSED = 2, 1  # the command line's form (as argparse's own errors); a value refused


@pytest.mark.parametrize("args,message,status", [
    (["run", "training", "--set", "epoch=3"],
     "pipeline 'training' has no parameter 'epoch'; its parameters are batch_size", USAGE),
    (["run", "training", *XY, "--set", "epochs=three"],
     "--set epochs='three': epochs takes a value of type Integer", USAGE),
    (["run", "training"], "pipeline 'training' needs input_uri, label", USAGE),
    (["run", "nope"], "no pipeline 'nope'; the pipelines are", USAGE),
    (["run", "training", *XY, "--set", "epochs"], "--set 'epochs': expected KEY=VALUE", USAGE),
    (["submit", "nope", "--host", "http://127.0.0.1:9"], "no pipeline 'nope'", USAGE),
    (["run", "training", *XY, "--set", "launcher=tfjb"],
     "pipeline 'training': launcher 'tfjb' is not known; expected one of local, tfjob, trainjob, "
     "vertex", REFUSED),
    (["run", "training", *XY, "--set", "launcher=tfjob",
      "--set", 'launcher_options={"gpu": 1}'],
     "launcher_options ['gpu'] are not known to launcher 'tfjob'; allowed: backoff_limit",
     REFUSED),
    (["submit", "training", "--host", "http://127.0.0.1:9", *XY,
      "--set", "strategy=parameter_server", "--set", "parameter_servers=0"],
     "strategy 'parameter_server' needs 1 to 4 parameter servers", REFUSED),
    (["submit", "training", "--host", "http://127.0.0.1:9", "--set", "input_uri=gs://b/x",
      "--set", "label=y"], "could not start 'training' on http://127.0.0.1:9", REFUSED),
])
def test_bad_pipeline_requests_are_refused_before_anything_runs(args, message, status, capsys,
                                                                 tmp_path):
    assert main(args + (["--pipeline-root", str(tmp_path)] if args[0] == "run" else [])) == (
        status)
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_an_unknown_pipeline_exits_as_argparse_does_for_its_own_usage_errors(capsys):
    """`tfkfp run nosuch` exits 2, like an unknown option; one line saying what is known."""
    with pytest.raises(SystemExit) as parsed:
        main(["run", "training", "--nosuch-option"])
    assert parsed.value.code == 2
    capsys.readouterr()
    assert main(["run", "nosuch"]) == 2
    from tfkfp.pipelines import registry

    assert capsys.readouterr().err.splitlines() == [
        f"tfkfp run: error: no pipeline 'nosuch'; the pipelines are {', '.join(registry.names())}"]


def test_local_is_accepted_and_said_to_be_the_default(tmp_path, capsys, monkeypatch):
    from tfkfp.cli import local_run

    started = []
    monkeypatch.setattr(local_run, "run_local", lambda *a, **k: started.append(a))
    monkeypatch.setattr(local_run, "summary_lines", lambda run: [])
    csv = write_csv(tmp_path / "in.csv", ["x", "label"], [[1, 0]])
    sets = ["--set", f"input_uri={csv}", "--set", "label=label"]
    assert main(["run", "training", "--local", *sets]) == 0
    assert "--local is the default" in capsys.readouterr().err
    assert main(["run", "training", *sets]) == 0
    assert "--local" not in capsys.readouterr().err and len(started) == 2


# What each pipeline needs besides the parameter under test.
GIVEN = {"training": ["input_uri=in.csv", "label=label"],
         "batch_prediction": ["model_uri=model", "dataset_uri=data"],
         "edge_export": ["model_uri=model", "dataset_uri=data"]}
CSV = ["model_uri=m", "input_uri=c.csv"]  # batch_prediction from files to shard
SHARD = "(step shard_tfrecords)"
QUANTIZE = "(step freeze_quantize)"
QUANTIZATION = (f"quantization 'int3' is not one of none, dynamic, float16, int8, int16x8, "
                f"auto {QUANTIZE}")
OUTPUT_FORMAT = ("output_format 'xml' is not one of jsonl, csv, tfrecord "
                 "(step batch_predict)")
LAYOUT = f"layout 'rows' is not one of columns, packed, blocks {SHARD}"
FILE_GROUPS = "file_groups 0: the group count must be at least 1"
ERROR_FRACTION = ("is outside [0, 1]; it is the largest share of rows that may fail (e.g. 0.01: "
                  "1%; 1: never fail on error rows)")


def refused(name, settings, message, command="run"):
    """``tfkfp COMMAND NAME`` with the pipeline's GIVEN settings, or ``settings`` where it is
    a list, and the last of ``settings``: refused with ``message``."""
    given = settings if isinstance(settings, list) else [*GIVEN[name], settings]
    return command, name, [arg for setting in given for arg in ("--set", setting)], message


@pytest.mark.parametrize("command,name,sets,message", [
    refused("training", "quantization=int3", QUANTIZATION),
    refused("training", "output_format=xml", OUTPUT_FORMAT),
    refused("training", "compression=zstd",
            f"compression 'zstd' is not one of none, gzip {SHARD}"),
    refused("training", "eval_fraction=1.5", "eval_fraction 1.5 is outside (0, 1); expected e.g. "
            f"0.1 for 10% of rows in the eval split {SHARD}"),
    refused("training", "missing=drop",
            f"missing 'drop' is not one of impute, error {SHARD}"),
    refused("training", "layout=rows", LAYOUT),
    refused("training", "file_groups=0", FILE_GROUPS),
    refused("training", 'column_types={"zip": "float64"}',
            f'column_types {{"zip": "float64"}}: types must be float32, int64 or string {SHARD}'),
    refused("training", "input_format=xls", "input_format 'xls' is not one of auto, csv, jsonl, "
            f"parquet, npz, images {SHARD}", "submit"),
    refused("training", "max_error_fraction=2",
            f"max_error_fraction 2.0 {ERROR_FRACTION} (step batch_predict)"),
    refused("training", "min_agreement=1.5",
            "min_agreement 1.5 is outside [0, 1] (step export_tflite)"),
    refused("training", "warm_start_model_uri=minio://b/model",
            "warm_start_model_uri 'minio://b/model': train reads the earlier model with "
            "tf.io.gfile, which reads local paths and gs://..., file://... URIs; copy the model "
            "there, or mount it and give its path", "submit"),
    refused("training", "quantization=int3", QUANTIZATION, "submit"),
    refused("batch_prediction", ["model_uri=model"],
            "there is nothing to predict: pass --set dataset_uri=... (a Dataset directory of "
            "TFRecord shards) or --set input_uri=... (files to shard)"),
    refused("batch_prediction", "output_format=xml", OUTPUT_FORMAT),
    refused("batch_prediction", "top_k=0", "top_k 0 is below 1 (step batch_predict)"),
    refused("batch_prediction", "predict_batch_size=0",
            "predict_batch_size 0 is below 1 (step batch_predict)"),
    refused("batch_prediction", "file_groups=0", FILE_GROUPS),
    refused("batch_prediction", "split=test", "split 'test' is not one of all, train, eval"),
    refused("batch_prediction", "max_error_fraction=-0.5",
            f"max_error_fraction -0.5 {ERROR_FRACTION} (step merge_predictions)"),
    refused("batch_prediction", [*CSV, 'column_types={"id": "text"}'],
            f'column_types {{"id": "text"}}: types must be float32, int64 or string {SHARD}'),
    refused("batch_prediction", [*CSV, "num_shards=-1"],
            "num_shards -1 / shard_size_mb 128.0: expected num_shards >= 1, or num_shards 0 and "
            f"shard_size_mb > 0 {SHARD}", "submit"),
    refused("batch_prediction", [*CSV, "layout=rows"], LAYOUT),
    refused("edge_export", "quantization=int3", QUANTIZATION),
    refused("edge_export", "calibration_examples=0", "calibration_examples 0: the calibration set "
            f"would be empty; expected e.g. 100-500 {QUANTIZE}"),
    refused("edge_export", "eval_examples=0", f"eval_examples 0 is below 1 {QUANTIZE}"),
    refused("edge_export", "min_agreement=2",
            "min_agreement 2.0 is outside [0, 1] (step export_tflite)", "submit"),
    refused("edge_export", 'input_mapping={"input_1": 3}', "input_mapping {'input_1': 3}: expected "
            f"an object of signature input name -> Dataset column name, both strings {QUANTIZE}"),
])
def test_a_parameter_checkable_without_data_is_refused_before_anything_starts(
        command, name, sets, message, tmp_path, capsys, monkeypatch):
    from tfkfp.cli import local_run, submit

    started = []
    monkeypatch.setattr(local_run, "run_local", lambda *a, **k: started.append(a))
    monkeypatch.setattr(submit, "submit", lambda *a, **k: started.append(a))
    where = (["--pipeline-root", str(tmp_path)] if command == "run"
             else ["--host", "http://127.0.0.1:9"])
    assert main([command, name, *where, *sets]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == f"tfkfp {command}: error: pipeline {name!r}: {message}"
    assert not started and not any(tmp_path.iterdir())


@pytest.mark.slow
def test_a_data_error_in_a_task_ends_the_command_with_the_tasks_own_message(
        table_csv, tmp_path, capsys):
    csv = table_csv[0]
    assert main(["run", "training", "--pipeline-root", str(tmp_path), "--set",
                 f"input_uri={csv}", "--set", "label=nosuch"]) == 1
    out, err = capsys.readouterr()
    assert err.strip().splitlines()[-1] == (
        f"tfkfp run: error: shard-tfrecords: label column 'nosuch' is not in {csv}; its "
        "columns are ['id', 'x', 'y', 'color', 'animal']")
    assert "Inner task failed" not in out + err and "Traceback" not in out + err
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and failed[0].startswith("FAILED shard-tfrecords ")
    log = failed[0].split("its log: ")[1]
    assert "ShardInputError: label column 'nosuch'" in open(log).read()  # the traceback


@pytest.mark.parametrize("message,shown", [
    ("Error executing an HTTP request: libcurl code 6 meaning 'Could not resolve hostname'"
     "\n\t when reading metadata of gs://tfkfp-nothing/data.csv",
     "Error executing an HTTP request: libcurl code 6 meaning 'Could not resolve hostname' "
     "when reading metadata of gs://tfkfp-nothing/data.csv"),
    ("Could not resolve host: www.googleapis.com",
     "Could not resolve host: www.googleapis.com (input gs://tfkfp-nothing/data.csv, output "
     "OUT)"),
])
def test_a_remote_path_that_cannot_be_reached_is_one_line_naming_it(
        message, shown, tmp_path, capsys, monkeypatch):
    import tensorflow as tf

    from tfkfp.components.shard_tfrecords import core

    def unreachable(*args, **kwargs):
        raise tf.errors.FailedPreconditionError(None, None, message)

    monkeypatch.setattr(core, "shard_tfrecords", unreachable)
    out = str(tmp_path / "out")
    assert main(["shard", "gs://tfkfp-nothing/data.csv", out, "--label", "label"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"tfkfp shard: error: FailedPreconditionError: {shown.replace('OUT', out)}"]


def test_ctrl_c_ends_a_command_with_a_line_not_a_traceback(monkeypatch, capsys):
    from tfkfp.cli import main as cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_run", interrupted)
    assert main(["run", "training", "--local", "--set", "input_uri=x.csv",
                 "--set", "label=label"]) == 130
    err = capsys.readouterr().err
    assert "tfkfp run: interrupted" in err and "Traceback" not in err


DIGEST = "sha256:" + "0123456789abcdef" * 4
PINNED = [f"europe-docker.pkg.dev/acme/ml/tfkfp@{DIGEST}",
          f"europe-docker.pkg.dev/acme/ml/tfkfp:2024.1@{DIGEST}"]


def compiled_images(path):
    import yaml

    spec = next(yaml.safe_load_all(open(path)))
    return {e["container"]["image"] for e in spec["deploymentSpec"]["executors"].values()
            if "container" in e}


@pytest.mark.parametrize("image", PINNED)
def test_compile_keeps_an_image_named_by_digest_exactly_as_given(image, tmp_path):
    assert main(["compile", "--image", image, "--out", str(tmp_path)]) == 0
    assert compiled_images(tmp_path / "training.yaml") == {image}


def test_a_digest_with_gpu_steps_is_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["compile", "--image", PINNED[0], "--gpus", "1", "--out", str(out)]) == 1
    assert "cannot name its GPU variant (TAG-gpu)" in capsys.readouterr().err
    assert not out.exists()


def build(tmp_path, push=""):
    """scripts/build-image.sh with a stand-in docker client that reports a digest and an ID;
    the record it writes."""
    fake = tmp_path / "docker"
    fake.write_text("#!/usr/bin/env bash\n"
                    'if [[ "$1 $2" == "image inspect" ]]; then\n'
                    f'  [[ $4 == *Id* ]] && echo "{DIGEST}" || '
                    f'echo "reg.example/ml/tfkfp@{DIGEST}"\n'
                    "fi\n")
    fake.chmod(0o755)
    record = tmp_path / "built-image.txt"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    subprocess.run([os.path.join(root, "scripts", "build-image.sh"), "cpu"], check=True,
                   env={**os.environ, "DOCKER": str(fake), "RECORD": str(record),
                        "PUSH": push}, capture_output=True)
    return record


def test_image_auto_compiles_the_digest_the_build_script_recorded_after_a_push(
        tmp_path, monkeypatch):
    from tfkfp.pipelines import images

    monkeypatch.setattr(images, "BUILT", build(tmp_path, push="reg.example/ml/tfkfp"))
    assert main(["compile", "--image", "auto", "--out", str(tmp_path / "out")]) == 0
    assert compiled_images(tmp_path / "out" / "training.yaml") == {
        f"reg.example/ml/tfkfp@{DIGEST}"}


def test_image_auto_refuses_without_a_record_or_with_a_local_build(tmp_path, monkeypatch,
                                                                   capsys):
    from tfkfp.pipelines import images

    monkeypatch.setattr(images, "BUILT", tmp_path / "none.txt")
    assert main(["compile", "--image", "auto", "--out", str(tmp_path / "out")]) == 1
    assert "none.txt does not exist: no build has recorded an image" in \
        capsys.readouterr().err
    monkeypatch.setattr(images, "BUILT", build(tmp_path))  # built here, never pushed
    assert main(["compile", "--image", "auto", "--out", str(tmp_path / "out")]) == 1
    assert (f"records a local build (tfkfp/tfkfp:0.1.0, image ID {DIGEST}), which no "
            "registry holds by digest") in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
