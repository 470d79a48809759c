"""The record layouts are one table: every default is its default, and one entry is enough
to add a layout built from the table's properties."""

import dataclasses

import numpy as np

from tfkfp.components.common.data import layouts
from tfkfp.components.common.data.reader import make_dataset
from tfkfp.components.common.data.schema import Schema
from tfkfp.components.shard_tfrecords.core import shard_tfrecords
from tfkfp.pipelines import docs


def test_every_layout_parameter_defaults_to_the_tables_default():
    for step, function in docs.steps():
        spec = docs.signature(function)
        if "layout" in spec:
            assert spec["layout"][1] == layouts.DEFAULT_LAYOUT, step
        if "block_rows" in spec:
            assert spec["block_rows"][1] == layouts.DEFAULT_BLOCK_ROWS, step


def batches(dataset):
    return [{k: v.numpy() for k, v in features.items()} | {"label": label.numpy()}
            for features, label in make_dataset(dataset, mode="eval", batch_size=64)]


def test_one_entry_adds_a_layout(demo_dir, demo_dataset, tmp_path, monkeypatch):
    """A layout registered in the table alone (here: packed under another name) shards and
    reads back the same rows, with no other change."""
    twin = dataclasses.replace(layouts.LAYOUTS["packed"], name="packed_twin")
    monkeypatch.setitem(layouts.LAYOUTS, "packed_twin", twin)
    out = str(tmp_path / "twin")
    shard_tfrecords(demo_dir.csv, out, label="label", keys=["id"], layout="packed_twin")
    assert Schema.load(out).layout == "packed_twin"
    for ours, theirs in zip(batches(out), batches(demo_dataset), strict=True):
        assert ours.keys() == theirs.keys()
        for name in ours:
            np.testing.assert_array_equal(ours[name], theirs[name])
