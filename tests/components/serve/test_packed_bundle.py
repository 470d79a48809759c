"""``tfkfp serve`` on a bundle in the packed layout (a float32 block with gaps, an int32
block, a string input of its own): rows sent by column name are packed by the server, and
the answers are the per-column bundle's."""

import json
import math

import numpy as np
import pytest
from mixed_table import probe_rows
from serve_process import running

from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.export_tflite.core import export_tflite

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bundles(mixed_table, tmp_path_factory):
    out = tmp_path_factory.mktemp("serve_packed")
    for layout in ("packed", "columns"):
        export_tflite(mixed_table.model, mixed_table.dataset, str(out / layout),
                      quantization="none", input_layout=layout)
    return {layout: str(out / layout) for layout in ("packed", "columns")}


def instances():
    """The probe rows as v1 instances with an id; a gap is null."""
    rows = probe_rows()
    out = []
    for i in range(len(rows["f_a"])):
        row = {"id": i}
        for name, values in rows.items():
            value = values[i]
            row[name] = value.decode() if isinstance(value, bytes) else \
                None if math.isnan(float(value)) else value.item()
        out.append(row)
    return out


def test_the_server_packs_rows_and_answers_as_the_per_column_bundle(
        bundles, mixed_table, tmp_path):
    rows = instances()
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    batch_predict(bundles["columns"], str(data), str(tmp_path / "batch"), keys=["id"],
                  top_k=2, schema_uri=mixed_table.dataset)
    want = sorted((json.loads(x) for f in sorted((tmp_path / "batch").glob("predictions-*"))
                   for x in f.read_text().splitlines()), key=lambda r: r["id"])
    with running(bundles["packed"], "--top-k", "2", "--keys", "id",
                 tmp_path=tmp_path) as server:
        status, body = server.v1(rows)
    assert status == 200, body
    got = sorted(body["predictions"], key=lambda r: r["id"])
    assert [g["class_id"] for g in got] == [w["class_id"] for w in want]
    np.testing.assert_allclose([g["top_scores"] for g in got], [w["top_scores"] for w in want],
                               atol=1e-5)
