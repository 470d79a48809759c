"""``tfkfp run training`` on the demo digits shows its tasks' progress: an updating line per
running task in a terminal, plain lines when piped (a CI log), none with --quiet."""

import os
import pty
import re
import subprocess
import sys

import pytest

from tfkfp.components.common.data.demo_data import write_demo_data

RUN = "import sys; from tfkfp.cli.main import main; sys.exit(main())"
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture(scope="module")
def digits(tmp_path_factory) -> str:
    return write_demo_data(str(tmp_path_factory.mktemp("data"))).csv


def _command(csv: str, root: str, *flags: str):
    return [sys.executable, "-c", RUN, "run", "training", "--set", f"input_uri={csv}",
            "--set", "label=label", "--set", 'keys=["id"]', "--set", "epochs=3",
            "--pipeline-root", root, *flags]


def _in_a_terminal(command) -> str:
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "120"}
    with subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, env=env) as run:
        os.close(slave)
        shown = bytearray()
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal's other end closed: the run ended
                break
            if not chunk:
                break
            shown += chunk
        assert run.wait(timeout=600) == 0, shown.decode(errors="replace")[-3000:]
    os.close(master)
    return shown.decode("utf-8", "replace")


def _between(text: str, task: str) -> str:
    start = re.search(rf"start  {re.escape(task)}\r?\n", text).end()
    return text[start:text.index(f"done   {task} ", start)]


@pytest.mark.slow
def test_in_a_terminal_train_and_batch_predict_show_progress_before_they_end(digits, tmp_path):
    shown = _in_a_terminal(_command(digits, str(tmp_path)))
    train = ESCAPES.sub("", _between(shown, "train"))
    epochs = r"train .*3/3 epochs(, [^;]*)?; loss [\d.]+, val_accuracy [\d.]+"
    assert re.search(epochs, train), train
    assert "165/165 records" in ESCAPES.sub("", _between(shown, "batch-predict"))
    assert "pipeline 'training' finished" in shown


@pytest.mark.slow
def test_piped_the_same_run_prints_plain_progress_lines(digits, tmp_path):
    piped = subprocess.run(_command(digits, str(tmp_path)), capture_output=True, text=True,
                           check=True, timeout=600).stdout
    assert "\x1b" not in piped and "\r" not in piped
    train = _between(piped, "train").splitlines()
    assert train and all(line.startswith("       train  training: ") for line in train)
    assert re.match(r"       train  training: 1/3 epochs, [\d.]+ epochs/s, 33%, ETA \d+s; "
                    r"loss [\d.]+, val_accuracy [\d.]+$", train[0]), train
    predict = _between(piped, "batch-predict").splitlines()
    assert predict and predict[0].startswith("       batch-predict  predicting: ")
