"""``dsl.OneOf`` over artifacts in the KFP local runner.

The training pipeline runs one of two steps (``train`` or ``tune``) and hands the model of
the one that ran on with ``dsl.OneOf``. KFP's backend resolves that; kfp.local (2.17)
resolves a OneOf of parameters but refuses one of artifacts ("Expected 1 artifact in
ArtifactSelectorSpec"). ``teach_oneof_artifacts`` has kfp.local pick the artifact of the
branch that ran, as it does for parameters. The training module calls it when imported, so
``tfkfp run`` and a user's own ``kfp.local`` run of the pipeline both work. Only a DAG
output with several selectors, which kfp.local would refuse, takes the new path; every other
goes through kfp's own code unchanged.
"""

from typing import Any, Dict


def teach_oneof_artifacts() -> None:
    """Install the OneOf-aware reading of DAG output artifacts in kfp.local (once)."""
    from kfp.local.orchestrator.orchestrator_utils import OrchestratorUtils

    current = OrchestratorUtils.__dict__["get_dag_output_artifacts"]
    if getattr(current.__func__, "_tfkfp_oneof", False):
        return
    own = current.__func__

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

    get_dag_output_artifacts._tfkfp_oneof = True
    OrchestratorUtils.get_dag_output_artifacts = classmethod(get_dag_output_artifacts)


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
