"""batch_predict on a regressor: each row gets the model's ``value`` beside its keys, in
every output format, and top_k (a classifier's) is refused."""

import csv
import json

import numpy as np
import pytest

from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.batch_predict.errors import PredictInputError


def _savedmodel_values(model, dataset):
    """{house: the SavedModel's value} on the eval split, straight from serving_raw."""
    import tensorflow as tf

    from tfkfp.components.common.data.reader import make_dataset

    raw = tf.saved_model.load(model).signatures["serving_raw"]
    out = {}
    for features, keys in make_dataset(dataset, mode="predict", split="eval", batch_size=100):
        values = raw(**features)["value"].numpy()
        out.update(zip((k.decode() for k in keys["house"].numpy()), values))
    return out


def test_each_row_gets_the_value_in_every_format(regression_model, regression_dataset,
                                                 tmp_path):
    want = _savedmodel_values(regression_model, regression_dataset)
    for fmt in ("jsonl", "csv", "tfrecord"):
        out = tmp_path / fmt
        result = batch_predict(regression_model, regression_dataset, str(out), split="eval",
                               keys=["house"], output_format=fmt)
        assert result.errors == 0 and result.predictions == len(want)
        assert result.metadata()["model"]["task"] == "regression"
        rows = _rows(out, fmt)
        # the eval split's rows carry the label and the residual: read without a join
        assert all(set(r) == {"house", "value", "price", "residual"} for r in rows)
        assert all(float(r["residual"]) == pytest.approx(
            float(r["value"]) - float(r["price"]), rel=1e-4, abs=1e-3) for r in rows)
        got = {r["house"]: float(r["value"]) for r in rows}
        assert got.keys() == want.keys()
        np.testing.assert_allclose([got[k] for k in want], list(want.values()), rtol=1e-5)


def _rows(out, fmt):
    files = sorted(out.glob(f"predictions-*.{fmt}"))
    if fmt == "jsonl":
        return [json.loads(line) for f in files for line in f.read_text().splitlines()]
    if fmt == "csv":
        return [row for f in files for row in csv.DictReader(open(f, encoding="utf-8"))]
    import tensorflow as tf

    rows = []
    for f in files:
        for record in tf.data.TFRecordDataset(str(f)):
            example = tf.train.Example.FromString(record.numpy())
            feature = example.features.feature
            rows.append({"house": feature["house"].bytes_list.value[0].decode(),
                         "value": feature["value"].float_list.value[0],
                         "price": feature["price"].float_list.value[0],
                         "residual": feature["residual"].float_list.value[0]})
    return rows


def test_top_k_is_refused_for_a_regressor_before_anything_is_written(
        regression_model, regression_dataset, tmp_path):
    out = tmp_path / "never"
    with pytest.raises(PredictInputError, match="top_k 2: model .* is a regressor, which "
                                                "predicts one value per row"):
        batch_predict(regression_model, regression_dataset, str(out), top_k=2)
    assert not out.exists()
