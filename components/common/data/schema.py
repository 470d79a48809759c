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
so each column also has a ``tensor`` name, made here once (``tensor_names``) and stored in
``schema.json`` where it differs: the name itself when it is already a plain identifier, else
a readable ASCII form of it, told apart from every other column's by a numbered suffix.
Models, bundles and servers name their inputs by it and publish the mapping.
"""

import dataclasses
import json
import math
import re
import unicodedata
from typing import Any, Dict, List, Sequence, Tuple

from tfkfp.components.common.data import layouts
from tfkfp.components.common.data.layouts import DEFAULT_BLOCK_ROWS, MAX_BLOCK_ROWS, RecordLayout
from tfkfp.components.common.platform import uris

DTYPES = ("float32", "int64", "string")
ROLES = ("feature", "label", "key")
ENCODINGS = ("image",)
PACKED_DTYPES = ("float32", "int64")
SCHEMA_FILE = "schema.json"
SCHEMA_VERSION = 1
# A tensor name: ASCII letters and digits in words joined by single underscores, starting
# with a letter. TensorFlow accepts it anywhere (signature inputs, op and layer names), and
# '__' never occurs in one, so '<tensor>__<suffix>' names can never collide with another.
TENSOR_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*\Z")
MAX_TENSOR_NAME = 64


class SchemaError(ValueError):
    """A schema that is malformed or does not match the data it describes."""


@dataclasses.dataclass(frozen=True)
class Column:
    name: str
    dtype: str
    shape: Tuple[int, ...] = ()
    role: str = "feature"
    encoding: str | None = None
    image_shape: Tuple[int, int, int] | None = None
    vocabulary: Tuple[Any, ...] | None = None
    missing: int = 0  # rows with a gap (see common.data.missing) when the data was sharded
    tensor: str = ""  # its name in TensorFlow and TFLite; "": given by the Schema

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise SchemaError(f"column name {self.name!r} is not text")
        if self.tensor and not valid_tensor_name(self.tensor):
            raise SchemaError(f"column {self.name!r}: tensor name {self.tensor!r} is not "
                              f"allowed; expected ASCII letters and digits in words joined by "
                              f"single underscores, starting with a letter, at most "
                              f"{MAX_TENSOR_NAME} characters")
        _require(self.dtype in DTYPES, f"column {self.name!r}: dtype {self.dtype!r}", DTYPES)
        _require(self.role in ROLES, f"column {self.name!r}: role {self.role!r}", ROLES)
        if self.encoding is not None:
            _require(
                self.encoding in ENCODINGS,
                f"column {self.name!r}: encoding {self.encoding!r}",
                ENCODINGS,
            )
            if self.dtype != "string" or self.image_shape is None:
                raise SchemaError(
                    f"column {self.name!r}: an image column needs dtype 'string' and an "
                    f"image_shape [height, width, channels]; found dtype {self.dtype!r}, "
                    f"image_shape {self.image_shape}"
                )

    def to_dict(self) -> Dict[str, Any]:
        out = {"name": self.name, "dtype": self.dtype, "shape": list(self.shape),
               "role": self.role}
        if self.encoding:
            out["encoding"] = self.encoding
            out["image_shape"] = list(self.image_shape)
        if self.vocabulary is not None:
            out["vocabulary"] = list(self.vocabulary)
        if self.missing:
            out["missing"] = self.missing
        if self.tensor and self.tensor != self.name:
            out["tensor"] = self.tensor
        return out

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Column":
        try:
            return cls(
                name=data["name"],
                dtype=data["dtype"],
                shape=tuple(data.get("shape", ())),
                role=data.get("role", "feature"),
                encoding=data.get("encoding"),
                image_shape=tuple(data["image_shape"]) if data.get("image_shape") else None,
                vocabulary=tuple(data["vocabulary"]) if "vocabulary" in data else None,
                missing=int(data.get("missing", 0)),
                tensor=data.get("tensor", ""),
            )
        except KeyError as err:
            raise SchemaError(f"schema column {data!r} has no {err.args[0]!r} field") from err


def valid_tensor_name(name: str) -> bool:
    return len(name) <= MAX_TENSOR_NAME and TENSOR_NAME.match(name) is not None


def tensor_name_for(name: str, position: int) -> str:
    """The readable ASCII tensor name for a column name (not yet told apart from others):
    accents dropped, ß as ss, every other run of characters outside [A-Za-z0-9] one underscore;
    ``c_`` before a leading digit; ``column_<position>`` when nothing is left."""
    words = re.findall(r"[A-Za-z0-9]+", "".join(_ascii(ch) for ch in
                                                unicodedata.normalize("NFKD", name)))
    text = "_".join(words)[:MAX_TENSOR_NAME - 4].strip("_")
    if not text:
        return f"column_{position}"
    return f"c_{text}" if text[0].isdigit() else text


def _ascii(ch: str) -> str:
    """A character's ASCII form: itself, nothing for an accent, its case folding where that
    is ASCII (ß: ss), else a word break."""
    if ch.isascii():
        return ch
    if unicodedata.combining(ch):
        return ""
    folded = ch.casefold()
    return folded if folded.isascii() else " "


def tensor_names(names: Sequence[str], given: Sequence[str] = ()) -> List[str]:
    """Each column's tensor name: ``given`` where set, the name itself where it is already a
    tensor name, else tensor_name_for(name), numbered (``_2``, ``_3``...) past every name
    taken, so no two columns share one."""
    given = list(given) or [""] * len(names)
    taken = {g for g in given if g}
    taken.update(n for n, g in zip(names, given) if not g and valid_tensor_name(n))
    out = []
    for position, (name, tensor) in enumerate(zip(names, given)):
        if not tensor and valid_tensor_name(name):
            tensor = name
        elif not tensor:
            base = tensor_name_for(name, position)
            tensor, number = base, 2
            while tensor in taken:
                tensor, number = f"{base}_{number}", number + 1
            taken.add(tensor)
        out.append(tensor)
    return out


def _require(ok: bool, what: str, allowed: Sequence[str]) -> None:
    if not ok:
        raise SchemaError(f"{what} is not allowed; expected one of {', '.join(allowed)}")


@dataclasses.dataclass(frozen=True)
class PackedGroup:
    """Scalar feature columns of one dtype stored as one list feature, in this order."""

    feature: str  # the Example feature that holds them
    dtype: str
    columns: Tuple[str, ...]

    def to_dict(self) -> Dict[str, Any]:
        return {"feature": self.feature, "dtype": self.dtype, "columns": list(self.columns)}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "PackedGroup":
        try:
            return cls(data["feature"], data["dtype"], tuple(data["columns"]))
        except (KeyError, TypeError) as err:
            raise SchemaError(f"schema packed group {data!r} needs 'feature', 'dtype' and "
                              f"'columns' ({err})") from err


def scalar_of(column: Column, dtype: str) -> bool:
    """Whether the column holds one plain ``dtype`` value a row (no shape; not encoded, as an
    image's bytes are): such columns can sit side by side in one list or one matrix."""
    return column.dtype == dtype and not column.shape and column.encoding is None


def packable(column: Column) -> bool:
    """Whether the packed layout packs this column (a scalar float32 or int64 feature)."""
    return (column.role == "feature" and column.dtype in PACKED_DTYPES
            and scalar_of(column, column.dtype))


def packed_groups(columns: Sequence[Column]) -> Tuple[PackedGroup, ...]:
    """The packed layout's groups for these columns: one per dtype that has a packable
    column, under a feature name no column has (``packed_float32``, ``_packed_float32``...)."""
    names = {c.name for c in columns}
    groups = []
    for dtype in PACKED_DTYPES:
        members = tuple(c.name for c in columns if packable(c) and c.dtype == dtype)
        if members:
            feature = f"packed_{dtype}"
            while feature in names:
                feature = "_" + feature
            groups.append(PackedGroup(feature, dtype, members))
    return tuple(groups)


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
        _require(self.layout in layouts.LAYOUTS, f"schema layout {self.layout!r}",
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
        _require(group.dtype in PACKED_DTYPES, f"{where}: dtype {group.dtype!r}", PACKED_DTYPES)
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
        _require(layout in layouts.LAYOUTS, f"layout {layout!r}", layouts.names())
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
