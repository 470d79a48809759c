"""The progress a running task reports on the console: the steps' one line format read back,
an updating line per task in a terminal, plain periodic lines when piped, none when quiet."""

import io
import os
import pty
import threading
import time

import pytest
from kfp import dsl

from tfkfp.cli import local_run
from tfkfp.cli.progress_view import ProgressView, plain_line
from tfkfp.components.common.platform.progress import Event, line, parse

# as they stand in a task's log: kfp's indent, the step's logging prefix
TRAIN_LOG = """\
    Epoch 1/5
    25/25 - 4s - loss: 1.3107 - accuracy: 0.7169 - val_loss: 0.4578 - val_accuracy: 0.9030
    INFO:tfkfp:training: 1/5 epochs, 0.23 epochs/s, 20%, ETA 17s; loss 1.311, val_accuracy 0.903
    Epoch 2/5
    INFO:tfkfp:training: 2/5 epochs, 0.44 epochs/s, 40%, ETA 7s; loss 0.2792, val_accuracy 0.9576
    INFO:tfkfp:training: 5/5 epochs, 0.91 epochs/s, 100%; loss 0.08638, val_accuracy 0.9879
"""
PREDICT_LOG = "    [KFP Executor 2026-11-28 14:26:49,437 INFO]: predicting: 12.3k/50.0k " \
              "records, 2.6k records/s, 25%, ETA 14s\n"


@pytest.mark.parametrize("written", [
    line("predicting", 12345, "records", 4.7, 50000),
    line("training", 2, "epochs", 4.7, 5, {"loss": "0.279", "val_accuracy": "0.958"}),
    line("reading and encoding", 272600, "bytes", 0.2),
    line("tuning", 3, "trials", 30.0, 20, {"best": "0.9123 (trial 2)"}),
    line("streaming", 1200, "messages", 12.0, figures={"predicted": "1,199"}),
])
@pytest.mark.parametrize("prefix", ["", "INFO:tfkfp:", "    [KFP Executor 2026-11-28 INFO]: "])
def test_every_progress_line_reads_back_as_it_was_written(written, prefix):
    assert parse(prefix + written + "\n").text == written


@pytest.mark.parametrize("other", [
    "Epoch 1/5",
    "25/25 - 4s - loss: 1.3107 - accuracy: 0.7169 - val_loss: 0.4578",
    "INFO:tfkfp:input: 12345 records/s read cold, 6789 records/s parsed",
    "INFO:tfkfp:tune: trial 3 complete accuracy=0.9100 {'learning_rate': 0.01}",
    "done   batch-predict  5.1 s  165 predictions, 0 errors, 332 records/s",
])
def test_other_log_lines_are_not_progress(other):
    assert parse(other) is None


def test_the_line_says_count_rate_share_eta_and_figures():
    assert line("predicting", 12345, "records", 5.0, 50000) == \
        "predicting: 12.3k/50.0k records, 2.5k records/s, 25%, ETA 15s"
    assert parse(line("training", 2, "epochs", 5.0, 5, {"loss": "0.3"})) == Event(
        "training", "2", "5", "epochs", "0.4", 40, 8, "loss 0.3")
    # a resumed run's rate counts the epochs it ran, not those it resumed from
    assert line("training", 4, "epochs", 2.0, 5, counted_from=2) == \
        "training: 4/5 epochs, 1 epochs/s, 80%, ETA 1s"


def _piped(every_s: float):
    console = io.StringIO()
    view = ProgressView(console, every_s=every_s)
    assert not view.terminal
    return console, view


def test_piped_a_task_gets_its_first_progress_line_then_one_per_period():
    console, view = _piped(every_s=3600)
    with view:
        view.started("train")
        for part in (TRAIN_LOG[:150], TRAIN_LOG[150:]):  # lines arrive in any pieces
            view.feed("train", part)
        view.feed("batch-predict", PREDICT_LOG)  # not started: not shown
        view.ended("train")
        view.say("done   train")
    assert console.getvalue().splitlines() == [
        "       train  training: 1/5 epochs, 0.23 epochs/s, 20%, ETA 17s; loss 1.311, "
        "val_accuracy 0.903", "done   train"]


def test_piped_every_event_is_printed_when_the_period_has_passed():
    console, view = _piped(every_s=0)
    with view:
        view.started("train")
        view.feed("train", TRAIN_LOG)
    assert [s.split(":")[1].split(",")[0] for s in console.getvalue().splitlines()] == [
        " 1/5 epochs", " 2/5 epochs", " 5/5 epochs"]


def test_a_plain_line_names_its_task_under_the_start_lines_names():
    event = parse(PREDICT_LOG)
    assert plain_line("batch-predict", event) == ("       batch-predict  predicting: 12.3k/50.0k "
                                                  "records, 2.6k records/s, 25%, ETA 14s")


class Terminal:
    """A pseudo-terminal whose output a thread keeps reading (a full one blocks writers)."""

    def __init__(self):
        self.master, slave = pty.openpty()
        self.file = open(slave, "w", encoding="utf-8")  # closed in text()
        self.data = bytearray()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.data += chunk

    def text(self) -> str:
        self.file.close()
        self.reader.join(timeout=5)
        os.close(self.master)
        return self.data.decode("utf-8", "replace")


@pytest.fixture
def terminal(monkeypatch):
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("COLUMNS", "120")
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    return Terminal()


def test_in_a_terminal_a_running_task_has_an_updating_line(terminal):
    view = ProgressView(terminal.file)
    assert view.terminal
    with view:
        view.say("start  train")
        view.started("train")
        view.feed("train", TRAIN_LOG.split("Epoch 2/5")[0])
        time.sleep(0.6)  # the live display redraws a few times a second
        view.ended("train")
        view.say("done   train")
    shown = terminal.text()
    start, done = shown.index("start  train"), shown.index("done   train")
    assert "1/5 epochs, ETA 17s; loss 1.311, val_accuracy 0.903" in shown[start:done]
    assert "\x1b[" in shown  # redrawn in place, by the progress library
    assert "1/5 epochs" not in shown[done:]  # an ended task's line goes with it


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def fit_like(epochs: int) -> str:
    import logging
    import time

    from tfkfp.components.common.platform import progress

    logging.basicConfig(level=logging.INFO)
    started = time.monotonic()
    for epoch in range(1, epochs + 1):
        time.sleep(0.3)
        progress.report("training", epoch, "epochs", time.monotonic() - started, epochs,
                        {"loss": f"{1 / epoch:.3f}"})
    return "model"


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def predict_like(model: str, records: int) -> str:
    import logging
    import time

    from tfkfp.components.common.platform.progress import Progress

    logging.basicConfig(level=logging.INFO)
    counted = Progress("predicting", total=records, every_s=0.2)
    for _ in range(4):
        time.sleep(0.25)
        counted.update(records / 4)
    counted.finish()
    return model + " predictions"


@dsl.pipeline(name="progressing")
def progressing(epochs: int = 3, records: int = 1000) -> str:
    """Trains and predicts, saying how far it got."""
    return predict_like(model=fit_like(epochs=epochs).output, records=records).output


def _between(lines, task):
    start = lines.index(next(s for s in lines if s.startswith(f"start  {task}")))
    done = lines.index(next(s for s in lines if s.startswith(f"done   {task}")))
    return lines[start + 1:done]


def test_a_piped_run_prints_plain_progress_lines_between_start_and_done(tmp_path):
    console = io.StringIO()
    local_run.run_pipeline(progressing, {}, str(tmp_path), console=console)
    lines = console.getvalue().splitlines()
    assert _between(lines, "fit-like")[0].startswith(
        "       fit-like  training: 1/3 epochs, ")
    assert _between(lines, "predict-like")[0].startswith(
        "       predict-like  predicting: ")
    assert "\x1b" not in console.getvalue()


def test_a_quiet_run_prints_no_progress(tmp_path):
    console = io.StringIO()
    local_run.run_pipeline(progressing, {}, str(tmp_path), console=console, progress=False)
    lines = console.getvalue().splitlines()
    assert _between(lines, "fit-like") == _between(lines, "predict-like") == []


def test_a_run_in_a_terminal_shows_progress_between_start_and_done(tmp_path, terminal):
    local_run.run_pipeline(progressing, {}, str(tmp_path), console=terminal.file)
    shown = terminal.text()
    for task, progress in (("fit-like", "3/3 epochs"), ("predict-like", "1.0k/1.0k records")):
        start, done = shown.index(f"start  {task}"), shown.index(f"done   {task}")
        assert progress in shown[start:done]
