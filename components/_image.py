"""The one place the suite's version and container image reference live.

Every component's ``base_image``, the Dockerfiles, the manifests and the compiled
pipeline YAML must agree with ``IMAGE``; tests check that they do.
"""

__version__ = "0.1.0"
IMAGE_NAME = "tfkfp/tfkfp"
IMAGE = f"{IMAGE_NAME}:{__version__}"
GPU_IMAGE = f"{IMAGE}-gpu"  # images/gpu/Dockerfile: TensorFlow with its CUDA extras
# Set on every step of a pipeline compiled with ``tfkfp compile --image`` (and read from the
# environment by that command): the image the step runs in, which train's cluster launchers
# also give their replicas unless launcher_options name another.
IMAGE_ENV = "TFKFP_IMAGE"


def step_image() -> str:
    """The image this step runs in: ``TFKFP_IMAGE`` where set, else the suite's own."""
    import os

    return os.environ.get(IMAGE_ENV) or IMAGE
