"""The reference a converted model is measured against: one signature of a SavedModel,
examples from a sharded Dataset that feeds it (common.tflite.binding), and the signature's
outputs on them. Loaded and checked here for freeze_quantize and export_tflite."""

import dataclasses
from typing import Dict, Iterator, Tuple

import numpy as np

from tfkfp.components.common.data.schema import Schema, SchemaError
from tfkfp.components.common.model import savedmodel
from tfkfp.components.common.platform import uris
from tfkfp.components.common.tflite.options import QuantizeInputError


@dataclasses.dataclass(frozen=True)
class Examples:
    """Examples held in memory: signature inputs by name and label class ids (None when the
    Dataset has no label)."""

    features: Dict[str, np.ndarray]
    labels: np.ndarray | None
    batch: int | None = None  # the signature's fixed batch size, when it fixes one

    def __len__(self) -> int:
        return len(next(iter(self.features.values())))

    def batches(self, size: int) -> Iterator[Tuple[Dict[str, np.ndarray], int]]:
        """(inputs, rows that are real) per call: ``size`` rows, or the signature's fixed
        batch (see fixed_batches)."""
        return fixed_batches(self.features, size, self.batch)


def fixed_batches(features: Dict[str, np.ndarray], size: int, fixed: int | None = None
                  ) -> Iterator[Tuple[Dict[str, np.ndarray], int]]:
    """The arrays in calls of ``size`` rows; with ``fixed`` (a signature whose batch
    dimension is fixed, e.g. 1) in calls of exactly that many, the last padded by repeating
    its final row; yields (inputs, rows that are real)."""
    step = fixed or size
    count = len(next(iter(features.values())))
    for start in range(0, count, step):
        part = {k: v[start:start + step] for k, v in features.items()}
        real = min(step, count - start)
        if fixed and real < step:
            part = {k: np.concatenate([v, np.repeat(v[-1:], step - real, axis=0)])
                    for k, v in part.items()}
        yield part, real


def check_model_dir(model_dir: str) -> None:
    if not uris.isdir(model_dir) or not savedmodel.is_savedmodel(model_dir):
        found = uris.listdir(model_dir) if uris.isdir(model_dir) else "nothing"
        raise QuantizeInputError(f"{model_dir} is not a SavedModel: expected saved_model.pb "
                                 f"there (written by train / export_model); found {found}")


def load_signature(model_dir: str, signature: str):
    """Load the SavedModel and return (loaded, concrete signature function)."""
    loaded, fn, _ = load_model(model_dir, signature)
    return loaded, fn


def load_model(model_dir: str, signature: str = ""):
    """(loaded, concrete signature function, signature name); an empty signature picks
    serving_raw when the model has it, else serving_default."""
    import tensorflow as tf

    check_model_dir(model_dir)
    loaded = tf.saved_model.load(model_dir)
    name = signature or (savedmodel.SIGNATURE_RAW if savedmodel.SIGNATURE_RAW in
                         loaded.signatures else savedmodel.SIGNATURE_EXAMPLES)
    if name not in loaded.signatures:
        raise QuantizeInputError(f"SavedModel {model_dir} has no signature {name!r}; it "
                                 f"has {sorted(loaded.signatures)} (pass one of them as "
                                 "signature; its inputs must be tensors the Dataset's "
                                 "columns can feed)")
    return loaded, loaded.signatures[name], name


def signature_inputs(fn) -> Dict[str, object]:
    """{input name: tf.TensorSpec} of a concrete signature function."""
    return dict(fn.structured_input_signature[1])


def load_examples(dataset: str, split: str, limit: int, names, purpose: str,
                  raw_label: bool = False) -> Examples:
    """Up to ``limit`` examples of one split, in file order, as NumPy arrays.

    ``names``: the columns to read, fed by name; or a tflite_binding.Binding, whose
    ``feed`` turns columns into the signature's inputs (cast, resized). The labels are
    class indices, or the label's values with ``raw_label`` or for a binding that reads a
    regressor's value."""
    from tfkfp.components.common.data.reader import make_dataset

    if limit < 1:
        raise QuantizeInputError(f"{purpose} needs at least 1 example; got {limit}")
    binding = names if hasattr(names, "feed") else None
    columns = sorted(set(binding.columns.values())) if binding else list(names)
    try:
        schema = dataset_schema(dataset)
        labelled = schema.label is not None
        if raw_label or (binding is not None and binding.reading.values):
            schema = schema.with_raw_label()  # a regressor is measured on the label's values
        ds = make_dataset(dataset, schema, mode="eval" if labelled else "predict", split=split,
                          batch_size=min(limit, 512), max_rows=limit)
    except SchemaError as err:
        raise QuantizeInputError(f"{purpose} data: {err}") from err
    parts, labels, count = {}, [], 0
    for features, label in ds:
        for name in columns:
            parts.setdefault(name, []).append(features[name].numpy())
        if labelled:
            labels.append(label.numpy())
        count += len(parts[columns[0]][-1])
        if count >= limit:
            break
    if count == 0:
        raise QuantizeInputError(f"{purpose} data is empty: split {split!r} of {dataset} "
                                 "has no records")
    by_column = {n: np.concatenate(v)[:limit] for n, v in parts.items()}
    return Examples(binding.feed(by_column) if binding else by_column,
                    np.concatenate(labels)[:limit] if labelled else None,
                    binding.batch if binding else None)


def dataset_schema(dataset: str) -> Schema:
    try:
        return Schema.load(dataset if uris.isdir(dataset) else dataset.rsplit("/", 1)[0])
    except SchemaError as err:
        raise QuantizeInputError(f"dataset {dataset}: {err}") from err


def reference_outputs(fn, examples: Examples, batch_size: int = 512) -> Dict[str, np.ndarray]:
    """The SavedModel signature's outputs on the examples (the float reference)."""
    parts: Dict[str, list] = {}
    for batch, real in examples.batches(batch_size):
        for name, value in fn(**batch).items():
            parts.setdefault(name, []).append(value.numpy()[:real])
    return {name: np.concatenate(v) for name, v in parts.items()}
