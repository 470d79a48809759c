"""The Vertex AI HyperparameterTuningJob of a tuning request.

Its fields are those Google Cloud Pipeline Components' ``HyperparameterTuningJobRunOp``
(v1/hyperparameter_tuning_job) sends: ``study_spec`` (``metrics``, ``parameters``,
``algorithm``, ``measurement_selection_type``), ``max_trial_count``,
``parallel_trial_count``, ``max_failed_trial_count``, and ``trial_job_spec``
(``worker_pool_specs``, ``service_account``, ``base_output_directory``). A parameter is what
GCPC's ``serialize_parameters`` makes of the SDK's DoubleParameterSpec, IntegerParameterSpec
and CategoricalParameterSpec. Choices made:

- ``measurement_selection_type: LAST_MEASUREMENT``: a trial's value is its last epoch's, as
  in the local and katib engines (GCPC's default is BEST_MEASUREMENT).
- ``max_failed_trial_count`` is the budget: a failed trial does not end the study.
- Each trial is a CustomJob of one replica in the suite's image running vertex_trial.py;
  Vertex AI appends ``--<setting>=<value>`` and sets ``AIP_MODEL_DIR`` under
  ``base_output_directory/<trial id>/``.
"""

import uuid
from typing import Any, Dict, List, Mapping

TRIAL_PROGRAM = "tfkfp.components.tune.vertex_trial"
LABELS = {"app": "tfkfp", "component": "tune"}


def parameters(space: Mapping[str, Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The space as StudySpec.ParameterSpecs (categorical values are text, as Vertex AI
    keeps them; the trial reads each back as the train field's type)."""
    out = []
    for name, spec in space.items():
        if spec["type"] == "categorical":
            out.append({"parameter_id": name, "categorical_value_spec": {
                "values": [str(c) for c in spec["choices"]]}})
            continue
        key = "double_value_spec" if spec["type"] == "float" else "integer_value_spec"
        out.append({"parameter_id": name, key: {"min_value": spec["low"],
                                                "max_value": spec["high"]},
                    "scale_type": "UNIT_LOG_SCALE" if spec["log"] else "UNIT_LINEAR_SCALE"})
    return out


def study_spec(settings: Mapping[str, Any]) -> Dict[str, Any]:
    """``settings``: objective, direction, space and algorithm (Vertex AI's name)."""
    return {"metrics": [{"metric_id": settings["objective"],
                         "goal": settings["direction"].upper()}],
            "parameters": parameters(settings["space"]),
            "algorithm": settings["algorithm"],
            "measurement_selection_type": "LAST_MEASUREMENT"}


def trial_job_spec(options, request_uri: str, trials_dir: str) -> Dict[str, Any]:
    """One replica in the suite's image per trial; ``options``: remote_options.VertexOptions."""
    machine: Dict[str, Any] = {"machine_type": options.machine_type}
    if options.gpu_type:
        machine.update(accelerator_type=options.gpu_type, accelerator_count=options.gpus)
    return {"worker_pool_specs": [{
        "machine_spec": machine, "replica_count": 1,
        "container_spec": {"image_uri": options.image,
                           "command": ["python", "-m", TRIAL_PROGRAM, request_uri],
                           "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}]}}],
        "service_account": options.service_account,
        "base_output_directory": {"output_uri_prefix": trials_dir}}


def request(settings: Mapping[str, Any], budget: int, parallel_trials: int, options,
            project: str, request_uri: str, trials_dir: str):
    """The CreateHyperparameterTuningJobRequest."""
    from google.cloud import aiplatform_v1 as v1

    job = v1.HyperparameterTuningJob(
        display_name=options.display_name or f"tfkfp-tune-{uuid.uuid4().hex[:8]}",
        study_spec=study_spec(settings), max_trial_count=budget,
        parallel_trial_count=min(parallel_trials, budget), max_failed_trial_count=budget,
        trial_job_spec=trial_job_spec(options, request_uri, trials_dir), labels=LABELS)
    return v1.CreateHyperparameterTuningJobRequest(
        parent=f"projects/{project}/locations/{options.region}", hyperparameter_tuning_job=job)
