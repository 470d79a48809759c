"""The pieces without a server: options, the request decoder and the micro-batcher (with a
real model call replaced by a recording function)."""

import asyncio
import re
import threading

import numpy as np
import pytest

from tfkfp.components.serve.batcher import Batcher
from tfkfp.components.serve.errors import OverloadedError, RequestError, ServeOptionsError
from tfkfp.components.serve.fields import column_array as _column
from tfkfp.components.serve.options import ServeOptions
from tfkfp.components.serve.rows import Field, RowDecoder


@pytest.mark.parametrize("change,words", [
    ({"max_batch_size": 0}, "max_batch_size 0 is below 1"),
    ({"http_port": 70000}, "http_port 70000 is not a port"),
    ({"name": "a/b"}, "model name 'a/b'"),
    ({"max_latency_ms": -1}, "max_latency_ms"),
    ({"header_timeout_s": 0}, "expected 0 < header_timeout_s <= read_timeout_s; found 0, 60"),
    ({"header_timeout_s": 5, "read_timeout_s": 2}, "found 5, 2"),
])
def test_options_out_of_range_are_named(change, words):
    with pytest.raises(ServeOptionsError, match=words):
        ServeOptions(**change)


def decoder():
    fields = [Field("x", "float32", ()), Field("n", "int64", ()), Field("s", "string", ()),
              Field("v", "float32", (2,))]
    return RowDecoder(fields, ["id"], ["label"], None, max_instances=4)


def test_rows_with_gaps_become_the_stored_gap_values():
    rows = decoder().v1({"instances": [
        {"x": None, "n": 3, "s": None, "v": [1, 2], "id": "a", "label": "yes"},
        {"x": 2.5, "n": -1, "s": "青", "v": [0.5, 3]}]})
    assert rows.count == 2 and rows.keys == [{"id": "a"}, {}]
    assert np.isnan(rows.features["x"][0]) and rows.features["x"].dtype == np.float32
    assert rows.features["s"].tolist() == [b"", "青".encode()]
    assert rows.features["n"].dtype == np.int64
    assert rows.features["v"].shape == (2, 2)


@pytest.mark.parametrize("row,words", [
    ({"x": 1, "n": None, "s": "a", "v": [1, 2]}, "column 'n': expected int64 (a whole"),
    ({"x": 1, "n": 1.5, "s": "a", "v": [1, 2]}, "column 'n'"),
    ({"x": 1, "n": 1, "s": "a", "v": [1]}, "column 'v': expected float32[2] (a list of 2"),
    ({"x": 1, "n": 1, "s": "a", "v": [1, None]}, "no gaps"),
])
def test_values_that_do_not_fit_are_named(row, words):
    with pytest.raises(RequestError, match=words.replace("(", r"\(").replace("[", r"\[")):
        decoder().v1({"instances": [row]})


WIDE = [Field("a", "float32", ()), Field("n", "int64", ()), Field("b", "float32", ()),
        Field("s", "string", ()), Field("c", "float32", ()), Field("v", "float32", (2,))]


def wide_row(i):
    return {"a": None if i % 3 == 0 else i / 7, "n": i, "b": i * 10**6 + 1, "s": "青" * i,
            "c": 3.4e38 if i == 2 else -i - 0.1, "v": [i, 0.5], "id": i}


def test_the_float_columns_are_decoded_together_as_column_by_column():
    decoder = RowDecoder(WIDE, ["id"], [], None, max_instances=16)
    instances = [wide_row(i) for i in range(5)]
    rows = decoder.v1({"instances": instances})
    for field in WIDE:
        want = _column([r[field.name] for r in instances], field)
        got = rows.features[field.name]
        assert got.dtype == want.dtype and got.shape == want.shape
        if field.dtype == "float32":  # NaN gaps included, bit for bit
            assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()
        else:
            assert got.tolist() == want.tolist()
    assert list(rows.features) == [f.name for f in WIDE]
    assert rows.keys == [{"id": i} for i in range(5)]


@pytest.mark.parametrize("index,change,words", [
    (1, {"b": True}, "instance 1, column 'b': expected float32"),
    (2, {"c": "3.5"}, "instance 2, column 'c': expected float32"),
    (1, {"a": [1.0]}, "instance 1, column 'a'"),
    (0, {"s": 4, "c": "x"}, "instance 0, column 's'"),  # the first column in order
    (1, {"zz": 1.0}, r"instance 1: unknown column \['zz'\]"),
])
def test_wide_rows_that_do_not_fit_are_named_as_before(index, change, words):
    decoder = RowDecoder(WIDE, ["id"], [], None, max_instances=16)
    instances = [wide_row(i) for i in range(3)]
    instances[index] = {**instances[index], **change}
    with pytest.raises(RequestError, match=words):
        decoder.v1({"instances": instances})


def test_a_row_missing_a_float_column_is_named():
    decoder = RowDecoder(WIDE, ["id"], [], None, max_instances=16)
    row = wide_row(1)
    del row["b"]
    with pytest.raises(RequestError, match=r"instance 0: missing column \['b'\]"):
        decoder.v1({"instances": [row]})


def test_blocks_are_handed_over_as_one_matrix_each_from_v1_and_v2_alike():
    from kserve.protocol.infer_type import InferInput

    from tfkfp.components.common.model.predictor import FLOAT_BLOCK, INT64_BLOCK

    fields = [Field("a", "float32", ()), Field("s", "string", ()), Field("i", "int64", ()),
              Field("b", "float32", ()), Field("j", "int64", ())]
    block = RowDecoder(fields, ["id"], [], None, max_instances=4,
                       blocks={"float32": ["a", "b"], "int64": ["i", "j"]})
    v1 = block.v1({"instances": [{"a": 1.5, "s": "x", "b": None, "i": 2**40, "j": -1, "id": 7},
                                 {"a": -2, "s": None, "b": 3.25, "i": 0, "j": 5}]})
    assert list(v1.features) == [FLOAT_BLOCK, INT64_BLOCK, "s"] and v1.keys == [{"id": 7}, {}]
    floats, ints = v1.features[FLOAT_BLOCK], v1.features[INT64_BLOCK]
    assert (floats.dtype, ints.dtype) == (np.float32, np.int64)
    np.testing.assert_array_equal(floats, [[1.5, np.nan], [-2, 3.25]])
    np.testing.assert_array_equal(ints, [[2**40, -1], [0, 5]])
    v2 = block.v2([InferInput("a", [2], "FP32", [1.5, -2.0]),
                   InferInput("s", [2], "BYTES", ["x", ""]),
                   InferInput("i", [2], "INT64", [2**40, 0]),
                   InferInput("b", [2], "FP64", [np.nan, 3.25]),
                   InferInput("j", [2], "INT32", [-1, 5])])
    np.testing.assert_array_equal(v2.features[FLOAT_BLOCK], floats)
    np.testing.assert_array_equal(v2.features[INT64_BLOCK], ints)
    assert v2.features["s"].tolist() == v1.features["s"].tolist() == [b"x", b""]


@pytest.mark.parametrize("row,words", [
    ({"b": "2"}, "instance 1, column 'b': expected float32"),
    ({"j": 1.5}, "instance 1, column 'j': expected int64"),
    ({"j": None}, "instance 1, column 'j': expected int64"),
    ({"i": True}, "instance 1, column 'i': expected int64"),
    ({"i": 2**63}, "instance 1, column 'i': expected int64"),
])
def test_a_value_a_block_cannot_take_is_still_named(row, words):
    fields = [Field("a", "float32", ()), Field("i", "int64", ()), Field("b", "float32", ()),
              Field("j", "int64", ())]
    block = RowDecoder(fields, [], [], None, max_instances=4,
                       blocks={"float32": ["a", "b"], "int64": ["i", "j"]})
    good = {"a": 1, "b": 2, "i": 3, "j": 4}
    with pytest.raises(RequestError, match=words):
        block.v1({"instances": [good, dict(good, **row)]})


FINITE = r"expected a finite float32 within ±3\.4028235e\+38"


@pytest.mark.parametrize("blocks", [None, {"float32": ["a", "b"]}])
@pytest.mark.parametrize("row,words", [
    ({"b": 3.5e38}, "instance 1, column 'b': found 3.5e+38, "),
    ({"a": -3.5e38}, "instance 1, column 'a': found -3.5e+38, "),
    ({"b": 10**39}, "instance 1, column 'b': found 1000000000000000000000000000000000000000, "),
    ({"a": float("inf")}, "instance 1, column 'a': found inf, "),
    ({"v": [0.5, float("-inf")]}, "instance 1, column 'v': found -inf, "),
])
def test_numbers_past_float32_are_refused_naming_instance_and_column(blocks, row, words):
    """As common.data.missing says: inf, and what float32 cannot hold (inf once cast), are bad."""
    fields = [Field("a", "float32", ()), Field("b", "float32", ()), Field("v", "float32", (2,))]
    decoder = RowDecoder(fields, [], [], None, max_instances=4, blocks=blocks)
    good = {"a": 3.4e38, "b": None, "v": [1, 2]}  # the largest float32s and a gap are values
    assert decoder.v1({"instances": [good]}).count == 1
    with pytest.raises(RequestError, match=re.escape(words) + FINITE):
        decoder.v1({"instances": [good, dict(good, **row)]})


def test_nan_and_infinity_tokens_of_a_text_body_are_a_gap_and_refused():
    decoder = RowDecoder([Field("x", "float32", ())], [], [], None, max_instances=4)
    assert np.isnan(decoder.v1('{"instances": [{"x": NaN}]}').features["x"][0])
    with pytest.raises(RequestError, match="instance 0, column 'x': found -inf, " + FINITE):
        decoder.v1('{"instances": [{"x": -Infinity}]}')


@pytest.mark.parametrize("datatype", ["FP32", "FP64"])
def test_v2_numbers_past_float32_are_refused_naming_instance_and_column(datatype):
    from kserve.protocol.infer_type import InferInput

    decoder = RowDecoder([Field("x", "float32", ()), Field("v", "float32", (2,))], [], [],
                         None, max_instances=4)
    fine = InferInput("x", [2], datatype, [1.0, 2.0])
    with pytest.raises(RequestError, match="instance 1, column 'x': found 3.5e\\+38, " + FINITE):
        decoder.v2([InferInput("x", [2], datatype, [1.0, 3.5e38]),
                    InferInput("v", [2, 2], datatype, [1.0, 2.0, 3.0, 4.0])])
    with pytest.raises(RequestError, match="instance 1, column 'v': found -inf, " + FINITE):
        decoder.v2([fine, InferInput("v", [2, 2], datatype, [1.0, 2.0, 3.0, float("-inf")])])


def test_b64_examples_holding_inf_are_refused_naming_instance_and_column():
    def parse(records):  # what the SavedModel's parser gives for a FloatList holding inf
        return {"x": np.array([1.0, np.inf], np.float32)}

    decoder = RowDecoder([Field("x", "float32", ())], [], [], parse, max_instances=4)
    with pytest.raises(RequestError, match="instance 1, column 'x': found inf, " + FINITE):
        decoder.v1({"instances": [{"b64": "AAAA"}, {"b64": "AAAA"}]})


def test_b64_without_a_parser_is_refused():
    with pytest.raises(RequestError, match="need a SavedModel"):
        decoder().v1({"instances": [{"b64": "AAAA"}]})


class Model:
    """run(): records the rows of each call; the first call waits for ``release``."""

    def __init__(self):
        self.calls, self.release = [], threading.Event()

    def __call__(self, features):
        if not self.calls:
            self.calls.append(len(features["x"]))
            assert self.release.wait(30)
        else:
            self.calls.append(len(features["x"]))
        if (features["x"] < 0).any():
            raise ValueError("negative")
        ids = features["x"].astype(np.int64).reshape(-1, 1)
        return ids, ids.astype(np.float32)


def rows(*values):
    return {"x": np.asarray(values, np.float32)}, len(values)


def test_a_lone_request_runs_at_once_and_later_ones_share_a_call():
    model = Model()

    async def scenario():
        batcher = Batcher(model, max_batch_size=4, max_latency_ms=50, max_queue=3)
        first = asyncio.ensure_future(batcher.predict(*rows(1)))
        while not model.calls:  # the first call runs alone, without waiting for company
            await asyncio.sleep(0.01)
        later = [asyncio.ensure_future(batcher.predict(*rows(v, v))) for v in (2, 3, 4)]
        await asyncio.sleep(0.05)
        with pytest.raises(OverloadedError, match="max_queue 3"):
            await batcher.predict(*rows(9))
        model.release.set()
        answers = await asyncio.gather(first, *later)
        batcher.close()
        return answers

    answers = asyncio.run(scenario())
    assert model.calls == [1, 4, 2]  # 2+2 rows fill a batch of 4; the last 2 rows follow
    assert [a[0][:, 0].tolist() for a in answers] == [[1], [2, 2], [3, 3], [4, 4]]


def test_a_failing_request_does_not_fail_its_batch_neighbours():
    model = Model()
    model.release.set()

    async def scenario():
        batcher = Batcher(model, max_batch_size=8, max_latency_ms=50, max_queue=8)
        blocker = asyncio.ensure_future(batcher.predict(*rows(0)))
        jobs = [asyncio.ensure_future(batcher.predict(*rows(v))) for v in (5, -1, 6)]
        out = await asyncio.gather(blocker, *jobs, return_exceptions=True)
        batcher.close()
        return out

    out = asyncio.run(scenario())
    assert isinstance(out[2], ValueError)
    assert [o[0][0, 0] for i, o in enumerate(out) if i != 2] == [0, 5, 6]


class _Held:
    pass


def test_freeze_heap_takes_what_is_alive_out_of_the_collectors_reach():
    """What is alive when loading is done is frozen (full collections no longer walk it), and
    a frozen object dropped later is still freed."""
    import gc
    import weakref

    from tfkfp.components.serve.heap import freeze_heap

    held = [_Held() for _ in range(1000)]
    probe = weakref.ref(held[0])
    try:
        freeze_heap()
        assert gc.get_freeze_count() >= len(held)
        held.clear()
        assert probe() is None  # reference counting still frees it
    finally:
        gc.unfreeze()


def test_kserve_timing_middleware_is_taken_out_and_the_others_kept():
    from fastapi import FastAPI
    from timing_asgi import TimingMiddleware
    from timing_asgi.integrations import StarletteScopeToName

    from tfkfp.components.serve.limits import RequestGate
    from tfkfp.components.serve.server import _drop_timing

    app = FastAPI()
    app.add_middleware(RequestGate, limit=10)
    app.add_middleware(TimingMiddleware, client=None,
                       metric_namer=StarletteScopeToName(prefix="p", starlette_app=app))
    _drop_timing(app)
    assert [m.cls for m in app.user_middleware] == [RequestGate]


@pytest.mark.parametrize("cpus,threads", [(1, 1), (2, 1), (4, 3), (16, 15)])
def test_the_model_gets_the_cpus_the_event_loop_leaves(cpus, threads):
    from tfkfp.components.serve.server import model_threads

    assert model_threads(cpus) == threads


def test_the_server_runs_on_uvloop_as_kserve_does():
    import uvloop

    from tfkfp.components.serve.server import new_event_loop

    loop = new_event_loop()
    try:
        assert isinstance(loop, uvloop.Loop)
        assert loop.run_until_complete(asyncio.sleep(0, result="ran")) == "ran"
    finally:
        loop.close()


def test_a_body_nested_too_deeply_is_a_request_error_not_a_recursion_error():
    from tfkfp.components.serve.server import _json_with_nan
    from tfkfp.components.serve.tfserving import predict_request

    deep = b"[" * 100_000 + b"]" * 100_000
    for read in (_json_with_nan, lambda body: predict_request(body, None)):
        with pytest.raises(RequestError, match="nested too deeply to read"):
            read(deep)
    assert _json_with_nan(b'{"x": NaN}') is not None and _json_with_nan(b"{x") is None
