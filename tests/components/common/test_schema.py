import pytest

from tfkfp.components.common.schema import Column, Schema, SchemaError


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
