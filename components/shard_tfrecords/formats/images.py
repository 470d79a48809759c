"""An image folder: one subfolder per class, a chunk per few thousand files."""

import io
from typing import Dict, List, Tuple

import numpy as np

from tfkfp.components.common.data.dataset import MANIFEST_FILE
from tfkfp.components.common.platform import uris
from tfkfp.components.shard_tfrecords.errors import ShardInputError
from tfkfp.components.shard_tfrecords.formats.base import Chunk, RawColumn, read_range

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif")
IMAGE_COLUMN, IMAGE_LABEL, IMAGE_KEY = "image", "label", "filename"
IMAGES_PER_CHUNK = 2000


class Images:
    @staticmethod
    def columns(uri: str, column_types: Dict[str, str], cheap: bool = False) -> List[RawColumn]:
        files = _image_files(uri)
        if not files:
            raise ShardInputError(_no_images(uri))
        first = files[0][0]
        height, width, channels = _image_info(first, read_range(first, 0, uris.size(first)))
        return [RawColumn(IMAGE_KEY, "string"),
                RawColumn(IMAGE_COLUMN, "string", image_shape=(height, width, channels)),
                RawColumn(IMAGE_LABEL, "string")]

    @staticmethod
    def chunks(uri: str, first_index: int) -> List[Chunk]:
        files = _image_files(uri)
        flat = [item for pair in files for item in pair]
        step = 2 * IMAGES_PER_CHUNK
        return [Chunk(first_index + i // step, "images", uri, files=tuple(flat[i:i + step]),
                      root=uri) for i in range(0, len(flat), step)]

    @staticmethod
    def read(chunk: Chunk, columns: List[RawColumn]) -> Dict[str, np.ndarray]:
        paths, labels = chunk.files[0::2], chunk.files[1::2]
        blobs = []
        for path in paths:
            with uris.open_file(path) as f:
                blob = f.read()
            _image_info(path, blob)  # fails with the file name when it does not decode
            blobs.append(blob)
        names = [p[len(chunk.root):].lstrip("/") for p in paths]
        return {IMAGE_KEY: np.array(names, dtype=object),
                IMAGE_COLUMN: np.array(blobs, dtype=object),
                IMAGE_LABEL: np.array(labels, dtype=object)}


def _image_files(folder: str) -> List[Tuple[str, str]]:
    found = []
    for label in class_folders(folder):
        sub = uris.join(folder, label)
        found += [(uris.join(sub, n), label) for n in uris.listdir(sub)
                  if n.lower().endswith(IMAGE_EXTENSIONS)]
    return found


def _no_images(folder: str) -> str:
    """Why an image folder has no images: Datasets an earlier run wrote into the input folder
    (whose subfolders made it look like one), or class subfolders without image files."""
    subfolders = class_folders(folder)
    datasets = [uris.join(folder, n) for n in subfolders
                if uris.exists(uris.join(folder, n, MANIFEST_FILE))]
    if datasets:
        return (f"input folder {folder} was read as an image folder because of its "
                f"subfolders {subfolders}, but {', '.join(datasets)} is a Dataset (it holds "
                f"{MANIFEST_FILE}) that an earlier run wrote into the input folder, not a "
                "class of images; write Datasets outside the input folder (move this one "
                f"out), or give input_uri as a pattern such as {uris.join(folder, '*.csv')}")
    return (f"image folder {folder} has class subfolders {subfolders} but no images with "
            f"extensions {IMAGE_EXTENSIONS}")


def _image_info(path: str, blob: bytes) -> Tuple[int, int, int]:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(blob)) as img:
            img.load()  # decodes the pixels: a truncated file fails here
            channels = {"L": 1, "P": 3, "RGB": 3, "RGBA": 4, "LA": 2}.get(img.mode, 3)
            return img.height, img.width, 1 if channels == 2 else channels
    except Exception as err:
        raise ShardInputError(f"{path} is not a readable image ({err}); expected PNG, JPEG, "
                              "BMP or GIF") from err


def class_folders(folder: str) -> List[str]:
    return [n for n in uris.listdir(folder)
            if not n.startswith(".") and uris.isdir(uris.join(folder, n))]
