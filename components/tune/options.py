"""tune's settings (TuneOptions), the search-space format, the objective and the checks
made before any trial (the pipelines check requests with them before a run starts).

A search space is JSON, one entry per train setting::

    {"learning_rate": {"type": "float", "low": 1e-4, "high": 1e-1, "log": true},
     "batch_size": {"type": "categorical", "choices": [32, 64, 128]},
     "hidden_units": {"type": "categorical", "choices": ["64", "128,64"]}}

Types: ``float`` and ``int`` (``low`` < ``high``, optional ``log``; ``int`` also ``step``)
and ``categorical`` (``choices``). The same three scales exist in Katib (double, int,
categorical) and Vertex Vizier, so a space translates one to one.
"""

import dataclasses
import json
from typing import Any, ClassVar, Dict, Mapping, Tuple

from tfkfp.components.common.platform.step_options import StepOptions, setting
from tfkfp.components.common.training import strategies
from tfkfp.components.common.training.config import (
    HIGHER_IS_BETTER,
    TARGET_METRICS,
    TrainConfig,
    TrainConfigError,
    check_fields,
)
from tfkfp.components.common.training.request import make_config
from tfkfp.components.tune import engines
from tfkfp.components.tune.errors import SearchSpaceError, TuneError

# The train settings a space may tune, and the scales each allows.
SETTINGS: Dict[str, Tuple[str, ...]] = {
    "learning_rate": ("float", "categorical"),
    "batch_size": ("int", "categorical"),
    "epochs": ("int", "categorical"),
    "hidden_units": ("categorical",),  # a shape: "256,128" is two dense layers
    "optimizer": ("categorical",),
    "model_name": ("categorical",),
}
TYPES = ("float", "int", "categorical")
# For the suite's tabular models: rate on a log scale, batch, width and depth, optimizer.
DEFAULT_SPACE: Dict[str, Dict[str, Any]] = {
    "learning_rate": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
    "batch_size": {"type": "categorical", "choices": [32, 64, 128]},
    "hidden_units": {"type": "categorical", "choices": ["64", "128,64", "256,128"]},
    "optimizer": {"type": "categorical", "choices": ["adam", "rmsprop", "sgd"]},
}
DIRECTIONS = ("auto", "maximize", "minimize")
FIELD_TYPES = {f.name: f.type for f in dataclasses.fields(TrainConfig)}
ALGORITHMS = tuple(engines.ALGORITHMS["local"])
HEARTBEAT_SECONDS = 10


def parse_space(space: Mapping[str, Any] | str | None) -> Dict[str, Dict[str, Any]]:
    """The checked search space: ``space`` as a mapping or JSON text; empty: the default.

    Raises:
        SearchSpaceError: naming the setting, for an unknown setting or type, an empty
            range, a log range through zero, no choices, or a choice train refuses.
    """
    if isinstance(space, str):
        try:
            space = json.loads(space) if space.strip() else {}
        except json.JSONDecodeError as err:
            raise SearchSpaceError(f"search_space is not JSON: {err}") from err
    if not space:
        return {k: dict(v) for k, v in DEFAULT_SPACE.items()}
    if not isinstance(space, Mapping):
        raise SearchSpaceError(f"search_space must be a JSON object of settings, got "
                               f"{type(space).__name__}")
    return {name: _check_param(name, spec) for name, spec in space.items()}


def _check_param(name: str, spec: Any) -> Dict[str, Any]:
    if name not in SETTINGS:
        raise SearchSpaceError(f"search_space setting {name!r} is not a train setting tune "
                               f"can search; expected one of {', '.join(SETTINGS)}")
    if not isinstance(spec, Mapping) or spec.get("type") not in TYPES:
        raise SearchSpaceError(f"search_space {name!r}: 'type' must be one of "
                               f"{', '.join(TYPES)}, got {spec!r}")
    kind = spec["type"]
    if kind not in SETTINGS[name]:
        raise SearchSpaceError(f"search_space {name!r}: type {kind!r} does not fit this "
                               f"setting; expected {' or '.join(SETTINGS[name])}")
    if kind == "categorical":
        return _check_choices(name, spec)
    return _check_range(name, spec)


def _check_choices(name: str, spec: Mapping[str, Any]) -> Dict[str, Any]:
    choices = spec.get("choices")
    if not isinstance(choices, list) or not choices:
        raise SearchSpaceError(f"search_space {name!r}: a categorical needs a non-empty "
                               f"list of choices, got {choices!r}")
    choices = [typed(name, c) for c in choices]
    for choice in choices:
        _check_value(name, choice)
    return {"type": "categorical", "choices": choices}


def _check_range(name: str, spec: Mapping[str, Any]) -> Dict[str, Any]:
    low, high, log = spec.get("low"), spec.get("high"), bool(spec.get("log", False))
    number = float if spec["type"] == "float" else int
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)):
        raise SearchSpaceError(f"search_space {name!r}: low and high must be numbers, got "
                               f"low={low!r}, high={high!r}")
    if number is int and (low != int(low) or high != int(high)):
        raise SearchSpaceError(f"search_space {name!r}: an int range needs whole low and "
                               f"high, got low={low}, high={high}")
    if not low < high:
        raise SearchSpaceError(f"search_space {name!r}: the range is empty (low={low} >= "
                               f"high={high}); give low < high")
    if log and low <= 0:
        raise SearchSpaceError(f"search_space {name!r}: a log range must stay above zero, "
                               f"got low={low}; give low > 0 or log false")
    _check_value(name, number(low))
    checked = {"type": spec["type"], "low": number(low), "high": number(high), "log": log}
    if number is int and spec.get("step", 1) != 1:
        checked["step"] = int(spec["step"])
    return checked


def typed(name: str, value: Any) -> Any:
    """KFP hands a dict's whole numbers over as floats (64.0): back to train's int fields."""
    if FIELD_TYPES.get(name) is int and isinstance(value, float) and value.is_integer():
        return int(value)
    return value



def _check_value(name: str, value: Any) -> None:
    """A value train itself would refuse, refused here naming the setting."""
    try:
        check_fields(make_config("dataset", "model", {name: value}))
    except (TrainConfigError, TypeError) as err:
        raise SearchSpaceError(f"search_space {name!r}: value {value!r} is refused by "
                               f"train: {err}") from err


@dataclasses.dataclass(frozen=True)
class TuneOptions(StepOptions):
    """How tune searches: every setting of the step but its data paths, checked when built
    (what the pipelines check a request with before a run starts, and what the core takes):
    everything tune refuses without reading its Dataset."""

    error: ClassVar = TuneError  # SearchSpaceError, a TuneError, names a space's setting

    search_space: Dict[str, Any] | str = setting({}, "the settings searched, as a JSON "
                                                     "object (empty: the default space)")
    objective: str = setting("", "the eval figure optimised, e.g. eval_accuracy or eval_rmse "
                                 "(empty: the task's first)")
    direction: str = setting("auto", "maximize, minimize or auto (the objective's own)",
                             DIRECTIONS)
    trials: int = setting(8, "the study's trial budget, earlier runs' trials included")
    parallel_trials: int = setting(1, "trials run at a time")
    study_dir: str = setting("", "the local engine's study folder (empty: inside the model)")
    pruning: bool = setting(True, "stop trials whose per-epoch evaluation trails the median")
    algorithm: str = setting("tpe", "tpe, random, grid (categorical settings only) or "
                                    "bayesianoptimization (katib, vertex)")
    sampler_seed: int = setting(0, "the sampler's seed (0: none)")
    train_options: Dict[str, Any] = setting({}, "train settings every trial shares")
    heartbeat_seconds: int = setting(HEARTBEAT_SECONDS, "how often a running trial tells "
                                                        "the study it is alive")
    engine: str = setting("local", "where the study runs: local, katib or vertex",
                          engines.ENGINES)
    engine_options: Dict[str, Any] = setting({}, "the remote engine's options "
                                                  "(remote_options.py)")
    train_defaults: Dict[str, Any] = setting({}, "train settings for what neither the space "
                                                  "nor train_options sets")

    def check(self) -> None:
        self.parsed()
        known = sorted({"eval_" + m for names in TARGET_METRICS.values() for m in names})
        if self.objective and self.objective not in known:
            raise TuneError(f"objective {self.objective!r} is not an evaluation figure train "
                            f"reports; expected one of {', '.join(known)}")
        self.engine_settings()
        if self.engine != "local" and self.study_dir:
            raise TuneError(f"study_dir is the local engine's; engine {self.engine!r} keeps "
                            "its study itself")

    def parsed(self) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, Any]]:
        """The checked space and the train options every trial shares: ``train_options``,
        then ``train_defaults`` for the settings neither they nor the space set."""
        space = parse_space(self.search_space)
        check_budget(self.trials, self.parallel_trials, self.algorithm, space, self.engine)
        defaults = {name: typed(name, value)
                    for name, value in (self.train_defaults or {}).items() if name not in space}
        return space, fixed_settings(self.train_options or {}, space, self.engine, defaults)

    def engine_settings(self):
        """The remote engine's checked options (remote_options: KatibOptions,
        VertexOptions); None for the local engine."""
        from tfkfp.components.tune import remote_options

        return remote_options.parse(self.engine, self.engine_options)


def check_objective(objective: str, direction: str, task: str) -> Tuple[str, str]:
    """The objective (an ``eval_`` figure train reports for ``task``; empty: the task's
    first, accuracy or rmse) and its direction, ``auto`` made the figure's own (accuracy
    and R² up, losses and errors down)."""
    reported = tuple("eval_" + m for m in TARGET_METRICS[task])
    objective = objective or reported[0]
    if objective not in reported:
        raise TuneError(f"objective {objective!r}: train reports {', '.join(reported)} for "
                        f"a {task} model (the task the Dataset's label asks for)")
    if direction not in DIRECTIONS:
        raise TuneError(f"direction {direction!r} is not one of {', '.join(DIRECTIONS)}")
    if direction == "auto":
        direction = "maximize" if HIGHER_IS_BETTER[objective[len("eval_"):]] else "minimize"
    return objective, direction


def check_budget(trials: int, parallel_trials: int, algorithm: str,
                 space: Mapping[str, Mapping[str, Any]], engine: str = "local") -> None:
    if trials < 1:
        raise TuneError(f"trials must be at least 1, got {trials}")
    if parallel_trials < 1:
        raise TuneError(f"parallel_trials must be at least 1, got {parallel_trials}")
    engines.check_engine(engine, algorithm, space)
    ranges = [n for n, spec in space.items() if spec["type"] != "categorical"]
    if algorithm == "grid" and ranges:
        raise SearchSpaceError(f"algorithm 'grid' needs categorical settings only; "
                               f"range(s): {', '.join(ranges)}")


def suggest(trial, space: Mapping[str, Mapping[str, Any]]) -> Dict[str, Any]:
    """One trial's train settings, drawn from the space by Optuna's ``trial``."""
    settings = {}
    for name, spec in space.items():
        if spec["type"] == "categorical":
            settings[name] = trial.suggest_categorical(name, spec["choices"])
        elif spec["type"] == "float":
            settings[name] = trial.suggest_float(name, spec["low"], spec["high"], log=spec["log"])
        else:
            settings[name] = trial.suggest_int(name, spec["low"], spec["high"],
                                               step=spec.get("step", 1), log=spec["log"])
    return settings


def fixed_settings(options: Mapping[str, Any], space: Mapping[str, Any],
                   engine: str = "local",
                   defaults: Mapping[str, Any] | None = None) -> Dict[str, Any]:
    """The train options every trial shares (``defaults`` under ``options``), checked as
    train checks them; a setting both given in ``options`` and searched is refused (which
    would win is not obvious). Only katib runs a multi-process strategy's trial (as a
    TrainJob)."""
    options = {name: typed(name, value) for name, value in options.items()}
    both = sorted(set(options) & set(space))
    if both:
        raise SearchSpaceError(f"setting(s) {', '.join(both)} are both given and searched; "
                               "leave them out of one")
    options = {**(defaults or {}), **options}
    given = "train_options with train_defaults" if defaults else "train_options"
    try:
        config = make_config("dataset", "model", dict(options))
        check_fields(config)
        multi_process = strategies.get(config.strategy).multi_process
    except TrainConfigError as err:
        raise TuneError(f"{given} refused: {err}") from err
    if multi_process and engine != "katib":  # a trial is one train process (trials.py)
        raise TuneError(f"{given} strategy {config.strategy!r}: a trial runs in one "
                        f"process on engine {engine!r}; use one of "
                        f"{', '.join(strategies.names(multi_process=False))}, or engine "
                        "katib (multi-worker trials as TrainJobs)")
    return dict(options)


def grid(space: Mapping[str, Mapping[str, Any]]) -> Dict[str, list]:
    return {name: list(spec["choices"]) for name, spec in space.items()}

