"""The one place the suite's version and container image reference live.

Every component's ``base_image``, the Dockerfiles, the manifests and the compiled
pipeline YAML must agree with ``IMAGE``; tests check that they do.
"""

__version__ = "0.1.0"
IMAGE_NAME = "tfkfp/tfkfp"
IMAGE = f"{IMAGE_NAME}:{__version__}"
GPU_IMAGE = f"{IMAGE}-gpu"  # images/gpu/Dockerfile: TensorFlow with its CUDA extras
