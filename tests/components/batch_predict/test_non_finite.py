"""batch_predict's CSV and JSON Lines rows follow common.data.missing's rule: NaN or a blank is a
gap; inf, and a number float32 cannot hold (3.5e38, read as inf), is an error row naming the
line, the column and the value as written, while the other rows are predicted."""

import pytest

from tfkfp.components.batch_predict.text import read_text
from tfkfp.components.common.data.schema import Column

KEYS = [Column("id", "int64", role="key")]
FINITE = "expected a finite float32 within ±3.4028235e+38"


def read(path, fmt, features):
    chunks = list(read_text(str(path), fmt, features, KEYS, batch_size=64))
    return [e for chunk in chunks for e in chunk.errors], sum(c.rows for c in chunks)


def test_csv_rows_past_float32_are_errors_naming_line_column_and_value(tmp_path):
    path = tmp_path / "rows.csv"
    cells = ["0.5", "3.5e38", "-inf", "3.4e38", "", "NaN", "inf"]  # rows on lines 2..8
    path.write_text("id,x\n" + "".join(f"{i},{x}\n" for i, x in enumerate(cells)))
    errors, rows = read(path, "csv", [Column("x", "float32")])
    assert rows == 4  # 0.5, the largest float32s and the two gaps
    assert [(e.record, e.reason.split(": ", 1)[1]) for e in errors] == [
        (3, f"column 'x': found 3.5e38, {FINITE} (a missing value is a gap, not inf)"),
        (4, f"column 'x': found -inf, {FINITE} (a missing value is a gap, not inf)"),
        (8, f"column 'x': found inf, {FINITE} (a missing value is a gap, not inf)")]


def test_json_lines_past_float32_are_errors_naming_line_column_and_value(tmp_path):
    path = tmp_path / "rows.jsonl"
    rows = ['{"id": 0, "x": 0.5, "v": [1, 2]}', '{"id": 1, "x": 3.5e38, "v": [1, 2]}',
            '{"id": 2, "x": NaN, "v": [1, -3.5e38]}', '{"id": 3, "x": null, "v": [0, 3.4e38]}',
            '{"id": 4, "x": -Infinity, "v": [1, 2]}']
    path.write_text("\n".join(rows) + "\n")
    errors, parsed = read(path, "jsonl", [Column("x", "float32"), Column("v", "float32", (2,))])
    assert parsed == 2
    assert [(e.record, e.reason.split(": ", 1)[1].split(", expected")[0]) for e in errors] == [
        (2, "column 'x': found 3.5e+38"), (3, "column 'v': found -3.5e+38"),
        (5, "column 'x': found -inf")]
    assert all(FINITE in e.reason for e in errors)


@pytest.mark.slow
def test_a_csv_row_past_float32_is_an_error_row_and_the_rest_are_predicted(
        string_table, tmp_path, read_outputs):
    from tfkfp.components.batch_predict.core import batch_predict

    path = tmp_path / "colours.csv"
    path.write_text("id,x,colour\n1,0.5,blue\n2,3.5e38,blue\n3,,blue\n")
    result = batch_predict(string_table.model, str(path), str(tmp_path / "out"), keys=["id"],
                           max_error_fraction=1.0)
    assert (result.inputs, result.predictions, result.errors) == (3, 2, 1)
    errors = read_outputs(str(tmp_path / "out"), kind="errors")
    assert errors[0]["record"] == 3 and f"column 'x': found 3.5e38, {FINITE}" in \
        errors[0]["reason"]
    assert sorted(r["id"] for r in read_outputs(str(tmp_path / "out"))) == [1, 3]
