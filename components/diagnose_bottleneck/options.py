"""diagnose_bottleneck's settings (DiagnoseOptions), checked before anything is read or
measured. The training settings among them mean what train's do: their defaults and allowed
values are train's own (common.training.config's TrainConfig and tables, the strategies
table), so a train default changes in one place. What needs the Dataset or TensorFlow (a
model_fn's import, a TPU's presence, the label) is checked by the core. It imports no NumPy
or TensorFlow."""

import dataclasses
from typing import ClassVar, Tuple

from tfkfp.components.common.platform.step_options import StepOptions, setting
from tfkfp.components.common.training import strategies
from tfkfp.components.common.training.config import (
    MODELS,
    PRECISIONS,
    TASKS,
    TrainConfig,
    TrainConfigError,
)
from tfkfp.components.common.training.request import hidden_units

__all__ = ["IN_PROCESS", "DiagnoseOptions"]

IN_PROCESS = strategies.names(multi_process=False)  # the strategies this process can run
TRAIN = {f.name: f.default for f in dataclasses.fields(TrainConfig)
         if f.default is not dataclasses.MISSING}  # train's defaults, by setting


@dataclasses.dataclass(frozen=True)
class DiagnoseOptions(StepOptions):
    """How diagnose_bottleneck measures: the training step it measures (train's settings,
    with train's defaults and choices) and the measurement's own budget, checked when built
    (what the core takes). ``hidden_units`` may be given as text ("256,128"), as the
    component passes it; it is held as a tuple."""

    error: ClassVar = TrainConfigError

    model_name: str = setting(TRAIN["model_name"], "built-in model, as in train", MODELS)
    model_fn: str = setting(TRAIN["model_fn"], "package.module:function building the model "
                                               "instead, as in train (overrides model_name)")
    hidden_units: Tuple[int, ...] = setting(TRAIN["hidden_units"], "sizes of the dense "
                                            "layers on top, as in train (or text '256,128')")
    batch_size: int = setting(TRAIN["batch_size"], "examples per replica per step, as in "
                                                   "train")
    strategy: str = setting(TRAIN["strategy"], "tf.distribute strategy, as in train; one "
                            f"that runs in this process: {', '.join(IN_PROCESS)}",
                            strategies.names())
    precision: str = setting(TRAIN["precision"], "compute precision, as in train", PRECISIONS)
    cache: bool = setting(TRAIN["cache"], "measure with train's in-memory cache of the "
                                          "records, filled first")
    memory_limit_mb: int = setting(0, "memory training may use, in MB (0: what the host has "
                                      "available, or a GPU's memory)")
    seconds: float = setting(3.0, "wall time for each measurement (each runs at least a few "
                                  "steps)")
    task: str = setting(TRAIN["task"], "what the model learns, as in train (auto: from the "
                                       "label)", TASKS)

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden_units", hidden_units(self.hidden_units))
        super().__post_init__()

    def check(self) -> None:
        if self.model_fn:
            module_name, _, attr = self.model_fn.partition(":")
            if not module_name or not attr:  # its import is the core's (it may load TF)
                raise TrainConfigError(f"model_fn {self.model_fn!r} is not of the form "
                                       "'package.module:function'")
        if not self.batch_size > 0:
            raise TrainConfigError(f"batch_size must be positive, got {self.batch_size}")
        if self.strategy not in IN_PROCESS:
            raise TrainConfigError(
                f"strategy {self.strategy!r} runs as several processes, which "
                f"diagnose_bottleneck does not start; expected one of {', '.join(IN_PROCESS)} "
                "(diagnose one worker's step with 'default' or 'mirrored')")
        if self.memory_limit_mb < 0:
            raise TrainConfigError(f"memory_limit_mb must be 0 (what the host has) or "
                                   f"positive, got {self.memory_limit_mb}")
        if not self.seconds > 0:
            raise TrainConfigError(f"seconds must be positive, got {self.seconds}")

    def training(self) -> dict:
        """The settings that are train's (TrainConfig's fields), by name."""
        return {k: getattr(self, k) for k in self.names() if k in TRAIN}
