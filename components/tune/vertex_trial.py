"""One Vertex AI tuning trial: ``python -m tfkfp.components.tune.vertex_trial REQUEST_JSON``,
to which Vertex AI appends the trial's settings as ``--name=value`` arguments.

Vertex AI sets ``AIP_MODEL_DIR`` to ``<base_output_directory>/<trial id>/model/``: the trial
trains there (katib_trial.train_trial, as a Katib trial does) and reports its objective
after every epoch in the file Vertex AI reads, as the ``cloudml-hypertune`` package writes
it (that package exists only as a pre-release, 0.1.0.dev6): JSON lines of ``timestamp``,
``trial``, the metric and ``global_step``, the last 100 entries, at
``CLOUD_ML_HP_METRIC_FILE`` (default ``/tmp/hypertune/output.metrics``).
"""

import collections
import json
import os
import sys
import time
from typing import Any, Dict, List, Tuple

from tfkfp.components.tune.katib_trial import setting, train_trial

METRIC_FILE = "/tmp/hypertune/output.metrics"  # hypertune's _DEFAULT_METRIC_PATH
KEPT_ENTRIES = 100  # hypertune's _MAX_NUM_METRIC_ENTRIES_TO_PRESERVE


class HypertuneFile:
    """The metric file, rewritten whole on every report, as hypertune.HyperTune does."""

    def __init__(self):
        self.path = os.environ.get("CLOUD_ML_HP_METRIC_FILE", METRIC_FILE)
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.trial = str(os.environ.get("CLOUD_ML_TRIAL_ID", 0))
        self.entries = collections.deque(maxlen=KEPT_ENTRIES)

    def report(self, metric: str, step: int, value: float) -> None:
        self.entries.append({"timestamp": time.time(), "trial": self.trial,
                             metric: str(float(value)), "global_step": str(int(step))})
        with open(self.path, "w") as f:
            for entry in self.entries:
                f.write(json.dumps(entry, sort_keys=True) + "\n")


def arguments(argv: List[str]) -> Tuple[str, Dict[str, Any]]:
    """The request URI and the settings Vertex AI passed as ``--name=value``."""
    request_uri, *flags = argv
    return request_uri, dict(setting(flag.lstrip("-")) for flag in flags)


def trial_dir() -> str:
    model = os.environ.get("AIP_MODEL_DIR", "").rstrip("/")
    if not model.endswith("/model"):
        raise SystemExit(f"AIP_MODEL_DIR {model!r} is not <base_output_directory>/<trial>/"
                         "model/: is this running as a Vertex AI tuning trial?")
    return model[:-len("/model")]


def main(argv: List[str] | None = None) -> int:
    request_uri, settings = arguments(argv if argv is not None else sys.argv[1:])
    return train_trial(request_uri, trial_dir(), settings, HypertuneFile().report)


if __name__ == "__main__":
    sys.exit(main())
