"""KFP components of a deployment: the gate, the deployment, the precomputed answers it
loads, and the smoke test after it. They share one folder because they share one contract:
the target, the service's name and its deploy_options."""

from kfp import dsl
from kfp.dsl import Artifact, Dataset, Input, Metrics, Model, Output

from tfkfp.components._image import IMAGE
from tfkfp.components.common.platform.signals import exec_python


@dsl.component(base_image=IMAGE, install_kfp_package=False)
def deploy_gate(
    model: Input[Model],
    dataset: Input[Dataset],
    metrics: Output[Metrics],
    target: str = "kserve",
    service_name: str = "tfkfp-model",
    deploy_options: dict = {},  # noqa: B006 - KFP reads the default; it is never mutated
    serving_model_uri: str = "",
    gate_metric: str = "accuracy",
    gate_margin: float = 0.0,
    eval_split: str = "eval",
) -> str:
    """Decides whether the model may replace the one serving: "deploy" or "keep".

    Args:
        model: The candidate: a tfkfp SavedModel or TFLite bundle.
        dataset: A labelled Dataset from shard_tfrecords; both models are measured on it.
        metrics: Output decision (1 deploy, 0 keep) and both models' figures.
        target: kserve, vertex or existing: where the serving model is looked up.
        service_name: The service's name.
        deploy_options: As for deploy_model (namespace, endpoint, ...).
        serving_model_uri: The serving model's URI; empty: what the target records.
        gate_metric: accuracy (higher is better) or log_loss (lower is better); for a
            regressor rmse or mae (lower is better).
        gate_margin: How much worse than the serving model the candidate may be.
        eval_split: The Dataset's split both models are measured on.

    Returns:
        "deploy" or "keep", for the pipeline's condition.
    """
    import logging

    from tfkfp.components.deploy_model.core import serving_model_uri as serving
    from tfkfp.components.deploy_model.gate import gate

    logging.basicConfig(level=logging.INFO)
    baseline = serving_model_uri or serving(target, service_name, deploy_options)
    verdict = gate(model.path, dataset.path, baseline, split=eval_split, metric=gate_metric,
                   margin=gate_margin)
    logging.getLogger("tfkfp").info("deploy gate: %s", verdict.reason())
    for key, value in verdict.metrics().items():
        metrics.log_metric(key, value)
    return "deploy" if verdict.deploy else "keep"


@exec_python  # a cancelled step's SIGTERM reaches Python, which undoes the deployment
@dsl.component(base_image=IMAGE, install_kfp_package=False)
def deploy_model(
    model: Input[Model],
    deployment: Output[Artifact],
    endpoint_url: dsl.OutputPath(str),
    gcp_resources: dsl.OutputPath(str),
    target: str = "kserve",
    service_name: str = "tfkfp-model",
    deploy_options: dict = {},  # noqa: B006 - KFP reads the default; it is never mutated
    precomputed_uri: str = "",
    precomputed_key: str = "",
):
    """Deploys a model behind an endpoint and waits until it is ready.

    Args:
        model: A tfkfp SavedModel or TFLite bundle.
        deployment: Output description: target, name, URLs, engine resources, traffic.
        endpoint_url: Output base URL predictions go to (inside the cluster for kserve).
        gcp_resources: Output naming the Vertex AI Model and Endpoint (vertex).
        target: kserve (an InferenceService), vertex (a Vertex AI Endpoint) or existing (an
            endpoint already serving the model: only checked for readiness).
        service_name: The service's name and the model's name in its URLs.
        deploy_options: All: deadline_seconds, poll_seconds; kserve and vertex: image,
            traffic_percent, min_replicas, max_replicas, storage_uri, serve_args; kserve:
            namespace, runtime (tfkfp, tfserving), mode (standard, the default, or knative;
            the older names raw and serverless are accepted; canaries and min_replicas 0
            need knative), cpu, memory, scale_metric, scale_target, service_account,
            tfserving_version, ingress_namespaces (who may call besides the namespace,
            comma-separated; default istio-system); vertex: project, region, machine_type,
            endpoint; existing: url. The kserve image and service_account must be in the
            namespace's allow-list (ConfigMap tfkfp-config).
        precomputed_uri: Precomputed predictions the server answers known keys from.
        precomputed_key: Their key column.
    """
    import json
    import logging

    from tfkfp.components.deploy_model.core import deploy_model as deploy

    logging.basicConfig(level=logging.INFO)
    options = dict(deploy_options)
    if precomputed_uri:
        options.update(precomputed_uri=precomputed_uri, precomputed_key=precomputed_key)
    done = deploy(model.uri, target, service_name, options, gcp_resources=gcp_resources,
                  model_path=model.path)
    deployment.metadata.update(done.metadata())
    with open(deployment.path, "w") as f:
        json.dump(done.metadata(), f, indent=2)
    with open(endpoint_url, "w") as f:
        f.write(done.endpoint_url)


@dsl.component(base_image=IMAGE, install_kfp_package=False)
def publish_precomputed(predictions: Input[Dataset], precomputed_uri: str):
    """Publishes batch_predict's predictions where a server loads precomputed answers.

    Args:
        predictions: batch_predict's predictions (JSON Lines or CSV).
        precomputed_uri: The folder `tfkfp serve --precomputed` reads; replaced whole (written
            under a temporary name, then renamed), so a server reloads a complete set.
    """
    from tfkfp.components.common.platform import uris

    uris.copy_tree(predictions.path, precomputed_uri)


@dsl.component(base_image=IMAGE, install_kfp_package=False)
def smoke_test(
    model: Input[Model],
    dataset: Input[Dataset],
    metrics: Output[Metrics],
    endpoint_url: str,
    service_name: str = "tfkfp-model",
    smoke_rows: int = 8,
    eval_split: str = "eval",
):
    """Sends a few real rows to the deployed endpoint; fails unless it answers them as
    batch_predict's model code does here.

    Args:
        model: The model that was deployed.
        dataset: A Dataset from shard_tfrecords with the model's feature columns.
        metrics: Output rows checked, the largest score difference and the latency.
        endpoint_url: The endpoint's base URL (deploy_model's endpoint_url).
        service_name: The model's name in the endpoint's URLs.
        smoke_rows: How many rows to send.
        eval_split: The Dataset's split the rows come from.
    """
    import logging

    from tfkfp.components.deploy_model.smoke import smoke_test as check

    logging.basicConfig(level=logging.INFO)
    result = check(endpoint_url, service_name, model.path, dataset.path, rows=smoke_rows,
                   split=eval_split)
    metrics.log_metric("rows", result.rows)
    metrics.log_metric("max_score_diff", result.max_score_diff)
    metrics.log_metric("latency_ms", result.latency_ms)
