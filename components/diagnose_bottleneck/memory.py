"""Memory: what the host (or the user's limit) has, what the process uses, and what training
needs (parameters, gradients, optimizer slots, activations, the input batch, a cache).

No psutil: the figures come from ``/proc/meminfo``, ``/proc/self/status`` and the cgroup
files a Kubernetes pod's memory limit lives in.
"""

import dataclasses
import math
import subprocess
from typing import Dict, Iterator, List

MB = 1 << 20
HEADROOM = 0.9  # training may use this share of the budget; the rest is the runtime's
ADAM_SLOTS = 2  # train's default optimizer keeps two slots (m, v) per parameter
VARIABLE_BYTES = 4  # variables stay float32 under mixed precision
_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
_CGROUP_USAGE = ("/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory/memory.usage_in_bytes")


@dataclasses.dataclass(frozen=True)
class HostMemory:
    total: int  # bytes: the machine's, or the pod's cgroup limit when lower
    available: int  # bytes this process could still take
    rss: int  # this process now
    peak_rss: int  # this process's high-water mark

    def to_dict(self) -> Dict[str, float]:
        return {f"host_{k}_mb": round(v / MB, 1) for k, v in dataclasses.asdict(self).items()}


def host_memory() -> HostMemory:
    """The host's memory, limited by the cgroup (pod) limit where there is one."""
    info = _read_kv("/proc/meminfo")
    total, available = info.get("MemTotal", 0), info.get("MemAvailable", info.get("MemFree", 0))
    limit, usage = _first_int(_CGROUP_LIMITS), _first_int(_CGROUP_USAGE)
    if limit and limit < total:
        total = limit
        available = min(available, max(limit - (usage or 0), 0))
    status = _read_kv("/proc/self/status")
    return HostMemory(total, available, status.get("VmRSS", 0), status.get("VmHWM", 0))


def _read_kv(path: str) -> Dict[str, int]:
    """``Name:  123 kB`` lines as bytes."""
    out: Dict[str, int] = {}
    try:
        with open(path) as f:
            for line in f:
                name, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    out[name] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    except OSError:
        pass
    return out


def _first_int(paths) -> int:
    for path in paths:
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:  # "max" or a huge number means no limit
            return int(text)
    return 0


def device_peak_bytes() -> int:
    """Peak memory on the first GPU in this process, or 0 without one."""
    import tensorflow as tf

    if not tf.config.list_logical_devices("GPU"):
        return 0
    return int(tf.config.experimental.get_memory_info("GPU:0").get("peak", 0))


def device_total_bytes() -> int:
    """Memory of the first NVIDIA GPU (TensorFlow does not report it), or 0 where unknown."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total",
                              "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=20, check=True)
        return int(float(out.stdout.split()[0]) * MB)
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return 0


@dataclasses.dataclass(frozen=True)
class Footprint:
    """What one training step holds, for one replica, estimated from the model."""

    parameters: int
    parameter_bytes: int  # weights + gradients + optimizer slots
    activation_bytes_per_example: int  # layer outputs kept for backprop, and their gradients
    input_bytes_per_example: int
    known_shapes: bool  # False for subclassed models, whose layer outputs are unknown

    def step_bytes(self, batch: int) -> int:
        per_example = self.activation_bytes_per_example + self.input_bytes_per_example
        return self.parameter_bytes + per_example * batch

    def largest_batch(self, budget: int, replicas: int, fixed: int = 0) -> int:
        """The largest per-replica batch whose step fits ``budget`` across the replicas."""
        per_example = self.activation_bytes_per_example + self.input_bytes_per_example
        room = budget * HEADROOM - fixed - self.parameter_bytes * replicas
        return max(0, int(room // max(per_example * replicas, 1)))


def model_footprint(model) -> Footprint:
    """Parameters and per-example activation bytes from the layers' output shapes."""
    parameters = int(model.count_params())
    activations = inputs = 0
    known = True
    for layer, tensor in _layer_outputs(model):
        size = _elements(tensor.shape) * _dtype_size(tensor.dtype)
        if type(layer).__name__ == "InputLayer":
            inputs += size
        else:
            activations += size
    if not activations:
        known = False
    return Footprint(parameters, parameters * VARIABLE_BYTES * (2 + ADAM_SLOTS),
                     2 * activations, inputs, known)


def _layer_outputs(model, top: bool = True) -> Iterator:
    """(layer, output tensor) for every layer node, nested functional models included."""
    import tensorflow as tf

    for layer in getattr(model, "layers", []):
        if getattr(layer, "_is_graph_network", False):
            yield from _layer_outputs(layer, top=False)  # count a nested model's own layers
            continue
        if not top and type(layer).__name__ == "InputLayer":
            continue  # the outer tensor it stands for is already counted
        for node in getattr(layer, "_inbound_nodes", []):
            for tensor in tf.nest.flatten(getattr(node, "outputs", [])):
                if hasattr(tensor, "shape"):
                    yield layer, tensor


def _elements(shape) -> int:
    dims: List[int] = [d for d in list(shape)[1:] if d is not None]
    return int(math.prod(dims)) if dims else 1


def _dtype_size(dtype) -> int:
    import tensorflow as tf

    return max(tf.as_dtype(dtype).size, 1)
