"""deploy_model's errors: each message names the option, resource or row at fault."""


class DeployConfigError(ValueError):
    """A target or deploy option that cannot work; refused before anything is created."""


class DeployFailed(RuntimeError):
    """The engine refused the deployment, reported it failed or it was not ready in time."""


class GateInputError(ValueError):
    """The models and the evaluation data do not fit together (columns, classes)."""


class SmokeTestFailed(RuntimeError):
    """The deployed endpoint answered wrongly or not at all; the message shows the rows."""


class DeployReportedFailure(DeployFailed):
    """The engine itself reported the deployment failed (its reason is in the message)."""


class EndpointNotFound(DeployFailed):
    """An existing endpoint answered 404 for a model route: nothing serves there yet."""
