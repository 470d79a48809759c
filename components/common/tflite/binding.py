"""How any SavedModel signature is fed from a Dataset, and what its outputs are compared on.

freeze_quantize and export_tflite take any SavedModel: a tfkfp model (``serving_raw``), one
written by ``tf.saved_model.save``, tf_keras or Keras 3's ``model.export()``. The signature
defaults to ``serving_raw`` when the model has one, else ``serving_default``. Each of its
inputs is fed from a Dataset column:

1. an explicit mapping ``{signature input: column}`` (``input_mapping``, JSON in a pipeline);
2. else the column with the input's name;
3. else, for a one-input signature, the Dataset's single feature column, or its single image
   column.

A column feeds an input when their dtypes agree (a whole-number or float column also feeds a
float input, cast on the way in) and their per-example shapes agree where the signature fixes
them; an image column (decoded to float32 in [0, 1]) is resized to the input's height and
width, and a grey image fed to an RGB input (or an RGB image to a grey one) is converted
(the grey value repeated; ITU-R 601 luma). A signature that fixes its batch size (e.g.
``[1, 299, 299, 3]``) is fed in calls of exactly that many examples. Anything else is refused
before any conversion, naming the signature input with its shape and dtype and the columns
available.

Outputs are whatever the signature returns. One float output of shape [batch, classes]
(classes >= 2) is read as class scores: top-1 agreement is measured on it, and accuracy when
the Dataset's label has as many classes. A tfkfp regressor's ``value`` (or a model's single
float output of one value per example, on a Dataset with a numeric label without classes) is
read as a regressor's prediction: its RMSE on the labels is measured. Every float output is
also compared by relative error (see common.tflite.parity).
"""

import dataclasses
from typing import Dict, List, Tuple

import numpy as np

from tfkfp.components.common.data.schema import Column, Schema
from tfkfp.components.common.model import savedmodel
from tfkfp.components.common.tflite.inputs import QuantizeInputError
from tfkfp.components.common.tflite.options import parse_mapping  # noqa: F401 - its users import it here
from tfkfp.components.common.tflite.parity import Reading

_FLOATS = ("float16", "float32", "float64", "bfloat16")


@dataclasses.dataclass(frozen=True)
class Binding:
    """Which column feeds each signature input, and how its outputs are read."""

    signature: str
    columns: Dict[str, str]  # signature input -> Dataset column
    dtypes: Dict[str, str]  # signature input -> its dtype (numpy name)
    resize: Dict[str, Tuple[int, int]]  # image inputs resized to the signature's HxW
    reading: Reading
    channels: Dict[str, int] = dataclasses.field(default_factory=dict)  # grey <-> RGB
    batch: int | None = None  # the batch size the signature fixes, if it fixes one

    def feed(self, by_column: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """Column arrays -> the signature's inputs (cast, resized, converted as bound)."""
        out = {}
        for name, column in self.columns.items():
            values = by_column[column]
            if name in self.resize:
                values = _resize(values, self.resize[name])
            if name in self.channels:
                values = _to_channels(values, self.channels[name])
            if values.dtype.kind in "iuf" and values.dtype.name != self.dtypes[name]:
                values = values.astype(self.dtypes[name])
            out[name] = values
        return out


def bind(fn, signature: str, schema: Schema, where: str,
         mapping: Dict[str, str] | None = None) -> Binding:
    """Bind the signature's inputs to the Dataset's columns; refuse what cannot feed."""
    specs = dict(fn.structured_input_signature[1])
    if not specs:
        raise QuantizeInputError(f"signature {signature!r} takes no named tensor inputs; "
                                 "nothing to feed from the Dataset")
    features = {c.name: c for c in schema.features}
    columns = _choose_columns(specs, features, signature, where, mapping or {})
    resize, channels = {}, {}
    for name, column in columns.items():
        size, converted = _check_fits(name, specs[name], features[column], signature, where,
                                      _available(features))
        if size is not None:
            resize[name] = size
        if converted is not None:
            channels[name] = converted
    dtypes = {n: _dtype_name(s.dtype) for n, s in specs.items()}
    reading = _reading(fn, schema)
    return Binding(signature, columns, dtypes, resize, reading, channels,
                   _fixed_batch(specs, signature))


def _fixed_batch(specs, signature: str) -> int | None:
    """The batch size every input fixes (None: any); inputs that fix different ones are
    refused."""
    fixed = {s.shape[0] for s in specs.values() if s.shape.rank and s.shape[0] is not None}
    if len(fixed) > 1:
        raise QuantizeInputError(f"signature {signature!r} fixes different batch sizes on its "
                                 f"inputs: {_inputs(specs)}; one batch size feeds them all")
    return fixed.pop() if fixed else None


def _choose_columns(specs, features: Dict[str, Column], signature: str, where: str,
                    mapping: Dict[str, str]) -> Dict[str, str]:
    unknown = sorted(set(mapping) - set(specs))
    if unknown:
        raise QuantizeInputError(f"input_mapping names {unknown}, which are not inputs of "
                                 f"signature {signature!r}; its inputs are {_inputs(specs)}")
    columns, unfed = {}, []
    by_tensor = {c.tensor: n for n, c in features.items()}  # a tfkfp model's input names
    for name in sorted(specs):
        column = mapping.get(name, by_tensor.get(name, name if name in features else None))
        if column is None and len(specs) == 1:
            column = _single_column(features)
        if column is None or column not in features:
            unfed.append(f"{name} ({_spec_text(specs[name])}"
                         + (f", mapped to {column!r})" if name in mapping else ")"))
        columns[name] = column
    if unfed:
        shown = ", ".join(unfed[:8]) + (f" and {len(unfed) - 8} more" if len(unfed) > 8 else "")
        raise QuantizeInputError(
            f"signature {signature!r} takes inputs that no feature column of {where} feeds: "
            f"{shown}; its feature columns are {_available(features)} (map signature inputs "
            'to columns with input_mapping, e.g. {"' + unfed[0].split(" ")[0] + '": "<column>"})')
    return columns


def _single_column(features: Dict[str, Column]) -> str | None:
    if len(features) == 1:
        return next(iter(features))
    images = [n for n, c in features.items() if c.encoding == "image"]
    return images[0] if len(images) == 1 else None


def _check_fits(name: str, spec, column: Column, signature: str, where: str,
                available: List[str]) -> Tuple[Tuple[int, int] | None, int | None]:
    """(the (height, width) an image column is resized to, the channels it is converted
    to), each None when it is fed as it is; refuses a misfit."""
    dtype = _dtype_name(spec.dtype)
    have_dtype = "float32" if column.encoding == "image" else column.dtype
    have_shape = savedmodel.raw_shape(column)
    want = spec.shape.as_list() if spec.shape.rank is not None else None
    ok_dtype = dtype == have_dtype or (dtype in _FLOATS and have_dtype in ("float32", "int64"))
    resize = channels = None
    if want is not None and column.encoding == "image" and len(want) == 4 and \
            _channels_fit(want[3], have_shape[2]) and None not in want[1:3]:
        resize = (want[1], want[2]) if want[1:3] != have_shape[:2] else None
        channels = want[3] if want[3] not in (None, have_shape[2]) else None
        ok_shape = True
    else:
        ok_shape = want is None or (len(want) == len(have_shape) + 1 and all(
            w is None or w == h for w, h in zip(want[1:], have_shape)))
    if ok_dtype and ok_shape:
        return resize, channels
    raise QuantizeInputError(
        f"column {column.name!r} of {where} ({_column_text(column)}) cannot feed signature "
        f"{signature!r} input {name!r} ({_spec_text(spec)}): "
        f"{'the dtypes differ' if not ok_dtype else 'the shapes differ'}; the feature "
        f"columns are {available}")


def _reading(fn, schema: Schema) -> Reading:
    outputs = fn.structured_outputs
    if set(savedmodel.OUTPUTS) <= set(outputs):
        return Reading()  # a tfkfp classifier: probabilities, class_ids, classes
    value = _regression_output(outputs, schema)
    if value:
        return Reading(scores=None, class_ids=None, accuracy=False, values=value)
    scores = [n for n, s in sorted(outputs.items()) if _dtype_name(s.dtype) in _FLOATS
              and s.shape.rank == 2 and (s.shape[-1] or 0) >= 2]
    if len(scores) != 1:
        return Reading(scores=None, class_ids=None, accuracy=False)
    label = schema.label
    classes = len(label.vocabulary) if label is not None and label.vocabulary else 0
    return Reading(scores=scores[0], class_ids=None,
                   accuracy=classes == outputs[scores[0]].shape[-1])


def _regression_output(outputs, schema: Schema) -> str | None:
    """The output holding a regressor's value: a tfkfp regressor's ``value``, or the single
    float output of one value per example where the label is a number without classes."""
    if set(outputs) == set(savedmodel.REGRESSION_OUTPUTS):
        return savedmodel.REGRESSION_OUTPUTS[0]
    label = schema.label
    if label is None or label.vocabulary or label.dtype == "string" or len(outputs) != 1:
        return None
    (name, spec), = outputs.items()
    single = spec.shape.rank == 1 or (spec.shape.rank == 2 and spec.shape[-1] == 1)
    return name if single and _dtype_name(spec.dtype) in _FLOATS else None


def _channels_fit(want: int | None, have: int) -> bool:
    """The same channels, or grey and RGB (converted on the way in)."""
    return want is None or want == have or {want, have} == {1, 3}


def _to_channels(images: np.ndarray, channels: int) -> np.ndarray:
    """Grey repeated into RGB, or RGB to grey by ITU-R 601 luma (as tf.image does)."""
    if channels == 3:
        return np.repeat(images, 3, axis=-1)
    luma = np.asarray([0.2989, 0.5870, 0.1140], np.float32)
    return (images @ luma)[..., None].astype(images.dtype)


def _resize(values: np.ndarray, size: Tuple[int, int]) -> np.ndarray:
    import tensorflow as tf

    return tf.image.resize(values, size).numpy().astype(values.dtype)


def _dtype_name(dtype) -> str:
    return "string" if dtype.name == "string" else dtype.name


def _spec_text(spec) -> str:
    shape = spec.shape.as_list() if spec.shape.rank is not None else "any shape"
    return f"{_dtype_name(spec.dtype)} {shape}"


def _column_text(column: Column) -> str:
    shape = [None, *savedmodel.raw_shape(column)]
    if column.encoding == "image":
        return f"image, decoded to float32 {shape}"
    return f"{column.dtype} {shape}"


def _available(features: Dict[str, Column], shown: int = 20) -> List[str]:
    # a name that is empty or has spaces at its ends is quoted, so they show
    listed = [f"{n if n and n == n.strip() else repr(n)} ({_column_text(c)})"
              for n, c in sorted(features.items())]
    if len(listed) > shown:
        listed = listed[:shown] + [f"and {len(listed) - shown} more"]
    return listed


def _inputs(specs) -> List[str]:
    return [f"{n} ({_spec_text(s)})" for n, s in sorted(specs.items())]
