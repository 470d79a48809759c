"""batch_predict's output files by name: written once here for the step that writes them and
for every reader that finds them (serve's precomputed answers).

Input file k of N (from 0) becomes ``predictions-kkkkk-of-NNNNN.<ext>``, one row per record
that was predicted, and ``errors-kkkkk-of-NNNNN.<ext>``, the records that could not be; the
extension is the output format's. A reader of rows takes the JSON Lines and CSV predictions
files of a folder, whatever run wrote them.
"""

from typing import Dict, List, Sequence

from tfkfp.components.common.platform import uris

EXTENSIONS = {"jsonl": "jsonl", "csv": "csv", "tfrecord": "tfrecord"}  # format -> extension
PREDICTIONS, ERRORS = "predictions", "errors"
KINDS = (PREDICTIONS, ERRORS)
ROW_FORMATS = ("jsonl", "csv")  # the formats read back as rows


def shard_name(kind: str, index: int, count: int, fmt: str) -> str:
    """``predictions-00003-of-00010.jsonl``: the ``kind`` file of input ``index`` of
    ``count`` in format ``fmt``."""
    return f"{kind}-{index:05d}-of-{count:05d}.{EXTENSIONS[fmt]}"


def shard_names(index: int, count: int, fmt: str) -> Dict[str, str]:
    """``{"predictions": name, "errors": name}`` of input ``index`` of ``count``."""
    return {kind: shard_name(kind, index, count, fmt) for kind in KINDS}


def is_shard(name: str) -> bool:
    """Whether a file name is one of batch_predict's predictions or errors files (of any
    run, count or format)."""
    return name.startswith(tuple(f"{kind}-" for kind in KINDS))


def pattern(fmt: str) -> str:
    """The glob pattern of the predictions files in format ``fmt``."""
    return f"{PREDICTIONS}-*.{EXTENSIONS[fmt]}"


PATTERNS = tuple(pattern(fmt) for fmt in ROW_FORMATS)


def find(folder: str, formats: Sequence[str] = ROW_FORMATS) -> List[str]:
    """The predictions files in ``folder`` of the given formats, sorted."""
    return sorted(f for fmt in formats for f in uris.glob(uris.join(folder, pattern(fmt))))


def format_of(path: str) -> str:
    """The format of a predictions file, read from its extension ("" for another one)."""
    extension = path.rsplit(".", 1)[-1]
    return next((fmt for fmt, ext in EXTENSIONS.items() if ext == extension), "")
