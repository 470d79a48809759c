"""The example InferenceService of each overlay, and the NetworkPolicy beside it, as
deploy_model's kserve target writes them for the options listed here: the examples are
regenerated from this table (``python tests/inferenceservice_examples.py``) and a test checks
they still match."""

import pathlib

import yaml

from tfkfp.components.deploy_model import kserve, network_policy
from tfkfp.components.deploy_model.options import parse_options

ROOT = pathlib.Path(__file__).resolve().parents[1]
FILE = "inferenceservice.example.yaml"
# overlay -> (namespace, storageUri, the model artifact's URI, deploy_options, what it shows)
EXAMPLES = {
    "gke": ("tfkfp", "gs://BUCKET/models/digits/1795000000", "gs://BUCKET/runs/train/model",
            {"mode": "knative", "scale_metric": "concurrency", "scale_target": 8,
             "min_replicas": 1, "max_replicas": 5, "storage_uri": "gs://BUCKET/models/digits"},
            "Knative mode: `tfkfp serve`, scaled on concurrent requests"),
    "onprem": ("tfkfp", "s3://models/digits", "minio://mlpipeline/runs/train/model",
               {"mode": "standard", "runtime": "tfserving", "scale_metric": "cpu",
                "scale_target": 70, "min_replicas": 2, "max_replicas": 6,
                "storage_uri": "s3://models/digits"},
               "Standard mode: KServe's TF Serving runtime, a HorizontalPodAutoscaler on CPU"),
    "kind": ("kubeflow", "s3://mlpipeline/runs/train/model",
             "minio://mlpipeline/runs/train/model",
             {"mode": "standard", "cpu": "1", "memory": "2Gi", "max_replicas": 1},
             "Standard mode on a laptop: one small `tfkfp serve` replica"),
}


class _Dumper(yaml.SafeDumper):
    """Lists indented under their key, as yamllint's default style wants."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def example(overlay: str) -> dict:
    namespace, storage, model_uri, options, _ = EXAMPLES[overlay]
    return kserve.manifest("digits", namespace, storage, model_uri,
                           parse_options("kserve", options))


def policy(overlay: str) -> dict:
    """The NetworkPolicy deploy_model keeps beside the example, as the API gets it."""
    from kubernetes import client

    namespace, *_, options, _ = EXAMPLES[overlay]
    return client.ApiClient().sanitize_for_serialization(
        network_policy.render("digits", namespace, parse_options("kserve", options)))


def text(overlay: str) -> str:
    *_, options, shows = EXAMPLES[overlay]
    listed = "\n".join(f"#   {key}: {value}" for key, value in options.items())
    header = (f"# An InferenceService as deploy_model writes it (target kserve, service_name "
              f"digits)\n# with these deploy_options, and the NetworkPolicy it keeps beside "
              f"it:\n{listed}\n# {shows}.\n# Not applied by the overlay: deploy_model creates "
              "them. Apply them by hand (after\n# replacing BUCKET) to try the predictor "
              "without a pipeline.\n")
    return header + "---\n".join(yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=90)
                                 for doc in (example(overlay), policy(overlay)))


if __name__ == "__main__":
    for name in EXAMPLES:
        (ROOT / "manifests" / "overlays" / name / FILE).write_text(text(name))
