"""tfkfp components: containerized KFP steps for high-performance TensorFlow."""

from tfkfp.components._image import IMAGE, IMAGE_NAME, __version__

__all__ = ["IMAGE", "IMAGE_NAME", "__version__"]
