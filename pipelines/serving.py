"""The serving pipeline: put an imported model behind an endpoint.

deploy_gate measures the model and the one serving now on the same eval split; only when
the new one is no worse (by ``gate_margin``) do the next steps run: optionally batch_predict
over the rows of the most frequent keys, published where the server loads precomputed
answers, then deploy_model and a smoke test of the endpoint. Run on a schedule (a recurring
run) with the same model, the gate passes (a model is as good as itself), the precomputed
answers are recomputed and the running server reloads them; the service itself is unchanged.
"""

from typing import Any, Dict

from kfp import dsl

from tfkfp.components.batch_predict.component import batch_predict
from tfkfp.components.deploy_model.component import (
    deploy_gate,
    deploy_model,
    publish_precomputed,
    smoke_test,
)
from tfkfp.pipelines.deployment import check_deploy, gate, roll_out
from tfkfp.pipelines.resources import sized
from tfkfp.pipelines.step_defaults import defaults_of

# a parameter's default is the step's: step_defaults.py
DEFAULTS = defaults_of(deploy_gate, deploy_model, smoke_test, publish_precomputed, batch_predict)


@sized  # every step's CPU and memory: pipelines/resources.py
@dsl.pipeline(name="tfkfp-serving")
def serving(
    model_uri: str,
    dataset_uri: str,
    target: str = DEFAULTS.target,
    service_name: str = DEFAULTS.service_name,
    deploy_options: dict = DEFAULTS.deploy_options,
    serving_model_uri: str = DEFAULTS.serving_model_uri,
    gate_metric: str = DEFAULTS.gate_metric,
    gate_margin: float = DEFAULTS.gate_margin,
    eval_split: str = DEFAULTS.eval_split,
    smoke_rows: int = DEFAULTS.smoke_rows,
    precompute_dataset_uri: str = "",
    precomputed_uri: str = DEFAULTS.precomputed_uri,
    precomputed_key: str = DEFAULTS.precomputed_key,
):
    """Deploys a tfkfp model behind a gate, with precomputed answers and a smoke test.

    Args:
        model_uri: A tfkfp SavedModel or TFLite bundle directory (gs:// on a cluster).
        dataset_uri: A labelled Dataset (shard_tfrecords) the gate and the smoke test read.
        target: kserve (an InferenceService), vertex (a Vertex AI Endpoint) or existing (an
            endpoint already serving: deploy_options url).
        service_name: The service's name and the model's name in its URLs.
        deploy_options: See deploy_model, e.g. {"namespace": "team", "mode": "knative"}.
        serving_model_uri: The model serving now; empty: what the target records.
        gate_metric: accuracy or log_loss; for a regressor rmse or mae.
        gate_margin: How much worse than the serving model the new one may be.
        eval_split: The Dataset's split the gate and the smoke test read.
        smoke_rows: Rows the smoke test sends.
        precompute_dataset_uri: A Dataset of the most frequent keys' rows to predict in batch
            and serve from memory; empty: none.
        precomputed_uri: Where those predictions are published (gs:// on a cluster); the
            server loads and reloads them.
        precomputed_key: The key column they are looked up by.
    """
    model = dsl.importer(artifact_uri=model_uri, artifact_class=dsl.Model, reimport=False)
    dataset = dsl.importer(artifact_uri=dataset_uri, artifact_class=dsl.Dataset,
                           reimport=False)
    with dsl.If(precompute_dataset_uri != "", name="precompute"):
        decision = gate(model.output, dataset.output, target, service_name, deploy_options,
                        serving_model_uri, gate_metric, gate_margin, eval_split)
        with dsl.If(decision.outputs["Output"] == "deploy", name="gate-passed"):
            frequent = dsl.importer(artifact_uri=precompute_dataset_uri,
                                    artifact_class=dsl.Dataset, reimport=True)
            predicted = batch_predict(model=model.output, dataset=frequent.output,
                                      keys=[precomputed_key]).set_caching_options(False)
            published = publish_precomputed(predictions=predicted.outputs["predictions"],
                                            precomputed_uri=precomputed_uri)
            roll_out(model=model.output, dataset=dataset.output, target=target,
                     service_name=service_name, deploy_options=deploy_options,
                     precomputed_uri=precomputed_uri, precomputed_key=precomputed_key,
                     smoke_rows=smoke_rows, eval_split=eval_split).after(published)
    with dsl.Else(name="model-only"):
        decision = gate(model.output, dataset.output, target, service_name, deploy_options,
                        serving_model_uri, gate_metric, gate_margin, eval_split)
        with dsl.If(decision.outputs["Output"] == "deploy", name="gate-passed"):
            roll_out(model=model.output, dataset=dataset.output, target=target,
                     service_name=service_name, deploy_options=deploy_options,
                     precomputed_uri="", precomputed_key="", smoke_rows=smoke_rows,
                     eval_split=eval_split)


def check_arguments(arguments: Dict[str, Any]) -> None:
    """Refuse a target, deploy option or gate setting deploy_model would refuse, and
    precomputed settings that do not go together, before a run starts."""
    from tfkfp.pipelines import checks

    values = checks.with_defaults(serving, arguments)
    check_deploy(values, values["target"])
    if values["precompute_dataset_uri"] and not values["precomputed_uri"]:
        raise ValueError("precompute_dataset_uri needs precomputed_uri: where the server "
                         "loads the precomputed predictions from")
