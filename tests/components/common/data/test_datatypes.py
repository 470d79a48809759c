"""The column dtypes and their names in the Open Inference Protocol, TF's DataType enum and
NumPy are one table (common.data.datatypes): the server, the endpoint callers and TF Serving's
metadata all read it, so one entry adds a dtype everywhere."""

import numpy as np
import pytest

from tfkfp.components.common.data import datatypes
from tfkfp.components.common.endpoint.protocols import V1, V2
from tfkfp.components.serve import tfserving
from tfkfp.components.serve.errors import RequestError
from tfkfp.components.serve.fields import Field, tensor_array


def test_the_table_names_each_dtype_as_the_suite_always_has():
    assert {d: datatypes.v2_name(d) for d in datatypes.DATATYPES} == {
        "float32": "FP32", "int64": "INT64", "string": "BYTES"}
    assert {d: datatypes.v2_accepted(d) for d in datatypes.DATATYPES} == {
        "float32": ("FP32", "FP64"), "int64": ("INT64", "INT32"), "string": ("BYTES",)}
    assert [datatypes.from_v2(n) for n in ("FP32", "FP64", "INT64", "INT32", "BYTES")] == [
        "float32", "float32", "int64", "int64", "string"]
    assert [datatypes.from_tf(n) for n in ("DT_FLOAT", "DT_DOUBLE", "DT_INT64", "DT_INT32",
                                           "DT_STRING")] == [
        "float32", "float32", "int64", "int64", "string"]
    assert [datatypes.tf_of_v2(n) for n in ("FP32", "INT64", "BYTES")] == [
        "DT_FLOAT", "DT_INT64", "DT_STRING"]
    assert [datatypes.from_numpy(t) for t in (np.float32, np.int64, np.bytes_, object,
                                              np.float16)] == [
        "float32", "int64", "string", "string", None]
    for unknown in (lambda: datatypes.from_v2("BOOL"), lambda: datatypes.from_tf("DT_BOOL"),
                    lambda: datatypes.tf_of_v2("FP64")):
        with pytest.raises(KeyError):
            unknown()


def test_one_entry_adds_a_dtype_to_the_server_the_callers_and_tfserving(monkeypatch):
    monkeypatch.setitem(datatypes.DATATYPES, "bool", datatypes.DataType(
        "bool", ("BOOL",), ("DT_BOOL",), (np.dtype(np.bool_),)))
    assert datatypes.from_numpy(np.bool_) == "bool"
    served = V2.served({"inputs": [{"name": "b", "datatype": "BOOL", "shape": [-1]}]})
    assert served.inputs["b"].dtype == "bool"
    metadata = {"metadata": {"signature_def": {"signature_def": {"serving_raw": {
        "inputs": {"b": {"dtype": "DT_BOOL", "tensor_shape": {"dim": [{"size": "-1"}]}}},
        "outputs": {}}}}}}
    assert V1.served(metadata).inputs["b"].dtype == "bool"
    info = tfserving._tensor_info("b", {"datatype": "BOOL", "shape": [-1]})
    assert info["dtype"] == "DT_BOOL"

    class Tensor:
        datatype, shape, data = "FP32", [1], [1.0]

    with pytest.raises(RequestError, match="datatype FP32; expected BOOL$"):
        tensor_array(Tensor(), Field("b", "bool", ()))
