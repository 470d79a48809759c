"""The packed layouts' groups (``PackedGroup``): scalar ``float32`` or ``int64`` feature
columns stored as one list feature per dtype, and which columns can be (``packable``).

A schema whose record layout packs scalars lists its groups (see ``common.data.schema``).
"""

import dataclasses
from typing import Any, Dict, Sequence, Tuple

from tfkfp.components.common.data.columns import Column, SchemaError

PACKED_DTYPES = ("float32", "int64")


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
