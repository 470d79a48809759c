"""``tfkfp allow-image``: list images in a kustomize overlay's tfkfp-config allow-list, so a
pipeline compiled with ``--image`` passes ``tfkfp check`` and the cluster's own checks.

The images go in a patch file beside the overlay's kustomization.yaml, which gains one
``patches`` entry; kustomize's ``images`` field does not rewrite ConfigMap data, so the
allow-list needs its own patch. Running it again rewrites the patch with the new list.
"""

import argparse
import os
from typing import List

from tfkfp.components._image import IMAGE
from tfkfp.pipelines.overlays import ALLOWLIST, IMAGES

PATCH = "tfkfp-allow-list.yaml"
SERVING_IMAGES = "servingImages"  # deploy_model's key (components/deploy_model)


def add_parser(commands) -> None:
    allow = commands.add_parser(
        "allow-image", help="add images to a kustomize overlay's allow-list (tfkfp-config)",
        description="Write the images into a patch of the overlay's tfkfp-config ConfigMap "
        f"({IMAGES} and {SERVING_IMAGES}, beside the suite's own {IMAGE}) and add the patch "
        "to its kustomization.yaml. Commit both; render the overlay afterwards.")
    allow.add_argument("images", nargs="+", metavar="REGISTRY/NAME:TAG",
                       help="the images tfkfp compile --image names (add TAG-gpu for GPU steps)")
    allow.add_argument("--overlay", required=True, metavar="FOLDER",
                       help="a kustomize overlay folder, e.g. manifests/overlays/gke")


def run_allow_image(args: argparse.Namespace) -> None:
    kustomization = os.path.join(args.overlay, "kustomization.yaml")
    if not os.path.isfile(kustomization):
        raise ValueError(f"--overlay {args.overlay}: no kustomization.yaml there; give a "
                         "kustomize overlay folder, e.g. manifests/overlays/gke")
    images = list(dict.fromkeys([*args.images, IMAGE]))
    with open(os.path.join(args.overlay, PATCH), "w") as f:
        f.write(patch_text(images))
    added = add_patch_entry(kustomization)
    print(f"{len(images)} image(s) in {os.path.join(args.overlay, PATCH)}"
          + (f"; listed it in {kustomization}" if added else ""))


def patch_text(images: List[str]) -> str:
    listed = "".join(f"\n    {image}" for image in images)
    return (f"# Written by tfkfp allow-image: the images steps and replicas may run.\n"
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {ALLOWLIST}\n"
            f"data:\n  {IMAGES}: |{listed}\n  {SERVING_IMAGES}: |{listed}\n")


def add_patch_entry(kustomization: str) -> bool:
    """Add ``- path: PATCH`` under ``patches:`` (made if absent), keeping the file's
    comments; False when it is already there."""
    with open(kustomization) as f:
        lines = f.read().splitlines()
    entry = f"  - path: {PATCH}"
    if entry in lines:
        return False
    if "patches:" in lines:
        lines.insert(lines.index("patches:") + 1, entry)
    else:
        lines += ["patches:", entry]
    with open(kustomization, "w") as f:
        f.write("\n".join(lines) + "\n")
    return True
