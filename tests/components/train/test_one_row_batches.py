"""A batch of one row (a shard whose rows are a multiple of the batch plus one, an eval split
of one row) trains and evaluates with a string column like any other batch."""

from conftest import write_csv
from tfkfp.components.shard_tfrecords.core import shard_tfrecords
from tfkfp.components.train.core import train


def test_a_string_column_takes_a_batch_of_one_row(tmp_path):
    rows = [[i * 0.1, ["red", "green", "blue"][i % 3], i % 2, "train"] for i in range(65)]
    rows.append([1.5, "red", 1, "eval"])  # the eval split: one row, one batch of one
    path = write_csv(tmp_path / "t.csv", ["x", "color", "label", "split"], rows)
    shard_tfrecords(path, str(tmp_path / "ds"), label="label", split_column="split",
                    num_shards=1)
    result = train(str(tmp_path / "ds"), str(tmp_path / "model"), epochs=1, batch_size=64)
    assert 0.0 <= result.figures["eval_accuracy"] <= 1.0
