import os
import subprocess
import sys

import pytest

from conftest import write_csv
from tfkfp.pipelines.cli import main


def test_shard_command_writes_a_dataset(table_csv, tmp_path, capsys):
    out = tmp_path / "ds"
    code = main(["shard", table_csv[0], str(out), "--label", "animal", "--key", "id",
                 "--eval-fraction", "0.25", "--num-shards", "3", "--compression", "gzip",
                 "--column-type", "x=float32"])
    assert code == 0
    assert sorted(os.listdir(out / "train")) == [
        f"data-{k:05d}-of-00003.tfrecord.gz" for k in range(3)]
    assert "| train |" in capsys.readouterr().out


def test_shard_command_fails_with_the_error_on_stderr(tmp_path):
    path = write_csv(tmp_path / "r.csv", ["x", "label"], [[1, 0], [2]])
    proc = subprocess.run([sys.executable, "-m", "tfkfp.pipelines.cli", "shard", path,
                           str(tmp_path / "out"), "--label", "label"],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "r.csv, line 3: ragged row" in proc.stderr
    assert proc.stdout == ""


def test_shard_size_and_count_are_exclusive(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["shard", "in.csv", "out", "--shard-size", "10", "--num-shards", "2"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_bad_column_type_option(table_csv, tmp_path, capsys):
    assert main(["shard", table_csv[0], str(tmp_path / "o"), "--label", "animal",
                 "--column-type", "x"]) == 1
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
    accuracy = float(out.split("eval accuracy")[1].split()[0])
    assert accuracy > 0.9
    assert "examples/s" in out and "SavedModel" in out
    assert list((tmp_path / "pipeline_root").rglob("saved_model.pb"))


def test_compile_writes_every_pipeline(tmp_path, capsys):
    from tfkfp.pipelines import registry

    assert main(["compile", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{n}.yaml" for n in registry.names()]


@pytest.mark.parametrize("args,message", [
    (["run", "training", "--local", "--set", "epoch=3"],
     "pipeline 'training' has no parameter 'epoch'; its parameters are batch_size"),
    (["run", "training", "--local", "--set", "input_uri=x", "--set", "epochs=three"],
     "--set epochs='three': epochs takes a value of type Integer"),
    (["run", "training", "--local"], "pipeline 'training' needs input_uri"),
    (["run", "nope", "--local"], "no pipeline 'nope'; the pipelines are"),
    (["run", "training", "--local", "--set", "input_uri=x", "--set", "launcher=tfjb"],
     "pipeline 'training': launcher 'tfjb' is not known; expected one of local, tfjob, trainjob, "
     "vertex"),
    (["run", "training", "--local", "--set", "input_uri=x", "--set", "launcher=tfjob",
      "--set", 'launcher_options={"gpu": 1}'],
     "launcher_options ['gpu'] are not known to launcher 'tfjob'; allowed: backoff_limit"),
    (["submit", "training", "--host", "http://127.0.0.1:9", "--set", "input_uri=x",
      "--set", "strategy=parameter_server", "--set", "parameter_servers=0"],
     "strategy 'parameter_server' needs 1 to 4 parameter servers"),
    (["submit", "training", "--host", "http://127.0.0.1:9", "--set", "input_uri=x"],
     "could not start 'training' on http://127.0.0.1:9"),
])
def test_bad_pipeline_requests_are_refused_before_anything_runs(args, message, capsys,
                                                                 tmp_path):
    assert main(args + (["--pipeline-root", str(tmp_path)] if args[0] == "run" else [])) == 1
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
