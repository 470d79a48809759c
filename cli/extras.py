"""Which extra of tfkfp a command needs, said in one line when this install leaves it out.

The install without extras is the light one: compile, check and submit. The extras of
pyproject.toml add what the commands that run steps on this machine import; a command that
reaches one of those imports without it gets the ``pip install`` line to type instead of a
traceback.
"""

import importlib.util
import re
from typing import Any, Iterator, Mapping

from tfkfp.components.common.beam.runners import RUNNERS

# The import names of each extra's distributions (pyproject.toml's optional-dependencies).
EXTRA_MODULES = {
    "local": ("tensorflow", "tf_keras", "tensorboard", "ai_edge_litert", "numpy", "pyarrow",
              "PIL"),
    "serve": ("kserve", "uvloop"),
    "vertex": ("google.cloud.aiplatform", "google.cloud.aiplatform_v1"),
    "beam": ("apache_beam",),
    "tune": ("optuna",),
}
# The extras an extra installs besides its own distributions.
INCLUDES = {"serve": ("local",), "beam": ("local",), "tune": ("local",)}
# What a command runs on this machine needs beyond the light install.
COMMAND_EXTRAS = {"shard": "local", "demo-data": "local", "demo": "local", "run": "local",
                  "loadtest": "local", "serve": "serve", "stream": "beam"}
# Modules a command does without (tfkfp serve falls back to asyncio's event loop).
OPTIONAL = ("uvloop",)
# Pipeline parameter values whose task imports an extra beyond the command's own: the
# vertex launcher, deploy_model's vertex target, batch_predict sending rows to Vertex AI,
# batch_predict as a Beam job on any runner of the table.
PARAMETER_EXTRAS = {("launcher", "vertex"): "vertex", ("deploy", "vertex"): "vertex",
                    ("target", "vertex"): "vertex", ("endpoint_protocol", "vertex"): "vertex",
                    ("engine", "vertex"): "vertex", ("tune_engine", "vertex"): "vertex",
                    **{("beam_runner", runner): "beam" for runner in RUNNERS}}
# Pipelines whose step imports an extra whatever their values: tune's Optuna study,
# stream_predict's Beam job.
PIPELINE_EXTRAS = {"tuning": "tune", "streaming_prediction": "beam"}
# Number parameters that, above 0, add a step importing an extra: the training pipeline's
# tuning stage.
COUNT_EXTRAS = {"tune_trials": "tune"}


def require(command: str) -> None:
    """Raise ModuleNotFoundError for the first module of the command's extra that is not
    installed, before the command starts: ``tfkfp run`` imports TensorFlow only in its tasks'
    processes, where a missing module would fail a task rather than name the extra."""
    extra = COMMAND_EXTRAS.get(command)
    if extra is not None:
        _require_extra(extra)


def require_for_parameters(values: Mapping[str, Any], pipeline: str = "") -> None:
    """As ``require``, for the extras a pipeline (``tuning``: the tune extra) and its
    parameter values need (``launcher=vertex``: the vertex extra): a local run's task would
    otherwise fail on the import mid-run."""
    if pipeline in PIPELINE_EXTRAS:
        _require_extra(PIPELINE_EXTRAS[pipeline])
    for (name, value), extra in PARAMETER_EXTRAS.items():
        if values.get(name) == value:
            _require_extra(extra)
    for name, extra in COUNT_EXTRAS.items():
        if (values.get(name) or 0) > 0:
            _require_extra(extra)


def _require_extra(extra: str) -> None:
    for included in (*INCLUDES.get(extra, ()), extra):
        for module in EXTRA_MODULES[included]:
            if module not in OPTIONAL and _absent(module):
                raise ModuleNotFoundError(f"No module named {module!r}", name=module)


def missing_extra(err: ImportError, command: str) -> str | None:
    """The extra that installs what ``err`` found missing: the command's own extra when that
    covers it (so one install is enough), else the extra of the module; None when the module
    belongs to no extra (a broken install, a bug: not to be hidden)."""
    extra = next((e for name in _missing_names(err) if (e := _extra_of(name))), None)
    if extra is None:
        return None
    wanted = COMMAND_EXTRAS.get(command)
    return wanted if wanted and extra in (wanted, *INCLUDES.get(wanted, ())) else extra


def install_hint(err: ImportError, command: str, extra: str) -> str:
    """One line: what is missing, the extra that brings it, the command to type."""
    missing = next(_missing_names(err), "a module")
    return (f"tfkfp {command} needs the {extra!r} extra, which this install leaves out "
            f"(no {missing}): from a tfkfp checkout, pip install '.[{extra}]'")


def _missing_names(err: ImportError) -> Iterator[str]:
    """``import a.b`` names a.b; ``from a import b`` with b missing names a only, so the
    message gives b."""
    name = err.name or ""
    imported = re.match(r"cannot import name '([\w.]+)'", str(err))
    if imported and name:
        yield f"{name}.{imported.group(1)}"
    if name:
        yield name


def _extra_of(module: str) -> str | None:
    """The extra whose distribution provides ``module``, if that distribution is absent
    (an installed one that fails to import is a different error)."""
    for extra, modules in EXTRA_MODULES.items():
        for package in modules:
            if (module == package or module.startswith(package + ".")) and _absent(package):
                return extra
    return None


def _absent(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is None
    except (ImportError, ValueError):  # a parent package missing, or poisoned
        return True
