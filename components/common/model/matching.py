"""Whether data fits a Predictor: each of its inputs matched to the schema column that feeds
it, with the same type and shape. batch_predict checks its input data so before writing
anything; serve checks a SavedModel's own schema so before parsing b64 Examples with it."""

from typing import List

from tfkfp.components.common.data.schema import Column, Schema, SchemaError
from tfkfp.components.common.model.predictor import ModelInputError, Predictor
from tfkfp.components.common.model.savedmodel import raw_dtype, raw_shape


def feature_columns(predictor: Predictor, schema: Schema, where: str) -> List[Column]:
    """The schema's column for each of the predictor's inputs, in the inputs' order.

    Raises ModelInputError naming the input when the data (``where``) lacks a model input or
    holds it with another type or shape: this is the model/data mismatch check.
    """
    features = []
    for name, spec in predictor.inputs.items():
        try:
            col = schema.column(name)
        except SchemaError:
            raise ModelInputError(
                f"model {predictor.uri} needs input {name!r} ({spec.dtype}"
                f"{list(spec.shape)}), which the data {where} does not have; its columns are "
                f"{schema.names}") from None
        dtype = "string" if col.dtype == "string" and not col.encoding else raw_dtype(col).name
        have = (dtype, tuple(raw_shape(col)))
        if have != (spec.dtype, spec.shape):
            raise ModelInputError(
                f"model {predictor.uri} input {name!r} expects {spec.dtype}{list(spec.shape)}, "
                f"but the data {where} has {have[0]}{list(have[1])} for that column")
        features.append(col)
    return features
