"""One description of a training cluster's shape: how many chief, worker and parameter-server
replicas a strategy runs as. It is checked once, before launch, and every launcher renders
it: local processes (``TF_CONFIG`` per process), a Kubeflow TFJob (replica specs) and a
Vertex AI CustomJob (worker pools)."""

import dataclasses
from typing import Dict

from tfkfp.components.train.config import MULTI_PROCESS, TrainConfig, TrainConfigError

LAUNCHERS = ("local", "tfjob", "vertex")
# Local processes share one machine's cores; a cluster's size is the user's to choose, within
# what one coordinator and the operators handle comfortably.
MAX_WORKERS = {"local": 8, "tfjob": 256, "vertex": 256}
MAX_PS = {"local": 4, "tfjob": 64, "vertex": 64}


@dataclasses.dataclass(frozen=True)
class ClusterShape:
    """Replica counts per role. ``worker`` 0 is the chief when there is no ``chief``."""

    strategy: str
    chief: int = 0
    workers: int = 0
    ps: int = 0

    @classmethod
    def for_config(cls, config: TrainConfig) -> "ClusterShape":
        """multi_worker_mirrored: N workers. parameter_server: a chief (the coordinator), N
        workers, P parameter servers. In-process strategies: one chief."""
        if config.strategy == "multi_worker_mirrored":
            return cls(config.strategy, workers=config.workers)
        if config.strategy == "parameter_server":
            return cls(config.strategy, chief=1, workers=config.workers,
                       ps=config.parameter_servers)
        return cls(config.strategy, chief=1)

    @property
    def replicas(self) -> Dict[str, int]:
        """Roles with at least one replica, in launch order (``TF_CONFIG`` task types)."""
        counts = {"chief": self.chief, "worker": self.workers, "ps": self.ps}
        return {role: n for role, n in counts.items() if n}

    @property
    def multi_process(self) -> bool:
        return self.strategy in MULTI_PROCESS

    def validate(self, launcher: str = "local") -> None:
        """Refuse a shape the strategy cannot run, or the launcher cannot place."""
        if launcher not in LAUNCHERS:
            raise TrainConfigError(f"launcher {launcher!r} is not known; expected one of "
                                   f"{', '.join(LAUNCHERS)}")
        where = "local worker processes" if launcher == "local" else f"{launcher} workers"
        if launcher == "tfjob" and self.strategy == "tpu":
            raise TrainConfigError("strategy 'tpu' cannot run as a TFJob (its pods have no "
                                   "TPU); use launcher 'vertex' or run on a TPU VM with 'local'")
        if self.chief not in (0, 1):
            raise TrainConfigError(f"chief={self.chief}: a cluster has at most one chief")
        if not self.multi_process:
            if (self.chief, self.workers, self.ps) != (1, 0, 0):
                raise TrainConfigError(
                    f"strategy {self.strategy!r} trains in one process: one chief, no workers "
                    f"or parameter servers (got chief={self.chief}, workers={self.workers}, "
                    f"ps={self.ps}); choose multi_worker_mirrored or parameter_server to "
                    "spread training over machines")
            return
        if not 1 <= self.workers <= MAX_WORKERS[launcher]:
            raise TrainConfigError(
                f"workers={self.workers} for strategy {self.strategy!r}: allowed 1 to "
                f"{MAX_WORKERS[launcher]} {where}")
        if self.strategy == "multi_worker_mirrored" and (self.ps or self.chief):
            raise TrainConfigError(
                "strategy 'multi_worker_mirrored' runs workers only (worker 0 leads); got "
                f"chief={self.chief}, ps={self.ps}")
        if self.strategy == "parameter_server":
            if not self.chief:
                raise TrainConfigError(
                    "strategy 'parameter_server' needs a chief to coordinate the workers "
                    "(chief=0)")
            if not 1 <= self.ps <= MAX_PS[launcher]:
                raise TrainConfigError(
                    f"parameter_servers={self.ps}: strategy 'parameter_server' needs 1 to "
                    f"{MAX_PS[launcher]} parameter servers with launcher {launcher!r}")
