"""One description of a training cluster's shape: how many chief, worker and parameter-server
replicas a strategy runs as, taken from its entry in the strategies table. It is checked
once, before launch (``validate`` checks the whole request), against what the launcher can
place (a ``Placement``: train's launcher table gives one per launcher, LOCAL is this
machine's processes), and every launcher renders it: local processes (``TF_CONFIG`` per
process), a Kubeflow TFJob (replica specs), a Kubeflow Trainer v2 TrainJob (pods of one indexed
job, each task by its index) and a Vertex AI CustomJob (worker pools)."""

import dataclasses
from typing import Dict, Mapping

from tfkfp.components.common.training import strategies
from tfkfp.components.common.training.config import TrainConfig, TrainConfigError, check_fields


@dataclasses.dataclass(frozen=True)
class Placement:
    """What a launcher can place: the cluster sizes it allows and the strategies it cannot
    run. Local processes share one machine's cores; a cluster's size is the user's to choose,
    within what one coordinator and the operators handle comfortably."""

    launcher: str  # its name, as launcher= takes it
    max_workers: int
    max_ps: int
    # A strategy's ``devices`` -> why this launcher cannot run it (said after "strategy
    # '<name>'"), e.g. {"tpu": "cannot run as a TFJob (its pods have no TPU); ..."}.
    refuses: Mapping[str, str] = dataclasses.field(default_factory=dict, hash=False)
    workers_are: str = ""  # its workers in messages (default "<launcher> workers")


LOCAL = Placement("local", max_workers=8, max_ps=4, workers_are="local worker processes")
ROLE_NAMES = {"chief": "a chief", "worker": "workers", "ps": "parameter servers"}


def validate(config: TrainConfig, placement: Placement = LOCAL) -> None:
    """Refuse, with the allowed values, anything that would fail later in training: an
    unknown strategy, a bad field, a cluster shape the strategy or the launcher cannot run."""
    strategies.get(config.strategy)
    check_fields(config)
    ClusterShape.for_config(config).validate(placement)


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

    def validate(self, placement: Placement = LOCAL) -> None:
        """Refuse a shape the strategy cannot run, or the launcher cannot place."""
        strategy = strategies.get(self.strategy)
        if strategy.devices in placement.refuses:
            raise TrainConfigError(f"strategy {self.strategy!r} "
                                   f"{placement.refuses[strategy.devices]}")
        if self.chief not in (0, 1):
            raise TrainConfigError(f"chief={self.chief}: a cluster has at most one chief")
        if strategy.multi_process:
            self._check_roles(strategy, placement)
        elif (self.chief, self.workers, self.ps) != (1, 0, 0):
            raise TrainConfigError(
                f"strategy {self.strategy!r} trains in one process: one chief, no workers "
                f"or parameter servers (got chief={self.chief}, workers={self.workers}, "
                f"ps={self.ps}); choose {' or '.join(strategies.names(multi_process=True))} "
                "to spread training over machines")

    def _check_roles(self, strategy: strategies.Strategy, placement: Placement) -> None:
        """Each role the strategy runs as within the launcher's limits, and no other role."""
        where = placement.workers_are or f"{placement.launcher} workers"
        if not 1 <= self.workers <= placement.max_workers:
            raise TrainConfigError(
                f"workers={self.workers} for strategy {self.strategy!r}: allowed 1 to "
                f"{placement.max_workers} {where}")
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
        if "ps" in strategy.roles and not 1 <= self.ps <= placement.max_ps:
            raise TrainConfigError(
                f"parameter_servers={self.ps}: strategy {self.strategy!r} needs 1 to "
                f"{placement.max_ps} parameter servers with launcher {placement.launcher!r}")
