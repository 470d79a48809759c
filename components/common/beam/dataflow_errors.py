"""What the Dataflow side refuses and how a Dataflow job can fail (common/beam/dataflow.py)."""


class DataflowError(ValueError):
    """A Dataflow setting, worker image, credential or package that cannot work; the message
    names the setting, what was found and what is allowed."""


class DataflowJobError(RuntimeError):
    """A Dataflow job ended without finishing its work (failed or cancelled); the message
    names the job and its page in the Cloud console, where its logs are."""
