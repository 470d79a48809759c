"""The packed and blocks record layouts: schema.json, encoding, and readers that give the
same batches."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tfkfp.components.common.data.examples import (
    encode_blocks,
    encode_examples,
    pack_columns,
    split_rows,
)
from tfkfp.components.common.data.packing import PackedGroup
from tfkfp.components.common.data.parsing import example_parser
from tfkfp.components.common.data.reader import make_dataset
from tfkfp.components.common.data.schema import Column, Schema, SchemaError

ROWS = 40
COLUMNS = (Column("id", "int64", role="key"),
           Column("x", "float32", missing=5),
           Column("n", "int64"),
           Column("y", "float32"),
           Column("vec", "float32", (2,)),
           Column("word", "string", missing=4),
           Column("img", "string", encoding="image", image_shape=(4, 4, 3)),
           Column("m", "int64"),
           Column("label", "string", role="label", vocabulary=("no", "yes")))


def table():
    """Every kind of column, gaps included (NaN floats, empty strings)."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=ROWS).astype(np.float32)
    x[::8] = np.nan
    words = np.array([b"" if i % 10 == 3 else f"w{i % 4}".encode() for i in range(ROWS)],
                     dtype=object)
    images = np.array([tf.io.encode_png(rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)
                                        ).numpy() for _ in range(ROWS)], dtype=object)
    return {"id": ("int64", np.arange(ROWS, dtype=np.int64)),
            "x": ("float32", x),
            "n": ("int64", rng.integers(-2**40, 2**40, ROWS)),
            "y": ("float32", rng.uniform(size=ROWS).astype(np.float32)),
            "vec": ("float32", rng.normal(size=(ROWS, 2)).astype(np.float32)),
            "word": ("string", words),
            "img": ("string", images),
            "m": ("int64", rng.integers(0, 7, ROWS)),
            "label": ("string", np.array([b"yes" if i % 3 else b"no" for i in range(ROWS)],
                                         dtype=object))}


BLOCK_ROWS = 3  # 40 rows: 13 full blocks and one of 1 row; a batch of 16 spans blocks


def write(folder, layout: str) -> Schema:
    schema = Schema(COLUMNS).with_layout(layout, BLOCK_ROWS)
    os.makedirs(folder / "eval")
    packed = pack_columns(table(), schema.packed)
    if layout == "blocks":
        records = split_rows(encode_blocks(packed, BLOCK_ROWS)[0])
    else:
        records = split_rows(encode_examples(packed))
    with tf.io.TFRecordWriter(str(folder / "eval" / "data.tfrecord")) as writer:
        for record in records:
            writer.write(record)
    return schema


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    root = tmp_path_factory.mktemp("layouts")
    return {layout: (str(root / layout / "eval" / "*"), write(root / layout, layout))
            for layout in ("columns", "packed", "blocks")}


def batches(pattern, schema, mode):
    ds = make_dataset(pattern, schema=schema, mode=mode, batch_size=16, split="eval", seed=7,
                      deterministic=True)
    return [(tf.nest.map_structure(lambda t: t.numpy(), a),
             tf.nest.map_structure(lambda t: t.numpy(), b)) for a, b in ds]


def test_packed_schema_groups_scalar_numbers_by_dtype_in_order():
    schema = Schema(COLUMNS).with_layout("packed")
    assert schema.packed == (PackedGroup("packed_float32", "float32", ("x", "y")),
                             PackedGroup("packed_int64", "int64", ("n", "m")))
    assert Schema.from_json(schema.to_json()) == schema
    assert json.loads(schema.to_json())["layout"] == "packed"


@pytest.mark.parametrize("layout", ["packed", "blocks"])
@pytest.mark.parametrize("mode", ["eval", "predict"])
def test_reader_gives_identical_batches_for_every_layout(both, mode, layout):
    columns, packed = batches(*both["columns"], mode), batches(*both[layout], mode)
    assert len(columns) == len(packed) == 3
    for (features_a, other_a), (features_b, other_b) in zip(columns, packed):
        assert list(features_a) == list(features_b) == ["x", "n", "y", "vec", "word", "img",
                                                        "m"]
        for name in features_a:
            assert features_a[name].dtype == features_b[name].dtype
            np.testing.assert_array_equal(features_a[name], features_b[name])
        tf.nest.map_structure(np.testing.assert_array_equal, other_a, other_b)
    x = np.concatenate([f["x"] for f, _ in packed])
    words = np.concatenate([f["word"] for f, _ in packed])
    assert np.isnan(x).sum() == 5 and (words == b"").sum() == 4  # the gaps came through
    assert packed[0][0]["img"].shape == (16, 4, 4, 3) and packed[0][0]["n"].dtype == np.int64


def test_training_batches_hold_the_same_rows_in_every_layout(both):
    """Shuffled, so compared as sets of rows: every row once per epoch, nothing altered."""
    epochs = {}
    for layout in ("columns", "packed", "blocks"):
        rows = batches(*both[layout], "train")
        assert [len(labels) for _, labels in rows] == [16, 16, 8]
        epochs[layout] = sorted(
            (float(f["y"][i]), int(f["n"][i]), f["word"][i], int(label))
            for f, labels in rows for i, label in enumerate(labels))
    assert epochs["columns"] == epochs["packed"] == epochs["blocks"]


def test_shuffled_blocks_mix_rows_of_many_blocks(both):
    """A shuffled batch is not a run of consecutive rows: the blocks are shuffled and the
    rows of several blocks shuffled together."""
    pattern, schema = both["blocks"]
    ds = make_dataset(pattern, schema=schema, mode="predict", batch_size=8, split="eval",
                      shuffle=True, seed=3)
    ids = [keys["id"].numpy() for _, keys in ds]
    assert sorted(np.concatenate(ids).tolist()) == list(range(ROWS))
    blocks_per_batch = [len(set((batch // BLOCK_ROWS).tolist())) for batch in ids[:-1]]
    # intact blocks put 8 rows in 3 or 4 of them; mixed rows came from 5 to 6 on average
    # (over 40 seeds)
    assert np.mean(blocks_per_batch) > 4.5, blocks_per_batch
    again = np.concatenate([keys["id"].numpy() for _, keys in ds])  # a second epoch
    assert sorted(again.tolist()) == list(range(ROWS))
    assert not np.array_equal(np.concatenate(ids), again)  # reshuffled each epoch


def test_block_records_hold_block_rows_rows_of_every_feature(both):
    records = list(tf.data.TFRecordDataset(tf.io.gfile.glob(both["blocks"][0])))
    assert len(records) == 14
    first = tf.train.Example.FromString(records[0].numpy()).features.feature
    last = tf.train.Example.FromString(records[-1].numpy()).features.feature
    assert sorted(first) == ["id", "img", "label", "packed_float32", "packed_int64", "vec",
                             "word"]
    assert len(first["packed_float32"].float_list.value) == 2 * BLOCK_ROWS
    assert len(first["vec"].float_list.value) == 2 * BLOCK_ROWS
    assert list(first["id"].int64_list.value) == [0, 1, 2]
    assert list(last["id"].int64_list.value) == [39] and len(last["img"].bytes_list.value) == 1


def block(ids, ys, labels) -> bytes:
    feature = tf.train.Feature
    return tf.train.Example(features=tf.train.Features(feature={
        "id": feature(int64_list=tf.train.Int64List(value=ids)),
        "y": feature(float_list=tf.train.FloatList(value=ys)),
        "label": feature(bytes_list=tf.train.BytesList(value=labels))})).SerializeToString()


def test_a_block_whose_features_disagree_on_its_rows_is_refused_naming_the_feature():
    small = Schema((Column("id", "int64", role="key"), Column("y", "float32"),
                    Column("label", "string", role="label")), "blocks", (), 3)
    parse = example_parser(small, small.columns)
    good = [block([0, 1, 2], [0.5, 1, 2], [b"a", b"b", b"c"]), block([3], [4], [b"d"])]
    parsed = parse(tf.constant(good))
    assert parsed["id"].numpy().tolist() == [0, 1, 2, 3]
    assert parsed["label"].numpy().tolist() == [b"a", b"b", b"c", b"d"]
    # 2 ids but 3 labels in the first block, 2 and 1 in the second: 4 values of each in all
    bad = [block([0, 1], [0.5, 1, 2], [b"a", b"b", b"c"]), block([2, 3], [4], [b"d"])]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"features disagree on its row count: (y|label) holds x values "
                             r"where the rows counted from id \(1 value\(s\) a row\) need y"):
        parse(tf.constant(bad))


def test_packed_records_hold_one_list_per_dtype(both):
    record = next(iter(tf.data.TFRecordDataset(tf.io.gfile.glob(both["packed"][0]))))
    feature = tf.train.Example.FromString(record.numpy()).features.feature
    assert sorted(feature) == ["id", "img", "label", "packed_float32", "packed_int64", "vec",
                               "word"]
    assert len(feature["packed_float32"].float_list.value) == 2
    assert len(feature["packed_int64"].int64_list.value) == 2


def test_a_batch_is_one_parse_and_one_unstack_per_group():
    schema = Schema(COLUMNS).with_layout("packed")
    parse = tf.function(example_parser(schema, schema.features))
    graph = parse.get_concrete_function(tf.TensorSpec([None], tf.string)).graph
    kinds = [op.type for op in graph.get_operations()]
    assert kinds.count("ParseExampleV2") == 1 and kinds.count("Unpack") == 2


def test_both_accepts_per_column_and_packed_records(both):
    schema = both["packed"][1]
    parse = tf.function(example_parser(schema, schema.features, accept="both"))
    per_column = split_rows(encode_examples(table()))
    packed = split_rows(encode_examples(pack_columns(table(), schema.packed)))
    a, b = parse(tf.constant(per_column)), parse(tf.constant(packed))
    for name in a:
        np.testing.assert_array_equal(a[name].numpy(), b[name].numpy())
    with pytest.raises(ValueError, match="accept 'any' is not one of"):
        example_parser(schema, schema.features, accept="any")


def test_blocks_schema_round_trips_with_its_block_rows():
    schema = Schema(COLUMNS).with_layout("blocks", 64)
    assert schema.block_rows == 64 and schema.packed == Schema(COLUMNS).with_layout(
        "packed").packed
    assert json.loads(schema.to_json())["block_rows"] == 64
    assert Schema.from_json(schema.to_json()) == schema
    assert schema.with_layout("packed").block_rows == 0


def test_schema_json_without_a_layout_means_one_feature_per_column(tmp_path):
    body = {"version": 1, "columns": [c.to_dict() for c in COLUMNS]}
    (tmp_path / "schema.json").write_text(json.dumps(body))
    loaded = Schema.load(str(tmp_path))
    assert loaded.layout == "columns" and loaded.packed == ()


@pytest.mark.parametrize("change,match", [
    ({"layout": "rows"},
     r"layout 'rows' is not allowed; expected one of columns, packed, blocks"),
    ({"packed": [{"feature": "p", "dtype": "float32", "columns": ["word"]}]},
     r"column 'word' \(feature, string\[\]\) cannot be packed"),
    ({"packed": [{"feature": "p", "dtype": "float32", "columns": ["nosuch"]}]},
     "schema has no column 'nosuch'"),
    ({"packed": [{"feature": "x", "dtype": "float32", "columns": ["y"]}]},
     "group 'x': a column has that name too"),
    ({"packed": [{"feature": "p", "columns": ["y"]}]}, "needs 'feature', 'dtype' and"),
    ({"layout": "columns", "packed": [{"feature": "p", "dtype": "float32", "columns": ["y"]}]},
     "layout 'columns' cannot have packed groups"),
    ({"layout": "blocks"}, "layout 'blocks' needs block_rows, a whole number from 1 to 65536"),
    ({"layout": "blocks", "block_rows": 0}, "needs block_rows"),
    ({"block_rows": 8}, "layout 'packed' cannot have block_rows 8"),
])
def test_a_bad_layout_in_schema_json_is_refused_naming_the_file(tmp_path, change, match):
    body = {"version": 1, "layout": "packed", "columns": [c.to_dict() for c in COLUMNS],
            **change}
    (tmp_path / "schema.json").write_text(json.dumps(body))
    with pytest.raises(SchemaError, match=match) as err:
        Schema.load(str(tmp_path))
    assert "schema.json" in str(err.value)


def test_a_group_name_never_clashes_with_a_column():
    schema = Schema((Column("packed_float32", "float32"), Column("b", "float32"))
                    ).with_layout("packed")
    assert schema.packed[0].feature == "_packed_float32"
