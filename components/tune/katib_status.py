"""Reading a Katib Experiment's status: its trials as they end, and its optimal trial.

A trial's figures come from the files it wrote under ``<trials_dir>/<trial name>/``
(katib_trial.py): its settings, train's result and per-epoch history. So the step needs
read access to the trials' storage only, not to Katib's Trial resources or its database.
"""

import json
import logging
from typing import Any, Dict, List, Tuple

from tfkfp.components.common.platform import uris
from tfkfp.components.common.training.config import HISTORY_FILE, RESULT_FILE
from tfkfp.components.tune.errors import TrialFailed
from tfkfp.components.tune.katib_trial import setting
from tfkfp.components.tune.trials import figures

log = logging.getLogger("tfkfp")
# The experiment status lists of ended trials, as the report says their states.
STATES = {"succeededTrialList": "complete", "earlyStoppedTrialList": "pruned",
          "failedTrialList": "failed", "killedTrialList": "failed",
          "metricsUnavailableTrialList": "failed"}
NOTES = {"earlyStoppedTrialList": "early-stopped by medianstop",
         "killedTrialList": "killed", "failedTrialList": "its Job failed; see its trial.log",
         "metricsUnavailableTrialList": "reported no metric to Katib's collector"}


def condition(status: Dict[str, Any], types: Tuple[str, ...]) -> Dict[str, Any] | None:
    """The newest true condition among ``types``, if any."""
    true = [c for c in status.get("conditions") or []
            if c.get("status") == "True" and c.get("type") in types]
    return true[-1] if true else None


def _json(uri: str) -> Dict[str, Any]:
    try:
        return json.loads(uris.read_text(uri))
    except Exception:  # noqa: BLE001 - a trial that died early wrote nothing: no figures
        return {}


def trial_row(trials_dir: str, name: str, listed: str, objective: str) -> Dict[str, Any]:
    """One trial as the report's row, from the files it left."""
    folder = uris.join(trials_dir, name)
    result = _json(uris.join(folder, RESULT_FILE))
    history = _json(uris.join(folder, "checkpoints", HISTORY_FILE))
    curve = history.get("val_" + objective[len("eval_"):], [])
    value = result.get(objective, curve[-1] if curve else None)
    return {"number": name, "state": STATES[listed], "value": value, "epochs": len(curve),
            "seconds": None, "settings": _json(uris.join(folder, "settings.json")),
            "note": NOTES.get(listed, "")}


class TrialLog:
    """Logs each trial once, when it first appears in an ended list; keeps the rows."""

    def __init__(self, objective: str, trials_dir: str):
        self.objective, self.trials_dir = objective, trials_dir
        self.rows: Dict[str, Dict[str, Any]] = {}

    def log_ended(self, status: Dict[str, Any]) -> None:
        for listed in STATES:
            for name in status.get(listed) or []:
                if name in self.rows:
                    continue
                row = self.rows[name] = trial_row(self.trials_dir, name, listed,
                                                  self.objective)
                value = "" if row["value"] is None else f" {self.objective}={row['value']:.4f}"
                log.info("tune: trial %s %s%s %s; %d of %s trial(s) ended", name,
                         row["state"], value, row["settings"], len(self.rows),
                         status.get("trials", "?"))


def all_rows(status: Dict[str, Any], trials_dir: str, objective: str) -> List[Dict[str, Any]]:
    return [trial_row(trials_dir, name, listed, objective)
            for listed in STATES for name in status.get(listed) or []]


def result_of(status: Dict[str, Any], what: str, trials_dir: str, model_dir: str,
              settings: Dict[str, Any], resumed: bool = False):
    """The core.TuneResult of a succeeded experiment (``resumed``: an earlier run of the
    step created it); the optimal trial's model is copied to ``model_dir``."""
    from tfkfp.components.tune.core import TuneResult

    objective = settings["objective"]
    optimal = status.get("currentOptimalTrial") or {}
    best = optimal.get("bestTrialName")
    if not best:
        raise TrialFailed(f"Katib Experiment {what} ended with no optimal trial; see the "
                          f"trial logs under {trials_dir}")
    metrics = {m.get("name"): m for m in (optimal.get("observation") or {}).get("metrics")
               or []}
    folder = uris.join(trials_dir, best)
    uris.copy_tree(uris.join(folder, "model"), model_dir)
    assigned = dict(setting(f"{a['name']}={a['value']}")
                    for a in optimal.get("parameterAssignments") or [])
    return TuneResult(
        model_dir=model_dir, study_dir=f"Katib Experiment {what}, trials in {trials_dir}",
        objective=objective, direction=settings["direction"], best_number=best,
        best_value=float(metrics.get(objective, {}).get("latest")
                         or _json(uris.join(folder, RESULT_FILE))[objective]),
        best_settings={**settings["fixed"], **assigned},
        best_metrics=figures(_json(uris.join(folder, RESULT_FILE))),
        trials=all_rows(status, trials_dir, objective), resumed=resumed)
