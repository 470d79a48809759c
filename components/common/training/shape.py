"""One description of a training cluster's shape: how many chief, worker and parameter-server
replicas a strategy runs as, taken from its entry in the strategies table. It is checked
once, before launch (``validate`` checks the whole request), and every launcher renders it:
local processes (``TF_CONFIG`` per process), a Kubeflow TFJob (replica specs), a Kubeflow
Trainer v2 TrainJob (pods of one indexed job, each task by its index) and a Vertex AI CustomJob
(worker pools)."""

import dataclasses
from typing import Dict

from tfkfp.components.common.training import strategies
from tfkfp.components.common.training.config import TrainConfig, TrainConfigError, check_fields

LAUNCHERS = ("local", "tfjob", "trainjob", "vertex")
# Local processes share one machine's cores; a cluster's size is the user's to choose, within
# what one coordinator and the operators handle comfortably.
MAX_WORKERS = {"local": 8, "tfjob": 256, "trainjob": 256, "vertex": 256}
MAX_PS = {"local": 4, "tfjob": 64, "trainjob": 64, "vertex": 64}
ROLE_NAMES = {"chief": "a chief", "worker": "workers", "ps": "parameter servers"}


def validate(config: TrainConfig, launcher: str = "local") -> None:
    """Refuse, with the allowed values, anything that would fail later in training: an
    unknown strategy, a bad field, a cluster shape the strategy or the launcher cannot run."""
    strategies.get(config.strategy)
    check_fields(config)
    ClusterShape.for_config(config).validate(launcher)


@dataclasses.dataclass(frozen=True)
class ClusterShape:
    """Replica counts per role. ``worker`` 0 is the chief when there is no ``chief``."""

    strategy: str
    chief: int = 0
    workers: int = 0
    ps: int = 0

    @classmethod
    def for_config(cls, config: TrainConfig) -> "ClusterShape":
        """Each role of the strategy's entry: one chief, ``workers`` workers,
        ``parameter_servers`` parameter servers."""
        sizes = {"chief": 1, "worker": config.workers, "ps": config.parameter_servers}
        counts = {role: sizes[role] for role in strategies.get(config.strategy).roles}
        return cls(config.strategy, chief=counts.get("chief", 0),
                   workers=counts.get("worker", 0), ps=counts.get("ps", 0))

    @property
    def replicas(self) -> Dict[str, int]:
        """Roles with at least one replica, in launch order (``TF_CONFIG`` task types)."""
        counts = {"chief": self.chief, "worker": self.workers, "ps": self.ps}
        return {role: n for role, n in counts.items() if n}

    @property
    def multi_process(self) -> bool:
        return strategies.get(self.strategy).multi_process

    def validate(self, launcher: str = "local") -> None:
        """Refuse a shape the strategy cannot run, or the launcher cannot place."""
        if launcher not in LAUNCHERS:
            raise TrainConfigError(f"launcher {launcher!r} is not known; expected one of "
                                   f"{', '.join(LAUNCHERS)}")
        strategy = strategies.get(self.strategy)
        if launcher in strategy.refused_by:
            raise TrainConfigError(f"strategy {self.strategy!r} "
                                   f"{strategy.refused_by[launcher]}")
        if self.chief not in (0, 1):
            raise TrainConfigError(f"chief={self.chief}: a cluster has at most one chief")
        if strategy.multi_process:
            self._check_roles(strategy, launcher)
        elif (self.chief, self.workers, self.ps) != (1, 0, 0):
            raise TrainConfigError(
                f"strategy {self.strategy!r} trains in one process: one chief, no workers "
                f"or parameter servers (got chief={self.chief}, workers={self.workers}, "
                f"ps={self.ps}); choose {' or '.join(strategies.names(multi_process=True))} "
                "to spread training over machines")

    def _check_roles(self, strategy: strategies.Strategy, launcher: str) -> None:
        """Each role the strategy runs as within the launcher's limits, and no other role."""
        where = "local worker processes" if launcher == "local" else f"{launcher} workers"
        if not 1 <= self.workers <= MAX_WORKERS[launcher]:
            raise TrainConfigError(
                f"workers={self.workers} for strategy {self.strategy!r}: allowed 1 to "
                f"{MAX_WORKERS[launcher]} {where}")
        if (self.chief and "chief" not in strategy.roles) or (
                self.ps and "ps" not in strategy.roles):
            leads = "" if "chief" in strategy.roles else " (worker 0 leads)"
            runs = " and ".join(ROLE_NAMES[role] for role in strategy.roles)
            raise TrainConfigError(
                f"strategy {self.strategy!r} runs {runs} only{leads}; got chief={self.chief}, "
                f"ps={self.ps}")
        if "chief" in strategy.roles and not self.chief:
            raise TrainConfigError(
                f"strategy {self.strategy!r} needs a chief to coordinate the workers "
                "(chief=0)")
        if "ps" in strategy.roles and not 1 <= self.ps <= MAX_PS[launcher]:
            raise TrainConfigError(
                f"parameter_servers={self.ps}: strategy {self.strategy!r} needs 1 to "
                f"{MAX_PS[launcher]} parameter servers with launcher {launcher!r}")
