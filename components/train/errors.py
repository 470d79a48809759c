"""Why a training step fails: a checkpoint of another run, a diverged loss, a failed task or
job. A request that cannot run raises common.training's TrainConfigError.

One module, so a caller (a launcher, a test) names the failure without importing the
machinery that raises it."""

from tfkfp.components.common.training.config import TrainConfigError


class CheckpointMismatch(TrainConfigError):
    """checkpoint_dir keeps checkpoints of another Dataset, schema or model settings, or
    checkpoints that do not fit this model; nothing is resumed from them."""


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the last good checkpoint, if any, is kept."""


class WorkerFailed(RuntimeError):
    """A task of the local cluster exited with an error."""


class ClusterJobFailed(RuntimeError):
    """A Kubernetes training job failed, passed its deadline, or could not be created."""


class ClusterCreateRefused(Exception):
    """The cause of a failure to create a cluster job: the API server refused it, so there is
    no job of ours to delete."""


class ClusterJobReportedFailure(ClusterJobFailed):
    """The job's controller marked it Failed (the job is kept for inspection)."""


class TFJobFailed(ClusterJobFailed):
    """The TFJob failed, passed its deadline, or could not be created."""


class TFJobReportedFailure(TFJobFailed, ClusterJobReportedFailure):
    """The Training Operator marked the TFJob Failed (the job is kept for inspection)."""


class TrainJobFailed(ClusterJobFailed):
    """The Kubeflow Trainer v2 TrainJob failed, passed its deadline, or could not be created."""


class TrainJobReportedFailure(TrainJobFailed, ClusterJobReportedFailure):
    """Kubeflow Trainer marked the TrainJob Failed (the job is kept for inspection)."""


class VertexJobFailed(RuntimeError):
    """The CustomJob failed, was cancelled or expired."""
