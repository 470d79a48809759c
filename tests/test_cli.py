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
def test_demo_shards_and_reads_back_the_digits(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "read back 1797 rows" in out and "identical" in out
