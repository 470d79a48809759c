"""The flags ``tfkfp compile`` and ``tfkfp submit`` share: how the compiled steps run (--gpus,
--image, --sizes, --store-secret), each checked before anything is written or sent."""

import argparse
import os

from tfkfp.components._image import IMAGE, IMAGE_ENV
from tfkfp.pipelines.accelerator import DEFAULT_TYPE, parse_gpu


def add_gpu_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", type=int, default=0, metavar="COUNT",
                        help="run training's train step in the GPU image on COUNT GPUs")
    parser.add_argument("--gpu-type", default=DEFAULT_TYPE, metavar="TYPE",
                        help=f"what the cluster schedules: {DEFAULT_TYPE} (Kubernetes, the "
                        "default) or a Vertex AI accelerator such as NVIDIA_TESLA_T4")


def add_image_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--image", default=os.environ.get(IMAGE_ENV, ""),
                        metavar="REGISTRY/NAME:TAG",
                        help=f"run every step in this image (GPU steps in TAG-gpu) instead of "
                        f"{IMAGE}; REGISTRY/NAME[:TAG]@sha256:DIGEST is kept as given (no "
                        "GPU steps); auto: the digest scripts/build-image.sh recorded in "
                        f"images/built-image.txt; default ${IMAGE_ENV}")


def image(args: argparse.Namespace, gpu) -> str:
    """--image checked, ``auto`` resolved, before anything is written ("": the suite's)."""
    if not args.image:
        return ""
    from tfkfp.pipelines.images import gpu_variant, resolve_image

    resolved = resolve_image(args.image)
    if gpu is not None:
        gpu_variant(resolved)  # a digest cannot name the GPU steps' image: refused here
    return resolved


def add_sizes_option(parser: argparse.ArgumentParser) -> None:
    from tfkfp.pipelines.resources import profiles

    parser.add_argument("--sizes", choices=profiles(), default="cluster",
                        help="the steps' CPU and memory: cluster (the gke and onprem overlays, "
                        "the default) or kind (a laptop; within the kind overlay's LimitRange)")


def add_store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store-secret", default="", metavar="SECRET",
                        help="give every step the keys of this Secret (keys accesskey and "
                        "secretkey, as KFP's mlpipeline-minio-artifact) as AWS_ACCESS_KEY_ID "
                        "and AWS_SECRET_ACCESS_KEY, so steps read s3:// and minio:// data and "
                        "stream shards from the data root (docs/how-to/object-stores.md)")
    parser.add_argument("--store-endpoint", default="", metavar="URL",
                        help="with --store-secret: the store's URL as AWS_ENDPOINT_URL, e.g. "
                        "http://minio-service.kubeflow:9000 (default: that for minio://, AWS "
                        "for s3://)")


def store(args: argparse.Namespace):
    """The store access of --store-secret/--store-endpoint, checked (None without them)."""
    if args.store_endpoint and not args.store_secret:
        raise ValueError("--store-endpoint needs --store-secret SECRET (the keys to use)")
    if not args.store_secret:
        return None
    from tfkfp.pipelines.store_access import StoreAccess

    return StoreAccess(args.store_secret, args.store_endpoint)


def gpu(args: argparse.Namespace):
    """The train step's GPU request from --gpus and --gpu-type (None for none)."""
    if not args.gpus:
        if args.gpu_type != DEFAULT_TYPE:
            raise ValueError(f"--gpu-type {args.gpu_type} needs --gpus COUNT")
        return None
    return parse_gpu(args.gpus, args.gpu_type)
