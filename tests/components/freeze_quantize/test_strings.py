"""freeze_quantize on a model with a Unicode string feature (commas, quotes) looked up in a
table and a float feature imputed in the graph: every mode converts and is measured, the
frozen graph carries its table, and the gap fills are recorded."""

import json
import os

import numpy as np
import pytest
from string_tables import COLOURS, probe_rows, savedmodel_outputs

from tfkfp.components.common.tflite import inputs as tflite_inputs
from tfkfp.components.common.tflite import modes as tflite_modes
from tfkfp.components.common.tflite.parity import Timing
from tfkfp.components.freeze_quantize import freeze
from tfkfp.components.freeze_quantize.core import freeze_quantize

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def strings_auto(string_table, tmp_path_factory):
    out = tmp_path_factory.mktemp("strings_auto")
    return freeze_quantize(string_table.model, string_table.dataset, str(out / "tflite"),
                           str(out / "frozen"), quantization="auto", calibration_examples=100,
                           timing=Timing(16, 2))


def test_every_mode_converts_and_keeps_the_savedmodel_answers(strings_auto):
    assert [f.mode for f in strings_auto.figures] == list(tflite_modes.MODES)
    for f in strings_auto.figures:
        assert f.examples > 100
        assert f.agreement >= 0.98, f
        assert f.accuracy >= f.reference_accuracy - 0.01, f
        assert f.latency_batch_ms > 0
    assert strings_auto.frozen_agreement == 1.0


def test_the_frozen_graph_holds_its_table_and_runs_on_gaps(strings_auto, string_table):
    spec = json.load(open(os.path.join(strings_auto.frozen_dir, "frozen_graph.json")))
    assert spec["initializer"] == "init_all_tables"
    assert [t["input"] for t in spec["tables"].values()] == ["colour"]
    assert [t["size"] for t in spec["tables"].values()] == [len(COLOURS)]
    graph_def = freeze.load_graph_def(os.path.join(strings_auto.frozen_dir, "frozen_graph.pb"))
    ops = {n.op for n in graph_def.node}
    assert {"HashTableV2", "LookupTableFindV2", "OneHot"} <= ops
    assert not ops & {"DenseBincount", "VarHandleOp", "StatefulPartitionedCall"}
    rows = probe_rows()
    got = freeze.run_graph(graph_def, spec["inputs"], spec["outputs"],
                           tflite_inputs.Examples(rows, np.zeros(len(rows["x"]))))
    want = savedmodel_outputs(string_table.model, rows)
    np.testing.assert_allclose(got["probabilities"], want["probabilities"], atol=1e-5)
    assert list(got["classes"]) == list(want["classes"])


def test_quantization_json_records_the_fill_of_the_imputed_input(strings_auto, string_table):
    saved = json.load(open(os.path.join(strings_auto.tflite_dir, "quantization.json")))
    assert saved["fills"]["x"] == pytest.approx(string_table.fill, abs=1e-6)
    assert "colour" not in saved["fills"]


def test_int8_with_integer_io_passes_the_gate(string_table, tmp_path):
    result = freeze_quantize(string_table.model, string_table.dataset,
                             str(tmp_path / "tflite"), str(tmp_path / "frozen"),
                             quantization="int8", integer_io=True, calibration_examples=100,
                             timing=Timing(16, 2))
    assert result.mode == "int8" and result.chosen.agreement >= 0.98
    saved = json.load(open(os.path.join(tmp_path, "tflite", "quantization.json")))
    assert saved["integer_io"] is True
