import pytest

from tfkfp.components.common.data.columns import valid_tensor_name
from tfkfp.components.common.data.packing import packable, scalar_of
from tfkfp.components.common.data.schema import Column, Schema, SchemaError


def test_round_trip_through_json(tmp_path):
    schema = Schema((Column("id", "int64", role="key"),
                     Column("img", "string", encoding="image", image_shape=(8, 8, 1)),
                     Column("vec", "float32", (3,)),
                     Column("y", "string", role="label", vocabulary=("a", "b"))))
    schema.save(str(tmp_path))
    loaded = Schema.load(str(tmp_path))
    assert loaded == schema
    assert loaded.label.name == "y" and [c.name for c in loaded.features] == ["img", "vec"]
    assert loaded.summary()["num_classes"] == 2


@pytest.mark.parametrize("kwargs,match", [
    ({"dtype": "float64"}, "dtype 'float64' is not allowed; expected one of float32"),
    ({"dtype": "int64", "role": "target"}, "role 'target' is not allowed"),
    ({"dtype": "int64", "encoding": "image"}, "an image column needs dtype 'string'"),
])
def test_bad_columns_are_rejected(kwargs, match):
    with pytest.raises(SchemaError, match=match):
        Column("c", **kwargs)


def test_duplicate_names_and_two_labels_are_rejected():
    with pytest.raises(SchemaError, match=r"more than once: \['a'\]"):
        Schema((Column("a", "int64"), Column("a", "float32")))
    with pytest.raises(SchemaError, match="more than one label"):
        Schema((Column("a", "int64", role="label"), Column("b", "int64", role="label")))


def test_malformed_file_names_the_file(tmp_path):
    (tmp_path / "schema.json").write_text("{not json")
    with pytest.raises(SchemaError, match=r"schema\.json: not a tfkfp schema"):
        Schema.load(str(tmp_path))


AWKWARD = ["mean radius", " padded ", "od280/od315", "a/b", "a-b", "a_b", "1st", "_x", "x",
           "Größe", "价格", "", "  ", "x" * 200, "label", "packed_float32"]


def test_every_column_name_gets_its_own_tensor_name_and_keeps_its_own_name(tmp_path):
    schema = Schema(tuple(Column(n, "float32") for n in AWKWARD))
    tensors = {c.name: c.tensor for c in schema.columns}
    assert [c.name for c in schema.columns] == AWKWARD
    assert len(set(tensors.values())) == len(AWKWARD)
    assert all(valid_tensor_name(t) for t in tensors.values())
    # plain names keep themselves; the rest read as they did, told apart by a suffix
    assert tensors["a_b"] == "a_b" and tensors["x"] == "x" and tensors["label"] == "label"
    assert {tensors["a/b"], tensors["a-b"]} == {"a_b_2", "a_b_3"}
    assert tensors["mean radius"] == "mean_radius" and tensors[" padded "] == "padded"
    assert tensors["od280/od315"] == "od280_od315" and tensors["1st"] == "c_1st"
    assert tensors["_x"] == "x_2" and tensors["Größe"] == "Grosse"
    assert tensors["价格"].startswith("column_") and tensors[""].startswith("column_")
    assert len(tensors["x" * 200]) <= 64
    schema.save(str(tmp_path))
    assert Schema.load(str(tmp_path)) == schema  # the mapping is stored, not re-derived
    assert schema.tensor_mapping()["mean radius"] == "mean_radius"
    assert schema.column_of_tensor("a_b_2").name == "a/b"


def test_a_schema_written_before_tensor_names_gets_the_same_ones():
    old = Schema.from_json('{"columns": [{"name": "mean radius", "dtype": "float32"}, '
                           '{"name": "y", "dtype": "int64", "role": "label"}]}')
    assert [c.tensor for c in old.columns] == ["mean_radius", "y"]


def test_a_stored_tensor_name_is_kept_and_checked():
    kept = Schema((Column("a b", "float32", tensor="custom"), Column("a_b", "float32")))
    assert [c.tensor for c in kept.columns] == ["custom", "a_b"]
    with pytest.raises(SchemaError, match=r"columns \['a b', 'a_b'\] have one tensor name"):
        Schema((Column("a b", "float32", tensor="a_b"), Column("a_b", "float32")))
    with pytest.raises(SchemaError, match="tensor name 'a b' is not allowed"):
        Column("a b", "float32", tensor="a b")


@pytest.mark.parametrize("column, dtype, scalar", [
    (Column("x", "float32"), "float32", True),
    (Column("y", "int64", role="label"), "int64", True),  # any role: a key or label too
    (Column("x", "float32"), "int64", False),  # another dtype
    (Column("v", "float32", shape=(3,)), "float32", False),  # several values a row
    (Column("im", "string", encoding="image", image_shape=(8, 8, 1)), "string", False),
    (Column("s", "string"), "string", True),
])
def test_a_scalar_column_of_a_dtype_is_one_plain_value_of_it_a_row(column, dtype, scalar):
    assert scalar_of(column, dtype) is scalar


def test_the_packed_layout_packs_scalar_number_features_only():
    assert packable(Column("x", "float32")) and packable(Column("n", "int64"))
    assert not packable(Column("s", "string"))  # a scalar, but not a number
    assert not packable(Column("y", "int64", role="label"))
    assert not packable(Column("v", "float32", shape=(2,)))
