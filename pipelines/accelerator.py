"""The GPU request a compiled pipeline's train step makes: ``TYPE[:COUNT]`` as given to
``tfkfp compile --gpu``. TYPE is what the cluster schedules on: a Kubernetes resource such
as ``nvidia.com/gpu``, or a Vertex AI accelerator such as ``NVIDIA_TESLA_T4``."""

import dataclasses
import re

MAX_GPUS = 16
_TYPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")


@dataclasses.dataclass(frozen=True)
class Gpu:
    type: str
    count: int = 1


def parse_gpu(text: str) -> Gpu:
    """``nvidia.com/gpu:2`` -> Gpu("nvidia.com/gpu", 2); the count defaults to 1."""
    kind, sep, count_text = text.rpartition(":") if ":" in text else (text, "", "1")
    if not _TYPE.match(kind):
        raise ValueError(f"--gpu {text!r}: expected TYPE[:COUNT], e.g. nvidia.com/gpu:1 or "
                         "NVIDIA_TESLA_T4:2")
    try:
        count = int(count_text)
    except ValueError:
        raise ValueError(f"--gpu {text!r}: COUNT must be a whole number, "
                         f"got {count_text!r}") from None
    if not 1 <= count <= MAX_GPUS:
        raise ValueError(f"--gpu {text!r}: COUNT must be 1 to {MAX_GPUS}, got {count}")
    return Gpu(kind, count)
