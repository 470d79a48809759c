"""The GPU request a compiled pipeline's train step makes: ``tfkfp compile --gpus COUNT
[--gpu-type TYPE]``. TYPE is what the cluster schedules on: a Kubernetes resource such as
``nvidia.com/gpu`` (the default), or a Vertex AI accelerator such as ``NVIDIA_TESLA_T4``. The
names are those of train's ``launcher_options`` (``gpus``, ``gpu_type``)."""

import dataclasses
import re

MAX_GPUS = 16
DEFAULT_TYPE = "nvidia.com/gpu"
_TYPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")


@dataclasses.dataclass(frozen=True)
class Gpu:
    type: str
    count: int = 1


def parse_gpu(count: int, gpu_type: str = DEFAULT_TYPE) -> Gpu:
    """Check ``--gpus`` and ``--gpu-type``: 1 to MAX_GPUS of a schedulable type."""
    if not 1 <= count <= MAX_GPUS:
        raise ValueError(f"--gpus {count}: expected 1 to {MAX_GPUS} GPUs per train pod")
    if not _TYPE.match(gpu_type):
        raise ValueError(f"--gpu-type {gpu_type!r}: expected a resource or accelerator name, "
                         "e.g. nvidia.com/gpu or NVIDIA_TESLA_T4")
    return Gpu(gpu_type, count)
