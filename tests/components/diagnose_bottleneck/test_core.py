"""diagnose_bottleneck on cases built to be each kind of bound, on the demo digits.

The verdicts compare figures measured within one run, and the cases are extreme (a margin of
several times between the rates), so they hold on a loaded machine; no absolute timings."""


import pytest

from conftest import cut_shard_of
from tfkfp.components.common.data.dataset import DatasetMismatchError
from tfkfp.components.common.data.schema import SchemaError
from tfkfp.components.common.training.config import TrainConfigError
from tfkfp.components.diagnose_bottleneck import memory, report
from tfkfp.components.diagnose_bottleneck.core import diagnose_bottleneck
from tfkfp.components.diagnose_bottleneck.verdict import COMPUTE, INPUT, MEMORY

SECONDS = 0.5


def knobs(result):
    return [r.knob for r in result.remedies]


@pytest.mark.slow
def test_tiny_model_on_many_gzip_shards_is_input_bound(gzip_many_shards):
    result = diagnose_bottleneck(gzip_many_shards, hidden_units=(), batch_size=2048,
                                 seconds=SECONDS)
    f = result.figures
    assert result.verdict == INPUT, result.summary
    assert f["input_records_per_second"] < f["compute_records_per_second"]
    assert f["compression"] == "gzip" and f["num_shards"] == 64
    assert f["layout"] == "packed" and f["packable_columns"] == 64  # the digits' pixels
    assert "waits for input" in result.summary and "records/s" in result.summary
    assert "shard_tfrecords compression='none'" in knobs(result)
    assert any(k.startswith("shard_tfrecords num_shards=") for k in knobs(result))
    assert "train cache=True" in knobs(result)
    assert 0.0 <= f["input_wait_fraction"] <= 1.0
    assert f["read_records_per_second"] > 0 and f["read_mb_per_second"] > 0


@pytest.mark.slow
def test_large_model_on_cached_data_is_compute_bound(demo_dataset):
    result = diagnose_bottleneck(demo_dataset, hidden_units=(1024, 1024, 1024), cache=True,
                                 seconds=SECONDS)
    f = result.figures
    assert result.verdict == COMPUTE, result.summary
    assert f["input_records_per_second"] > f["compute_records_per_second"]
    assert f["parameters"] > 2_000_000 and f["cache_mb"] > 0
    assert "train precision='mixed_bfloat16'" in knobs(result)
    assert "train jit_compile=True" in knobs(result)
    text = result.markdown()
    assert text.startswith("# Bottleneck diagnosis") and "data:image/svg+xml;base64," in text
    assert set(result.metrics()) >= {"input_records_per_second", "compute_records_per_second",
                                     "combined_records_per_second", "input_wait_fraction"}


@pytest.fixture(scope="module")
def over_the_limit(demo_dataset):
    """A 1.1M-parameter MLP at batch 4096: about 90 MB a step, over a 64 MB limit."""
    return diagnose_bottleneck(demo_dataset, hidden_units=(1024, 1024), batch_size=4096,
                               memory_limit_mb=64, seconds=SECONDS)


def test_batch_over_the_memory_limit_is_memory_bound(over_the_limit):
    result = over_the_limit
    f = result.figures
    assert result.verdict == MEMORY, result.summary
    assert f["step_memory_mb"] > 0.9 * 64 and f["memory_budget_mb"] == 64
    assert "compute_records_per_second" not in f, "a step that does not fit must not run"
    fits = f["largest_fitting_batch"]
    assert 64 <= fits < 4096
    first = result.remedies[0]
    assert first.knob.startswith("train batch_size=")
    assert int(first.knob.split("=")[1]) <= fits
    assert "64 MB" in result.summary


def test_mirrored_replicas_multiply_the_memory_need(demo_dataset, over_the_limit):
    one = over_the_limit
    two = diagnose_bottleneck(demo_dataset, hidden_units=(1024, 1024), batch_size=4096,
                              memory_limit_mb=64, strategy="mirrored", seconds=SECONDS)
    assert two.figures["replicas"] == 2 and two.figures["global_batch_size"] == 8192
    assert two.figures["step_memory_mb"] > 1.9 * one.figures["step_memory_mb"] - 1
    assert two.figures["largest_fitting_batch"] < one.figures["largest_fitting_batch"]


def test_footprint_of_a_known_model():
    import tf_keras

    inputs = tf_keras.Input(shape=(4,), name="x")
    hidden = tf_keras.layers.Dense(8)(inputs)
    model = tf_keras.Model(inputs, tf_keras.layers.Dense(3)(hidden))
    f = memory.model_footprint(model)
    assert f.parameters == 4 * 8 + 8 + 8 * 3 + 3
    assert f.parameter_bytes == f.parameters * 4 * 4  # weights, gradients, two Adam slots
    assert f.activation_bytes_per_example == 2 * (8 + 3) * 4
    assert f.input_bytes_per_example == 4 * 4
    assert f.step_bytes(10) == f.parameter_bytes + 10 * (88 + 16)
    assert f.largest_batch(budget=f.step_bytes(100) * 2, replicas=1) >= 100


def test_host_memory_is_read():
    host = memory.host_memory()
    assert host.total >= host.available > 0
    assert host.peak_rss >= host.rss > 0


def test_svg_chart_is_well_formed():
    import xml.etree.ElementTree as ET

    svg = report.svg({"input_records_per_second": 5.0, "compute_records_per_second": 10.0,
                      "combined_records_per_second": 4.0})
    root = ET.fromstring(svg)
    assert len([e for e in root if e.tag.endswith("rect")]) == 4  # background + three bars


@pytest.mark.parametrize("options,match", [
    ({"model_name": "vgg"}, "model_name 'vgg' is not one of mlp, cnn"),
    ({"strategy": "horovod"}, "strategy 'horovod' is not one of default"),
    ({"strategy": "parameter_server"}, "expected one of default, one_device, mirrored"),
    ({"batch_size": 0}, "batch_size must be positive, got 0"),
    ({"precision": "int8"}, "precision 'int8' is not one of float32"),
    ({"memory_limit_mb": -1}, "memory_limit_mb must be 0"),
    ({"hidden_units": "256;128"}, "hidden_units '256;128' is not a comma-separated list"),
    ({"model_fn": "nowhere"}, "is not of the form 'package.module:function'"),
])
def test_bad_options_are_refused_with_the_allowed_values(demo_dataset, options, match):
    with pytest.raises(TrainConfigError, match=match):
        diagnose_bottleneck(demo_dataset, **options)


def test_dataset_without_a_label_is_refused(unlabeled_dataset):
    with pytest.raises(SchemaError, match="the schema has no label column.*label=<column>; "
                                          "there is no training step to diagnose"):
        diagnose_bottleneck(unlabeled_dataset)


def test_folder_that_is_not_a_dataset_is_refused(tmp_path):
    with pytest.raises(SchemaError, match="has no manifest.json"):
        diagnose_bottleneck(str(tmp_path))


def test_a_shard_cut_on_a_record_boundary_is_refused_naming_it(dataset_copy):
    with pytest.raises(DatasetMismatchError, match=cut_shard_of(dataset_copy, "train", 0, 100)):
        diagnose_bottleneck(dataset_copy, seconds=SECONDS)


def test_subclassed_model_fn_counts_parameters_and_says_activations_are_unknown(
        demo_dataset, tmp_path, monkeypatch):
    (tmp_path / "sub_models.py").write_text(
        "import tensorflow as tf\n"
        "import tf_keras\n"
        "class Linear(tf_keras.Model):\n"
        "    def __init__(self, n):\n"
        "        super().__init__()\n"
        "        self.out = tf_keras.layers.Dense(n, activation='softmax')\n"
        "    def call(self, features):\n"
        "        x = tf.stack([tf.cast(v, tf.float32) for v in features.values()], axis=1)\n"
        "        return self.out(x)\n"
        "def linear(schema, num_classes):\n"
        "    return Linear(num_classes)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = diagnose_bottleneck(demo_dataset, model_fn="sub_models:linear", memory_limit_mb=1,
                                 seconds=SECONDS)
    assert result.figures["parameters"] == 64 * 10 + 10
    assert result.figures["activations_known"] is False
    assert "unknown for this model" in result.markdown()


def test_a_table_with_gaps_and_unicode_strings_is_diagnosed(tmp_path):
    from conftest import messy_rows, write_messy_csv
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    path = write_messy_csv(tmp_path / "messy.csv", messy_rows(600))
    shard_tfrecords(path, str(tmp_path / "ds"), label="label", keys=["id"])
    result = diagnose_bottleneck(str(tmp_path / "ds"), seconds=SECONDS)
    assert result.verdict in (COMPUTE, INPUT, MEMORY)
    assert result.figures["input_records_per_second"] > 0
    assert result.figures["compute_records_per_second"] > 0


def test_a_regression_table_is_diagnosed_like_a_classification_one(regression_dataset):
    result = diagnose_bottleneck(regression_dataset, hidden_units=(32,), batch_size=64,
                                 seconds=SECONDS)
    f = result.figures
    assert result.verdict in (INPUT, COMPUTE, MEMORY), result.summary
    assert f["input_records_per_second"] > 0 and f["compute_records_per_second"] > 0
    assert 0.0 <= f["input_wait_fraction"] <= 1.0


def test_a_label_no_task_can_use_is_refused_naming_why(tmp_path):
    from conftest import write_csv
    from tfkfp.components.shard_tfrecords.core import MAX_VOCABULARY, shard_tfrecords

    rows = [[i * 0.5, i] for i in range(MAX_VOCABULARY + 50)]  # too many whole numbers
    data = str(tmp_path / "ranks")
    shard_tfrecords(write_csv(tmp_path / "ranks.csv", ["x", "rank"], rows), data, label="rank")
    with pytest.raises(SchemaError, match="label 'rank' \\(int64\\) has more distinct values "
                                          "than shard_tfrecords keeps as classes, too many to "
                                          "classify; classification needs class names: use "
                                          "task='regression'"):
        diagnose_bottleneck(data, seconds=SECONDS)


def test_a_label_is_diagnosed_for_the_task_asked(regression_csv, tmp_path):
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    rooms, houses = str(tmp_path / "rooms"), str(tmp_path / "houses")
    shard_tfrecords(regression_csv, rooms, label="rooms")  # 6 classes by default
    result = diagnose_bottleneck(rooms, hidden_units=(16,), seconds=SECONDS, task="regression")
    assert result.config.task == "regression"
    assert result.figures["compute_records_per_second"] > 0
    shard_tfrecords(regression_csv, houses, label="house")  # a string label
    with pytest.raises(SchemaError, match="label 'house' \\(string\\) is text, which cannot "
                                          "be regressed on"):
        diagnose_bottleneck(houses, seconds=SECONDS, task="regression")


def test_blocks_are_diagnosed_in_rows_not_records(tmp_path):
    """A blocks record holds many rows: the raw read is counted in rows, so its bytes per
    record are a row's, as in the packed layout, not a block's."""
    from conftest import messy_rows, write_messy_csv
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    path = write_messy_csv(tmp_path / "messy.csv", messy_rows(600))
    bytes_per_row = {}
    for layout in ("packed", "blocks"):
        shard_tfrecords(path, str(tmp_path / layout), label="label", keys=["id"],
                        layout=layout, block_rows=50)
        f = diagnose_bottleneck(str(tmp_path / layout), hidden_units=(16,),
                                seconds=SECONDS).figures
        assert f["layout"] == layout and f["read_records_per_second"] > 0
        bytes_per_row[layout] = f["record_bytes"]
    # a block drops each row's feature names and framing (about 0.3x here); counted per
    # record, a 50-row block would read as about 15x a packed row
    assert 0.1 < bytes_per_row["blocks"] / bytes_per_row["packed"] < 1.0
