"""The reference a converted model is measured against: one signature of a tfkfp
SavedModel, examples from a sharded Dataset whose schema matches it, and the signature's
outputs on them. Loaded and checked here for freeze_quantize and export_tflite."""

import dataclasses
from typing import Dict

import numpy as np

from tfkfp.components.common import savedmodel, uris
from tfkfp.components.common.schema import Schema, SchemaError


class QuantizeInputError(ValueError):
    """Bad input or options: the message names the path, signature, column or value."""


@dataclasses.dataclass(frozen=True)
class Examples:
    """Examples held in memory: raw-signature features by name and label class ids."""

    features: Dict[str, np.ndarray]
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


def check_model_dir(model_dir: str) -> None:
    if not uris.isdir(model_dir) or not savedmodel.is_savedmodel(model_dir):
        found = uris.listdir(model_dir) if uris.isdir(model_dir) else "nothing"
        raise QuantizeInputError(f"{model_dir} is not a SavedModel: expected saved_model.pb "
                                 f"there (written by train / export_model); found {found}")


def load_signature(model_dir: str, signature: str):
    """Load the SavedModel and return (loaded, concrete signature function)."""
    import tensorflow as tf

    check_model_dir(model_dir)
    loaded = tf.saved_model.load(model_dir)
    if signature not in loaded.signatures:
        raise QuantizeInputError(f"SavedModel {model_dir} has no signature {signature!r}; it "
                                 f"has {sorted(loaded.signatures)} (convert from "
                                 f"{savedmodel.SIGNATURE_RAW!r}, whose inputs are tensors)")
    return loaded, loaded.signatures[signature]


def signature_inputs(fn) -> Dict[str, object]:
    """{input name: tf.TensorSpec} of a concrete signature function."""
    return dict(fn.structured_input_signature[1])


def check_schema(fn, signature: str, schema: Schema, where: str) -> None:
    """The dataset's feature columns must be exactly the signature's inputs, same dtype."""
    specs = signature_inputs(fn)
    columns = {c.name: c for c in schema.features}
    missing = sorted(set(specs) - set(columns))
    if missing:
        raise QuantizeInputError(f"signature {signature!r} takes inputs {missing} that are not "
                                 f"feature columns of {where}; its features are "
                                 f"{sorted(columns)}")
    for name, spec in sorted(specs.items()):
        col = columns[name]
        dtype = savedmodel.raw_dtype(col)
        shape = [None, *savedmodel.raw_shape(col)]
        if spec.dtype != dtype or spec.shape.as_list() != shape:
            raise QuantizeInputError(
                f"column {name!r} of {where} is {dtype.name}{shape[1:]} but signature "
                f"{signature!r} expects {spec.dtype.name}{spec.shape.as_list()[1:]}")


def load_examples(dataset: str, split: str, limit: int, names, purpose: str) -> Examples:
    """Up to ``limit`` examples of one split, in file order, as NumPy arrays."""
    from tfkfp.components.common.reader import make_dataset

    if limit < 1:
        raise QuantizeInputError(f"{purpose} needs at least 1 example; got {limit}")
    try:
        ds = make_dataset(dataset, mode="eval", split=split, batch_size=min(limit, 512))
    except SchemaError as err:
        raise QuantizeInputError(f"{purpose} data: {err}") from err
    parts, labels, count = {}, [], 0
    for features, label in ds:
        for name in names:
            parts.setdefault(name, []).append(features[name].numpy())
        labels.append(label.numpy())
        count += len(labels[-1])
        if count >= limit:
            break
    if count == 0:
        raise QuantizeInputError(f"{purpose} data is empty: split {split!r} of {dataset} "
                                 "has no records")
    return Examples({n: np.concatenate(v)[:limit] for n, v in parts.items()},
                    np.concatenate(labels)[:limit])


def dataset_schema(dataset: str) -> Schema:
    try:
        return Schema.load(dataset if uris.isdir(dataset) else dataset.rsplit("/", 1)[0])
    except SchemaError as err:
        raise QuantizeInputError(f"dataset {dataset}: {err}") from err


def reference_outputs(fn, examples: Examples, batch_size: int = 512) -> Dict[str, np.ndarray]:
    """The SavedModel signature's outputs on the examples (the float reference)."""
    parts: Dict[str, list] = {}
    for start in range(0, len(examples), batch_size):
        batch = {k: v[start:start + batch_size] for k, v in examples.features.items()}
        for name, value in fn(**batch).items():
            parts.setdefault(name, []).append(value.numpy())
    return {name: np.concatenate(v) for name, v in parts.items()}
