"""One Katib trial: ``python -m tfkfp.components.tune.katib_trial REQUEST_JSON TRIAL_DIR
NAME=VALUE ...`` (katib_experiment.trial_command fills it in per trial).

It trains with the request's shared options and the trial's settings in train's own
one-process entry point, as a local trial does (trials.py), and prints
``<objective>=<value>`` after each epoch from the history train writes, the line Katib's
StdOut collector reads (its default filter, ``name=value``) and median-stop compares.
The model, the config, the result and the log go to TRIAL_DIR on shared storage, where the
step fetches the best one. Katib's values arrive as text; each is read back as the train
field's own type.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Tuple

from tfkfp.components.common.platform import uris
from tfkfp.components.common.training.config import CONFIG_FILE, HISTORY_FILE, RESULT_FILE
from tfkfp.components.common.training.request import make_config
from tfkfp.components.tune.options import FIELD_TYPES
from tfkfp.components.tune.trials import TRAIN_PROCESS

POLL_SECONDS = 1.0


def setting(assignment: str) -> Tuple[str, Any]:
    """``batch_size=64`` -> ("batch_size", 64): as the train field's type; shapes stay text."""
    name, _, text = assignment.partition("=")
    kind = FIELD_TYPES.get(name)
    if kind is int:
        return name, int(float(text))
    if kind is float:
        return name, float(text)
    return name, text


def main(argv: List[str] | None = None) -> int:
    request_uri, trial_dir, *assignments = argv if argv is not None else sys.argv[1:]
    return train_trial(request_uri, trial_dir, dict(setting(a) for a in assignments),
                       lambda name, epoch, value: print(f"{name}={value}", flush=True))


def train_trial(request_uri: str, trial_dir: str, settings: Dict[str, Any],
                report: Callable[[str, int, float], None]) -> int:
    """Train one trial in TRIAL_DIR; ``report(objective, epoch, value)`` after each epoch.
    train's exit status."""
    request = json.loads(uris.read_text(request_uri))
    paths = {k: uris.join(trial_dir, k) for k in (CONFIG_FILE, RESULT_FILE,
                                                  "settings.json", "trial.log")}
    node = os.environ.get("JOB_COMPLETION_INDEX", "0")  # a TrainJob trial's node
    if node != "0":  # each node keeps its own log; node 0 (the chief) has trial.log
        paths["trial.log"] = uris.join(trial_dir, f"trial-node-{node}.log")
    checkpoints = uris.join(trial_dir, "checkpoints")
    config = make_config(request["dataset"], uris.join(trial_dir, "model"),
                         {**request["fixed"], **settings, "checkpoint_dir": checkpoints})
    uris.makedirs(trial_dir)
    uris.write_text_atomic(paths[CONFIG_FILE], config.to_json())
    uris.write_text_atomic(paths["settings.json"], json.dumps(settings))
    signal.signal(signal.SIGTERM, _stopped)  # early stopping and deletion end the trial
    lines: List[str] = []
    process = subprocess.Popen([sys.executable, "-m", TRAIN_PROCESS, paths[CONFIG_FILE],
                                paths[RESULT_FILE]], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    pump = threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True)
    pump.start()
    try:
        _report(process, uris.join(checkpoints, HISTORY_FILE), request["objective"], report)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        pump.join(5)
        uris.write_text_atomic(paths["trial.log"], "".join(lines))
    return process.returncode


def _stopped(signum, frame):
    raise SystemExit(f"trial stopped by signal {signum}")


def _pump(stream, lines: List[str]) -> None:
    """train's own output, passed on and kept for the trial's log file."""
    for line in stream:
        lines.append(line)
        sys.stdout.write(line)
        sys.stdout.flush()


def _report(process: subprocess.Popen, history_uri: str, objective: str, report) -> None:
    """Report each new epoch's objective as train writes its history."""
    key, printed = "val_" + objective[len("eval_"):], 0
    while True:
        running = process.poll() is None
        values = _history(history_uri).get(key, [])
        for epoch, value in enumerate(values[printed:], start=printed + 1):
            report(objective, epoch, value)
        printed = max(printed, len(values))
        if not running:
            return
        time.sleep(POLL_SECONDS)


def _history(uri: str) -> Dict[str, list]:
    try:
        return json.loads(uris.read_text(uri))
    except (FileNotFoundError, ValueError):  # not written yet, or mid-replace
        return {}
    except Exception as err:  # gfile's NotFoundError is no FileNotFoundError
        if type(err).__name__ == "NotFoundError":
            return {}
        raise


if __name__ == "__main__":
    sys.exit(main())
