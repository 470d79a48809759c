"""The record layouts: how a Dataset's columns sit in each ``tf.train.Example``, one table.

Every writer and reader asks a layout's properties, never its name: whether the scalar
float32 and int64 features share one list feature per dtype (``packs_scalars``, in the
order the schema's packed groups list them) and whether a record holds a block of rows
(``multi_row``: every feature lists its values for ``block_rows`` consecutive rows, one row
after another) instead of one row. Adding a layout whose records are built from these two
properties is one entry here; see ``common.data.schema`` for the groups and
``common.data.parsing`` for how each is read.
"""

import dataclasses
from typing import Dict


@dataclasses.dataclass(frozen=True)
class RecordLayout:
    name: str
    packs_scalars: bool  # scalar float32 / int64 features share one list feature per dtype
    multi_row: bool  # a record holds a block of rows (block_rows) rather than one row
    summary: str  # one line for help texts and docs


LAYOUTS: Dict[str, RecordLayout] = {layout.name: layout for layout in (
    RecordLayout("columns", packs_scalars=False, multi_row=False,
                 summary="one feature per column, a row a record (what outside clients send)"),
    RecordLayout("packed", packs_scalars=True, multi_row=False,
                 summary="scalar features of one dtype in one list, a row a record: parses "
                         "about 2x faster than columns"),
    RecordLayout("blocks", packs_scalars=True, multi_row=True,
                 summary="packed, block_rows rows a record: per-record costs paid once a "
                         "block"),
)}
DEFAULT_LAYOUT = "packed"  # what shard_tfrecords, the pipelines and the CLI write by default
DEFAULT_BLOCK_ROWS = 256
MAX_BLOCK_ROWS = 65_536


def names() -> tuple:
    """The layouts' names, in the table's order (for messages and choices)."""
    return tuple(LAYOUTS)
