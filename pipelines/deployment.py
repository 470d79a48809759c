"""The steps of a deployment, shared by the serving and training pipelines: the gate against
the model already serving, then deploy_model and a smoke test of the endpoint, only when the
gate says so."""

from typing import Any, Dict

from kfp import dsl

from tfkfp.components.deploy_model.component import deploy_gate, deploy_model, smoke_test


@dsl.pipeline(name="tfkfp-roll-out")
def roll_out(model: dsl.Model, dataset: dsl.Dataset, target: str, service_name: str,
             deploy_options: dict, precomputed_uri: str, precomputed_key: str,
             smoke_rows: int, eval_split: str):
    """Deploy the model and check the endpoint answers a few rows as the model does."""
    deployed = deploy_model(model=model, target=target, service_name=service_name,
                            deploy_options=deploy_options, precomputed_uri=precomputed_uri,
                            precomputed_key=precomputed_key)
    smoke_test(model=model, dataset=dataset, endpoint_url=deployed.outputs["endpoint_url"],
               service_name=service_name, smoke_rows=smoke_rows, eval_split=eval_split)


def gate(model, dataset, target, service_name, deploy_options, serving_model_uri,
         gate_metric, gate_margin, eval_split):
    """The deploy_gate task; its output is "deploy" or "keep"."""
    return deploy_gate(model=model, dataset=dataset, target=target, service_name=service_name,
                       deploy_options=deploy_options, serving_model_uri=serving_model_uri,
                       gate_metric=gate_metric, gate_margin=gate_margin,
                       eval_split=eval_split).set_caching_options(False)  # what serves changes


def check_deploy(values: Dict[str, Any], target: str) -> None:
    """What deploy_model and the gate refuse before anything runs."""
    from tfkfp.components.deploy_model.core import check_request
    from tfkfp.components.deploy_model.options import check_gate

    check_request(target, values["service_name"], values["deploy_options"])
    check_gate(values["gate_metric"], values["gate_margin"])
    if values["smoke_rows"] < 1:
        raise ValueError(f"smoke_rows {values['smoke_rows']} is below 1")
    if bool(values.get("precomputed_uri")) != bool(values.get("precomputed_key")):
        raise ValueError("precomputed_uri and precomputed_key go together: where the "
                         "precomputed predictions are published and their key column")
