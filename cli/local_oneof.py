"""``dsl.OneOf`` over artifacts in the KFP local runner.

A pipeline that runs one of two steps (the training pipeline's ``train`` or ``tune``) hands
the one that ran on with ``dsl.OneOf``. KFP's backend resolves it; kfp.local (2.17) resolves
a OneOf of parameters but refuses one of artifacts ("Expected 1 artifact in
ArtifactSelectorSpec"). For the length of a run, ``oneof_artifacts`` has kfp.local pick the
artifact of the branch that ran, as it does for parameters; a DAG output with one selector
goes through kfp's own code unchanged.
"""

import contextlib
from typing import Any, Dict, Iterator


@contextlib.contextmanager
def oneof_artifacts() -> Iterator[None]:
    from kfp.local.orchestrator.orchestrator_utils import OrchestratorUtils

    saved = OrchestratorUtils.__dict__["get_dag_output_artifacts"]
    own = saved.__func__

    def get_dag_output_artifacts(cls, dag_outputs_spec, io_store) -> Dict[str, Any]:
        chosen = {key: _branch_that_ran(key, spec, io_store)
                  for key, spec in dag_outputs_spec.artifacts.items()
                  if len(spec.artifact_selectors) > 1}
        if not chosen:
            return own(cls, dag_outputs_spec=dag_outputs_spec, io_store=io_store)
        rest = type(dag_outputs_spec)()
        rest.CopyFrom(dag_outputs_spec)
        for key in chosen:
            del rest.artifacts[key]
        return {**own(cls, dag_outputs_spec=rest, io_store=io_store), **chosen}

    OrchestratorUtils.get_dag_output_artifacts = classmethod(get_dag_output_artifacts)
    try:
        yield
    finally:
        OrchestratorUtils.get_dag_output_artifacts = saved


def _branch_that_ran(key: str, spec, io_store) -> Any:
    """The one artifact among a OneOf's selectors that a task of this run wrote."""
    found = []
    for selector in spec.artifact_selectors:
        try:
            found.append(io_store.get_task_output(selector.producer_subtask,
                                                  selector.output_artifact_key))
        except (KeyError, ValueError):  # that branch did not run
            continue
    if len(found) != 1:
        raise ValueError(f"dsl.OneOf output {key!r}: {len(found)} of its branches produced "
                         "an artifact; expected exactly one")
    return found[0]
