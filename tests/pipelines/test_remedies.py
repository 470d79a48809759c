"""The fix an error message names can be applied where the user met it: a text cell in a
number column says to set column_types, and the training pipeline takes column_types, in the
message's own spelling (JSON, as `--set` and the KFP UI take it)."""

import pytest

from tfkfp.cli.main import main

SETTINGS = {"label": "label", "keys": "id", "epochs": 1, "hidden_units": "8",
            "quantization": "dynamic", "max_accuracy_drop": 1.0, "min_agreement": 0.0,
            "max_rmse_increase": 100.0}


@pytest.fixture
def zip_codes(tmp_path):
    """A table whose zip column holds numbers but one word on line 152."""
    path = tmp_path / "zips.csv"
    lines = ["id,x,zip,label"] + [
        f"{i},{i % 10 / 10},{'unknown' if i == 150 else 10000 + i % 7},{'yes' if i % 2 else 'no'}"
        for i in range(300)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def run_training(data, root, **extra):
    sets = {"input_uri": data, **SETTINGS, **extra}
    return main(["run", "training", "--local", "--pipeline-root", str(root)]
                + [arg for k, v in sets.items() for arg in ("--set", f"{k}={v}")])


@pytest.mark.slow
def test_the_column_types_a_text_cell_asks_for_can_be_set_on_the_training_pipeline(
        zip_codes, tmp_path, capsys):
    assert run_training(zip_codes, tmp_path / "first") == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    remedy = 'set column_types {"zip": "string"}'
    assert last == (f"tfkfp run: error: shard-tfrecords: {zip_codes}, line 152, column 'zip': "
                    f"found 'unknown', expected float32 (most values of the column are "
                    f"numbers; {remedy} if it is text)")
    assert run_training(zip_codes, tmp_path / "second",
                        column_types=remedy.removeprefix("set column_types ")) == 0
    assert "done   train" in capsys.readouterr().out
