"""A dataset column (``Column``): its dtype, shape, role and encoding, checked as it is
made, and its tensor name, the form of its name TensorFlow and TFLite take (``tensor_names``).

``common.data.schema`` gathers the columns into a schema, with its record layout and its
``schema.json``; ``SchemaError`` is the one error both raise.
"""

import dataclasses
import re
import unicodedata
from typing import Any, Dict, List, Sequence, Tuple

DTYPES = ("float32", "int64", "string")
ROLES = ("feature", "label", "key")
ENCODINGS = ("image",)
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
        require(self.dtype in DTYPES, f"column {self.name!r}: dtype {self.dtype!r}", DTYPES)
        require(self.role in ROLES, f"column {self.name!r}: role {self.role!r}", ROLES)
        if self.encoding is not None:
            require(
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


def require(ok: bool, what: str, allowed: Sequence[str]) -> None:
    if not ok:
        raise SchemaError(f"{what} is not allowed; expected one of {', '.join(allowed)}")
