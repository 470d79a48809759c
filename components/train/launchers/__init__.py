"""Where a training cluster runs: ``local`` processes on this machine, a Kubeflow Training
Operator ``tfjob``, a Kubeflow Trainer v2 ``trainjob``, or a Vertex AI CustomJob (``vertex``).
All render one ClusterShape (see common/training/shape.py); tfjob and trainjob share kube.py."""

from typing import Iterable

TAIL_LINES = 40  # log lines of the replicas kept for a failure's message


def indented(lines: Iterable[str]) -> str:
    return "\n".join(f"  {line}" for line in lines)
