"""How big each step's pod is: the one table of CPU, memory and local disk per step.

Every step gets its CPU and memory as request and limit alike: the CPU limit is the cgroup
quota that the step's thread pools follow (common/platform/cpus.py), and a namespace LimitRange
never has to fill in a limit that could fall below the request. Profiles: ``cluster`` for the gke
and onprem overlays, ``kind`` for a laptop (kind overlay, whose LimitRange allows at most
4 CPUs and 8Gi per container).

Local disk (ephemeral storage) is the same for every step of a profile: KFP 2.17 has no
per-task setting for it (kfp-kubernetes only mounts volumes), so each overlay's LimitRange
gives every step container its ``default``/``defaultRequest``, which ``DISK`` records. On a
KFP backend the launcher downloads each input artifact into the pod and a step writes its
outputs there before they are uploaded, so that disk bounds the Dataset a step can take:
``largest_dataset``.
"""

import copy
import dataclasses
from typing import Dict, List

from google.protobuf import json_format
from kfp.compiler import compiler_utils

GI = 1 << 30
# Room on the step's disk for what is not Dataset-sized: the model, logs, spooled chunks.
DISK_RESERVE = 1 * GI


@dataclasses.dataclass(frozen=True)
class Size:
    """One step's pod: ``cpu`` and ``memory`` as Kubernetes quantities (request = limit);
    ``datasets``: how many Dataset-sized copies it holds on local disk (inputs downloaded,
    outputs written before upload)."""

    cpu: str
    memory: str
    datasets: int

    def kfp_resources(self) -> Dict[str, object]:
        """The compiled executor's ``resources``, as ``set_cpu_request`` and friends write
        them (strings for the backend, numbers for older readers)."""
        cpu, memory = compiler_utils._cpu_to_float(self.cpu), compiler_utils._memory_to_float(
            self.memory)
        return {"resourceCpuRequest": self.cpu, "resourceCpuLimit": self.cpu,
                "cpuRequest": cpu, "cpuLimit": cpu,
                "resourceMemoryRequest": self.memory, "resourceMemoryLimit": self.memory,
                "memoryRequest": memory, "memoryLimit": memory}


PROFILES: Dict[str, Dict[str, Size]] = {
    "cluster": {
        "group_numbers": Size("250m", "512Mi", 0),
        "fingerprint_input": Size("250m", "512Mi", 0),
        "shard_tfrecords": Size("4", "8Gi", 2),  # spooled chunks, then the shards
        # the parts downloaded, then the merged Dataset (hard links where one filesystem
        # holds both, a copy otherwise)
        "merge_datasets": Size("500m", "2Gi", 2),
        "diagnose_bottleneck": Size("4", "16Gi", 1),
        "train": Size("4", "16Gi", 1),
        "train_settings": Size("250m", "512Mi", 0),  # tune's train_defaults, one dict
        "tune": Size("4", "16Gi", 1),  # trials share the cores; the best model is kept
        "freeze_quantize": Size("2", "8Gi", 1),
        "export_tflite": Size("2", "8Gi", 1),
        "batch_predict": Size("2", "8Gi", 2),  # the Dataset, then its predictions
        "merge_predictions": Size("500m", "2Gi", 2),  # the groups' files, then gathered
        "deploy_gate": Size("2", "8Gi", 1),  # two models on the eval split
        "deploy_model": Size("500m", "1Gi", 0),  # the model only, when it is published
        "publish_precomputed": Size("500m", "1Gi", 1),
        "smoke_test": Size("1", "4Gi", 0),
        # the model; rows stream through (a local job's, or a Dataflow launcher's)
        "stream_predict": Size("2", "8Gi", 0),
    },
    "kind": {
        "group_numbers": Size("250m", "512Mi", 0),
        "fingerprint_input": Size("250m", "512Mi", 0),
        "shard_tfrecords": Size("2", "4Gi", 2),
        "merge_datasets": Size("500m", "2Gi", 2),
        "diagnose_bottleneck": Size("2", "4Gi", 1),
        "train": Size("2", "4Gi", 1),
        "train_settings": Size("250m", "512Mi", 0),
        "tune": Size("2", "4Gi", 1),
        "freeze_quantize": Size("1", "4Gi", 1),
        "export_tflite": Size("1", "4Gi", 1),
        "batch_predict": Size("1", "2Gi", 2),
        "merge_predictions": Size("500m", "2Gi", 2),
        "deploy_gate": Size("1", "4Gi", 1),
        "deploy_model": Size("500m", "1Gi", 0),
        "publish_precomputed": Size("500m", "1Gi", 1),
        "smoke_test": Size("1", "2Gi", 0),
        "stream_predict": Size("1", "2Gi", 0),
    },
}
# Each step container's ephemeral storage: the overlays' LimitRange default (the limit) and
# defaultRequest (what the scheduler reserves).
DISK = {"cluster": "20Gi", "kind": "4Gi"}
DISK_REQUEST = {"cluster": "10Gi", "kind": "2Gi"}
# Which profile each overlay's LimitRange is written for.
OVERLAY_PROFILES = {"gke": "cluster", "onprem": "cluster", "kind": "kind"}


class SizeError(ValueError):
    """A profile or step the table does not know."""


def profiles() -> List[str]:
    return sorted(PROFILES)


def gibibytes(quantity: str) -> float:
    """A Kubernetes binary quantity (``512Mi``, ``4Gi``) in GiB."""
    for suffix, scale in (("Ki", 1 << 10), ("Mi", 1 << 20), ("Gi", GI), ("Ti", 1 << 40)):
        if quantity.endswith(suffix):
            return float(quantity[:-2]) * scale / GI
    raise SizeError(f"{quantity!r} is not a binary quantity such as 512Mi or 4Gi")


def largest_dataset(step: str, profile: str = "cluster") -> float | None:
    """GiB of Dataset the step's local disk holds (None: it takes no Dataset)."""
    size = _profile(profile).get(step)
    if size is None:
        raise SizeError(f"profile {profile!r} has no size for step {step!r}")
    if not size.datasets:
        return None
    return (gibibytes(DISK[profile]) - DISK_RESERVE / GI) / size.datasets


def sized(pipeline, profile: str = "cluster"):
    """A copy of the pipeline whose every container step (nested pipelines' too) requests
    and is limited to its size in ``profile``; importers run in KFP's driver and need none."""
    sizes = _profile(profile)
    out = copy.deepcopy(pipeline)
    executors = out.pipeline_spec.deployment_spec["executors"]
    for label in list(executors.keys()):
        if "container" not in executors[label]:
            continue
        container = json_format.MessageToDict(executors[label]["container"])
        step = step_name(label, container)
        if step not in sizes:
            raise SizeError(f"{pipeline.name}: step {step!r} ({label}) has no size in profile "
                            f"{profile!r}; add it to PROFILES in pipelines/resources.py")
        resources = container.setdefault("resources", {})
        for key in [k for k in resources if k != "accelerator"]:
            del resources[key]
        resources.update(sizes[step].kfp_resources())
        executors[label]["container"] = container
    return out


def step_name(label: str, container: Dict) -> str:
    """The component function a compiled executor runs (``--function_to_execute``)."""
    args = list(container.get("args", []))
    if "--function_to_execute" not in args:
        raise SizeError(f"executor {label} runs no Python component function; its args are "
                        f"{args[:6]}")
    return args[args.index("--function_to_execute") + 1]


def _profile(profile: str) -> Dict[str, Size]:
    if profile not in PROFILES:
        raise SizeError(f"no size profile {profile!r}; the profiles are {', '.join(profiles())}")
    return PROFILES[profile]
