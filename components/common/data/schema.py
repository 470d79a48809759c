"""The dataset schema every component agrees on, stored as ``schema.json`` beside the shards.

Each column has a name, a dtype (``float32``, ``int64`` or ``string``), a per-example shape,
a role: ``feature`` (model input), ``label`` (target) or ``key`` (passthrough, carried to
predictions so they can be joined back), and the count of rows with a gap (``missing``, see
``common.data.missing``). Encoded images are ``string`` columns with ``encoding="image"`` and the
decoded ``image_shape``. A classification label carries its
vocabulary: the sorted distinct values, whose positions are the class indices.

The record layout (``layout``, one of the table in ``common.data.layouts``) says how the
columns sit in each ``tf.train.Example``:
``columns``, one feature per column (a schema.json without a layout means this), or
``packed``, where the scalar ``float32`` features share one ``FloatList`` feature and the
scalar ``int64`` features one ``Int64List`` feature per row, in the order the schema's
``packed`` groups list them; strings, images, labels, keys and multi-value features keep one
feature each. ``blocks`` has the ``packed`` features, but each Example holds up to
``block_rows`` consecutive rows: every feature lists its values for those rows one row
after another (a block of 3 rows of a ``float32[2]`` column holds 6 floats), so a reader
pays the per-record costs once per block. Readers take the layout from here alone (see
``common.data.parsing``).

A column keeps the name its file gives it (any text: spaces, ``/``, any script) everywhere a
user sees it. TensorFlow and TFLite restrict the names of signature inputs and graph nodes,
so each column also has a ``tensor`` name, made once (``common.data.columns``) and stored in
``schema.json`` where it differs: the name itself when it is already a plain identifier, else
a readable ASCII form of it, told apart from every other column's by a numbered suffix.
Models, bundles and servers name their inputs by it and publish the mapping.

``Column`` and ``SchemaError`` live in ``common.data.columns``, the packed groups in
``common.data.packing``; most callers import ``Column`` and ``SchemaError`` from here.
"""

import dataclasses
import json
import math
from typing import Any, Dict, List, Tuple

from tfkfp.components.common.data import layouts
from tfkfp.components.common.data.columns import Column, SchemaError, require, tensor_names
from tfkfp.components.common.data.layouts import DEFAULT_BLOCK_ROWS, MAX_BLOCK_ROWS, RecordLayout
from tfkfp.components.common.data.packing import (
    PACKED_DTYPES,
    PackedGroup,
    packable,
    packed_groups,
)
from tfkfp.components.common.platform import uris

SCHEMA_FILE = "schema.json"
SCHEMA_VERSION = 1


@dataclasses.dataclass(frozen=True)
class Schema:
    columns: Tuple[Column, ...]
    layout: str = "columns"
    packed: Tuple[PackedGroup, ...] = ()
    block_rows: int = 0  # rows per Example in the ``blocks`` layout (0 in the others)

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise SchemaError(f"schema names these columns more than once: {duplicates}")
        self._assign_tensor_names()
        labels = [c.name for c in self.columns if c.role == "label"]
        if len(labels) > 1:
            raise SchemaError(f"schema has more than one label column: {labels}")
        require(self.layout in layouts.LAYOUTS, f"schema layout {self.layout!r}",
                 layouts.names())
        if not self.record_layout.packs_scalars and self.packed:
            raise SchemaError(f"schema layout {self.layout!r} cannot have packed groups; "
                              "expected a layout that packs scalars with them")
        self._check_block_rows()
        for group in self.packed:
            self._check_group(group, names)
        packed = [n for g in self.packed for n in g.columns]
        if len(set(packed)) != len(packed):
            raise SchemaError(f"schema packed groups must list each column in one group; "
                              f"found {[g.to_dict() for g in self.packed]}")

    def _assign_tensor_names(self) -> None:
        """Give every column its tensor name (tensor_names); refuse two columns given one."""
        given = [c.tensor for c in self.columns]
        tensors = tensor_names([c.name for c in self.columns], given)
        shared = {t for t in tensors if tensors.count(t) > 1}
        if shared:
            clash = [c.name for c, t in zip(self.columns, tensors) if t in shared]
            raise SchemaError(f"schema columns {clash} have one tensor name "
                              f"{sorted(shared)[0]!r}; each column needs its own")
        if tensors != given:  # frozen: set once, as the columns are made
            object.__setattr__(self, "columns", tuple(
                dataclasses.replace(c, tensor=t) for c, t in zip(self.columns, tensors)))

    def _check_group(self, group: PackedGroup, names: List[str]) -> None:
        where = f"schema packed group {group.feature!r}"
        require(group.dtype in PACKED_DTYPES, f"{where}: dtype {group.dtype!r}", PACKED_DTYPES)
        if group.feature in names:
            raise SchemaError(f"{where}: a column has that name too")
        for name in group.columns:
            col = self.column(name)
            if not packable(col) or col.dtype != group.dtype:
                raise SchemaError(f"{where}: column {name!r} ({col.role}, {col.dtype}"
                                  f"{list(col.shape)}) cannot be packed there; a group holds "
                                  f"scalar {group.dtype} feature columns")
        if not group.columns:
            raise SchemaError(f"{where} lists no columns")

    def _check_block_rows(self) -> None:
        if not self.record_layout.multi_row:
            if self.block_rows:
                raise SchemaError(f"schema layout {self.layout!r} cannot have block_rows "
                                  f"{self.block_rows}; only a layout of blocks of rows has "
                                  "them")
            return
        if not isinstance(self.block_rows, int) or not 1 <= self.block_rows <= MAX_BLOCK_ROWS:
            raise SchemaError(f"schema layout {self.layout!r} needs block_rows, a whole number "
                              f"from 1 to {MAX_BLOCK_ROWS}; found {self.block_rows!r}")
        if not any(math.prod(c.shape) for c in self.columns):  # values a row
            raise SchemaError(f"schema layout {self.layout!r} needs a column with at least one "
                              "value per row, to count a block's rows")

    def with_layout(self, layout: str, block_rows: int = DEFAULT_BLOCK_ROWS) -> "Schema":
        """This schema with its columns laid out as ``layout`` (common.data.layouts); ``blocks``
        holds ``block_rows`` rows per Example."""
        require(layout in layouts.LAYOUTS, f"layout {layout!r}", layouts.names())
        chosen = layouts.LAYOUTS[layout]
        groups = packed_groups(self.columns) if chosen.packs_scalars else ()
        return dataclasses.replace(self, layout=layout, packed=groups,
                                   block_rows=block_rows if chosen.multi_row else 0)

    @property
    def record_layout(self) -> RecordLayout:
        """The layout's entry in common.data.layouts (what its records hold)."""
        return layouts.LAYOUTS[self.layout]

    def with_raw_label(self) -> "Schema":
        """This schema with the label's class vocabulary dropped, so readers yield the
        label's values rather than class indices (a regressor on a whole-number label)."""
        columns = tuple(dataclasses.replace(c, vocabulary=None) if c.role == "label" else c
                        for c in self.columns)
        return dataclasses.replace(self, columns=columns)

    @property
    def names(self) -> List[str]:
        return [c.name for c in self.columns]

    @property
    def label(self) -> Column | None:
        return next((c for c in self.columns if c.role == "label"), None)

    @property
    def features(self) -> List[Column]:
        return [c for c in self.columns if c.role == "feature"]

    @property
    def keys(self) -> List[Column]:
        return [c for c in self.columns if c.role == "key"]

    def column(self, name: str) -> Column:
        for col in self.columns:
            if col.name == name:
                return col
        raise SchemaError(f"schema has no column {name!r}; it has {self.names}")

    def column_of_tensor(self, tensor: str) -> Column | None:
        """The column whose tensor name this is, if any."""
        return next((c for c in self.columns if c.tensor == tensor), None)

    def tensor_mapping(self) -> Dict[str, str]:
        """{column name: tensor name} for the feature columns whose names differ (what
        models, bundles and servers publish)."""
        return {c.name: c.tensor for c in self.features if c.tensor != c.name}

    def to_json(self) -> str:
        body = {"version": SCHEMA_VERSION, "layout": self.layout}
        if self.block_rows:
            body["block_rows"] = self.block_rows
        if self.packed:
            body["packed"] = [g.to_dict() for g in self.packed]
        body["columns"] = [c.to_dict() for c in self.columns]
        return json.dumps(body, indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "schema") -> "Schema":
        try:
            body = json.loads(text)
            columns = body["columns"]
        except (ValueError, KeyError, TypeError) as err:
            raise SchemaError(f"{source}: not a tfkfp schema ({err})") from err
        layout = body.get("layout", "columns")  # older schema files: one feature a column
        try:
            packed = tuple(PackedGroup.from_dict(g) for g in body.get("packed", ()))
            return cls(tuple(Column.from_dict(c) for c in columns), layout, packed,
                       body.get("block_rows", 0))
        except SchemaError as err:
            raise SchemaError(f"{source}: {err}") from None

    def save(self, directory: str) -> str:
        path = uris.join(directory, SCHEMA_FILE)
        uris.write_text_atomic(path, self.to_json())
        return path

    @classmethod
    def load(cls, path_or_dir: str) -> "Schema":
        path = path_or_dir
        if uris.isdir(path_or_dir):
            path = uris.join(path_or_dir, SCHEMA_FILE)
        if not uris.exists(path):
            raise SchemaError(f"no schema at {path}: expected the {SCHEMA_FILE} written "
                              "beside the shards by shard_tfrecords")
        return cls.from_json(uris.read_text(path), source=path)

    def summary(self) -> Dict[str, Any]:
        """A compact description for artifact metadata."""
        label = self.label
        return {
            "features": {c.name: c.dtype + _shape_text(c) for c in self.features},
            "label": label.name if label else None,
            "num_classes": len(label.vocabulary) if label and label.vocabulary else None,
            "keys": [c.name for c in self.keys],
            "missing": {c.name: c.missing for c in self.columns if c.missing},
            "layout": self.layout,
            **({"block_rows": self.block_rows} if self.block_rows else {}),
        }


def _shape_text(col: Column) -> str:
    if col.encoding == "image":
        return f" image{list(col.image_shape)}"
    return f"{list(col.shape)}" if col.shape else ""
