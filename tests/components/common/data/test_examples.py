import numpy as np
import pytest
import tensorflow as tf

from tfkfp.components.common.data.examples import encode_examples, split_rows


def reference(columns, row):
    example = tf.train.Example()
    for name, (dtype, values) in columns.items():
        feature = example.features.feature[name]
        flat = np.asarray(values[row], dtype=object).reshape(-1).tolist()
        if dtype == "float32":
            feature.float_list.value.extend(flat)
        elif dtype == "int64":
            feature.int64_list.value.extend(flat)
        else:
            feature.bytes_list.value.extend(v if isinstance(v, bytes) else v.encode()
                                            for v in flat)
    return example


def mixed_columns(rows=300):
    rng = np.random.default_rng(0)
    return {
        "f": ("float32", rng.normal(size=rows).astype(np.float32)),
        "m_matrix": ("float32", rng.normal(size=(rows, 2, 3)).astype(np.float32)),
        "i": ("int64", rng.integers(-2**62, 2**62, size=rows)),
        "t_small": ("int64", rng.integers(0, 100, size=rows)),
        "vec": ("int64", rng.integers(-5, 10**6, size=(rows, 3))),
        "s": ("string", np.array(["x" * int(k) for k in rng.integers(0, 300, rows)],
                                 dtype=object)),
        "zz": ("string", np.array([[b"a", "\u00e9"]] * rows, dtype=object)),
        "empty": ("float32", np.zeros((rows, 0), np.float32)),
    }


def test_bytes_match_deterministic_protobuf_serialisation():
    columns = mixed_columns()
    records = split_rows(encode_examples(columns))
    for row in range(len(records)):
        assert records[row] == reference(columns, row).SerializeToString(deterministic=True)


def test_keys_that_prefix_each_other_parse_to_the_same_example():
    columns = {"a": ("int64", np.arange(5)), "ab": ("float32", np.ones(5, np.float32)),
               "abc": ("string", np.array(["q"] * 5, dtype=object))}
    for row, record in enumerate(split_rows(encode_examples(columns))):
        assert tf.train.Example.FromString(record) == reference(columns, row)


def test_all_fixed_width_table_parses_back_with_parse_example():
    rng = np.random.default_rng(1)
    values = rng.normal(size=(1000, 32)).astype(np.float32)
    columns = {f"c{i:02d}": ("float32", values[:, i]) for i in range(32)}
    records = split_rows(encode_examples(columns))
    spec = {name: tf.io.FixedLenFeature([], tf.float32) for name in columns}
    parsed = tf.io.parse_example(tf.constant(records), spec)
    np.testing.assert_array_equal(np.stack([parsed[n] for n in sorted(columns)], 1), values)


def test_unknown_dtype_is_rejected():
    with pytest.raises(ValueError, match="float32, int64 or string"):
        encode_examples({"a": ("float64", np.zeros(3))})
