"""Where a training cluster runs, in one table (``LAUNCHERS``): ``local`` processes in the
step's pod, a Kubeflow Training Operator ``tfjob``, a Kubeflow Trainer v2 ``trainjob``, or a
Vertex AI CustomJob (``vertex``).

Each entry says what the launcher can place (its Placement: the cluster sizes it allows, the
strategies it cannot run; common/training/shape.py), which ``launcher_options`` it reads and
its own checks of them, where its job folder may be, what it checks on the cluster before
anything is staged, and the function that runs the job. The option checks (job.py), train's
core, the pipelines' checks (``tfkfp run``/``submit``) and the tests of the docs read the
table instead of naming launchers, so adding a launcher is one entry here plus its own module
(tests/components/train/test_launchers.py proves it). All render one ClusterShape; tfjob and
trainjob share kube.py."""

import dataclasses
from typing import Any, Callable, Dict, Tuple

from tfkfp.components.common.platform import choices
from tfkfp.components.common.training.config import TrainConfigError
from tfkfp.components.common.training.shape import LOCAL, Placement
from tfkfp.components.train.launchers import kube, tfjob, trainjob, vertex
from tfkfp.components.train.launchers.spec import LaunchOptions


def _nothing(options: LaunchOptions) -> None:
    """Nothing more to check."""


@dataclasses.dataclass(frozen=True)
class Launcher:
    """One way to run a training cluster: a row of LAUNCHERS."""

    placement: Placement  # its name, the sizes it allows, the strategies it cannot run
    runs: str  # what it runs, in a few words
    # Train runs the strategy in this step's pod (one process, or one process per task);
    # otherwise ``run`` starts the shape on other machines.
    in_process: bool = False
    options: Tuple[str, ...] = ()  # the launcher_options it reads (LaunchOptions fields)
    check: Callable[[LaunchOptions], None] = _nothing  # its own checks of those
    job_dir_scheme: str = ""  # the only storage its job_dir may be on ("": any shared one)
    # Before anything is staged: checks against the cluster (e.g. kube's allow-list).
    preflight: Callable[[LaunchOptions], None] = _nothing
    # run(shape, plan, options, gcp_resources=path): return once the job succeeds, raise
    # when it fails; stop the job when the step is cancelled (SIGTERM).
    run: Callable[..., None] | None = None

    @property
    def name(self) -> str:
        return self.placement.launcher


# launcher_options every cluster launcher reads, and those of the Kubernetes ones.
CLUSTER_OPTIONS = ("job_dir", "image", "deadline_seconds", "poll_seconds", "service_account",
                   "gpus")
KUBE_OPTIONS = (*CLUSTER_OPTIONS, "namespace", "job_name", "cpu", "memory", "volume_claim",
                "mount_path")
NO_TPU = "use launcher 'vertex' or run on a TPU VM with 'local'"

LAUNCHERS: Dict[str, Launcher] = {launcher.name: launcher for launcher in (
    Launcher(LOCAL, "processes in this step's pod", in_process=True),
    Launcher(Placement("tfjob", max_workers=256, max_ps=64, refuses={
        "tpu": f"cannot run as a TFJob (its pods have no TPU); {NO_TPU}"}),
        "a Kubeflow Training Operator TFJob", options=(*KUBE_OPTIONS, "backoff_limit"),
        preflight=kube.check_allowed, run=tfjob.run),
    Launcher(Placement("trainjob", max_workers=256, max_ps=64, refuses={
        "tpu": f"cannot run as a TrainJob (the suite's runtime has no TPU); {NO_TPU}"}),
        "a Kubeflow Trainer v2 TrainJob", options=(*KUBE_OPTIONS, "runtime"),
        preflight=kube.check_allowed, run=trainjob.run),
    Launcher(Placement("vertex", max_workers=256, max_ps=64), "a Vertex AI CustomJob",
             options=(*CLUSTER_OPTIONS, "project", "region", "machine_type", "gpu_type"),
             check=vertex.check_options, job_dir_scheme="gs://", run=vertex.run),
)}


def get(name: str) -> Launcher:
    """The table entry for ``name``, or a TrainConfigError naming the known launchers."""
    return choices.entry(LAUNCHERS, name, "launcher", TrainConfigError)


def names(**properties: Any) -> Tuple[str, ...]:
    """Launcher names in table order whose properties have these values, e.g.
    ``names(in_process=False)``."""
    return choices.names_where(LAUNCHERS, **properties)
