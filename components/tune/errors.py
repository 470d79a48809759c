"""What tune raises: a request refused before any trial, and a trial that failed."""


class TuneError(ValueError):
    """A tuning request that cannot run (search space, objective, budget, study_dir);
    raised before any trial starts."""


class SearchSpaceError(TuneError):
    """A search space that cannot be honoured; the message names the setting."""


class TrialFailed(RuntimeError):
    """One trial's train process failed; the study records it as failed and goes on."""
