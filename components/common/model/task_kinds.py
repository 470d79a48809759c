"""What a model learns from its label, one table: classes (classification) or a number
(regression). Each kind says whether its model answers classes (named in ``labels.txt``) or a
value, the SavedModel's outputs, and what train takes for it: the losses and the eval figures
a target can be set on.

The SavedModel contract (common.model.savedmodel, bundle), the training request's checks
(common.training.config) and the training tasks (common.training.tasks, whose task objects
give the head, the loss, the evaluation and its report) all read it, so a kind whose model is
built from these properties is one entry here plus its task object in common.training.tasks.
"""

import dataclasses
from typing import Dict, Tuple


@dataclasses.dataclass(frozen=True)
class TaskKind:
    name: str
    classes: bool  # answers classes named in labels.txt; else one value per row
    outputs: Tuple[str, ...]  # the SavedModel's outputs
    losses: Tuple[str, ...]  # the losses train takes for it; the first is the default
    target_metrics: Tuple[str, ...]  # eval figures a target can be set on; first: default
    summary: str  # one line for help texts and docs


TASK_KINDS: Dict[str, TaskKind] = {kind.name: kind for kind in (
    TaskKind("classification", classes=True, outputs=("probabilities", "class_ids", "classes"),
             losses=("crossentropy",), target_metrics=("accuracy", "loss"),
             summary="the label's classes: an integer or string label with a vocabulary"),
    TaskKind("regression", classes=False, outputs=("value",), losses=("mse", "huber"),
             target_metrics=("rmse", "mae", "r2", "loss"),
             summary="the label's value: a float (or integer) label"),
)}
DEFAULT_TASK = "classification"  # what a model that records no task is (earlier models)


def names() -> Tuple[str, ...]:
    """The kinds' names, in the table's order (for messages and choices)."""
    return tuple(TASK_KINDS)


def kind(name: str) -> TaskKind:
    return TASK_KINDS[name]


def losses() -> Tuple[str, ...]:
    """Every loss train takes, the kinds' in the table's order."""
    return tuple(loss for k in TASK_KINDS.values() for loss in k.losses)


def of_outputs(outputs) -> str:
    """The kind whose outputs are exactly ``outputs``'s names; else the default."""
    found = [k.name for k in TASK_KINDS.values() if set(outputs) == set(k.outputs)]
    return found[0] if found else DEFAULT_TASK
