"""Why a training step fails: a request that cannot run, a diverged loss, a failed task or job.

One module, so a caller (diagnose_bottleneck, a launcher, a test) names the failure without
importing the machinery that raises it."""


class TrainConfigError(ValueError):
    """A training request that cannot run; raised before any training work."""


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the last good checkpoint, if any, is kept."""


class WorkerFailed(RuntimeError):
    """A task of the local cluster exited with an error."""


class TFJobFailed(RuntimeError):
    """The TFJob failed, passed its deadline, or could not be created."""


class TFJobReportedFailure(TFJobFailed):
    """The operator marked the TFJob Failed (the job is kept for inspection)."""


class VertexJobFailed(RuntimeError):
    """The CustomJob failed, was cancelled or expired."""
