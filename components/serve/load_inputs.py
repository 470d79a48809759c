"""What ``tfkfp loadtest`` sends: rows of a Dataset folder, a CSV file or a JSON Lines file
(each row a v1 instance), or a request body file of the user's sent as it is.

A body file's protocol is read from its shape: ``{"instances": [...]}`` and TF Serving's
``{"inputs": {column: [...]}}`` go to the v1 predict route, the Open Inference Protocol's
``{"inputs": [tensor, ...]}`` to the v2 infer route.
"""

import csv
import json
import os
from typing import Any, Dict, List, Tuple

from tfkfp.components.common.data import formats
from tfkfp.components.common.model import routes
from tfkfp.components.serve.errors import ServeOptionsError

# The row files loadtest reads, by extension: the formats table's CSV and JSON Lines entries
# (read as they are: no .gz).
ROW_FORMATS = (formats.FORMATS["csv"], formats.FORMATS["jsonl"])
ROW_FILES = {ext: fmt.name for fmt in ROW_FORMATS for ext in fmt.extensions}
EXPECTED = ("a Dataset folder (tfkfp shard's output), a CSV file ({}: a header line then "
            "rows) or a JSON Lines file ({}: an object {{column: value}} a line)").format(
    *(", ".join(fmt.extensions) for fmt in ROW_FORMATS))


def rows_of(source: str, count: int, split: str) -> List[Dict[str, Any]]:
    """Up to ``count`` rows of ``source`` as v1 instances."""
    kind = ROW_FILES.get(os.path.splitext(source)[1].lower())
    if kind is None:
        if not os.path.isdir(source) and "://" not in source:
            found = "a file of another kind" if os.path.exists(source) else "no such file"
            raise ServeOptionsError(f"--dataset {source}: expected {EXPECTED}; found {found}")
        return instances(source, count, split)
    rows = _csv_rows(source, count) if kind == "csv" else _jsonl_rows(source, count)
    if not rows:
        raise ServeOptionsError(f"--dataset {source}: no rows to send")
    return rows


def instances(dataset: str, rows: int, split: str = "eval") -> List[Dict[str, Any]]:
    """Up to ``rows`` rows of a Dataset directory as v1 instances (JSON values: a float gap
    is null, strings are text)."""
    from tfkfp.components.common.platform.quiet import import_tensorflow_quietly

    import_tensorflow_quietly()  # the reader's; its start-up lines stay off the console
    from tfkfp.components.common.data.reader import make_dataset
    from tfkfp.components.common.endpoint.protocols import v1_instances

    out: List[Dict[str, Any]] = []
    for features, keys in make_dataset(dataset, mode="predict", split=split, batch_size=256,
                                       max_rows=rows):
        columns = {**{k: v.numpy() for k, v in features.items()},
                   **{k: v.numpy() for k, v in keys.items()}}
        out += v1_instances(columns)[:rows - len(out)]
        if len(out) == rows:
            return out
    if not out:
        raise ServeOptionsError(f"{dataset}: the {split} split has no rows to send")
    return out


def _csv_rows(path: str, count: int) -> List[Dict[str, Any]]:
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if not reader.fieldnames:
            raise ServeOptionsError(f"--dataset {path}: expected a header line of column "
                                    "names; the file is empty")
        return [{k: _cell(v) for k, v in row.items()} for _, row in zip(range(count), reader)]


def _cell(text: str | None) -> Any:
    """A CSV cell as JSON would carry it: a number where it is one, null where empty."""
    if text is None or text == "":
        return None
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return text


def _jsonl_rows(path: str, count: int) -> List[Dict[str, Any]]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if len(rows) == count:
                break
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as err:
                raise ServeOptionsError(f"--dataset {path}: line {number} is not JSON "
                                        f"({err}); expected {EXPECTED}") from None
            if not isinstance(row, dict):
                raise ServeOptionsError(f"--dataset {path}: line {number} is not an object "
                                        "{column: value}")
            rows.append(row)
    return rows


def body_of(path: str, model: str) -> Tuple[str, bytes]:
    """(the route, the bytes) of a request body file, checked to be one the server reads."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        body = json.loads(data)
    except ValueError as err:
        raise ServeOptionsError(f"--body {path}: not JSON ({err}); expected a request body, "
                                "e.g. what tfkfp serve MODEL --example-request v1 prints") from None
    inputs = body.get("inputs") if isinstance(body, dict) else None
    if isinstance(inputs, list):
        return routes.v2_infer(model), data
    if isinstance(body, dict) and ("instances" in body or isinstance(inputs, dict)):
        return routes.v1_predict(model), data
    raise ServeOptionsError(f"--body {path}: expected {{\"instances\": [...]}} (v1), "
                            "{\"inputs\": [tensor, ...]} (v2) or {\"inputs\": {column: "
                            "[...]}} (TF Serving)")
