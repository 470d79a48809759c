"""A valid request for any served model, in each protocol ``tfkfp serve`` speaks, built from
the model's inputs (its signature) and its schema's key columns: what ``tfkfp serve MODEL
--example-request PROTOCOL`` prints, so nobody writes a 64-column body by hand.

Every value is a placeholder of the input's type (0.0, 0, ""); replace them with a real row.
"""

import json
from typing import Any, Dict, List, Sequence, Tuple

from tfkfp.components.common.data import datatypes
from tfkfp.components.common.endpoint.options import served_protocols
from tfkfp.components.common.model import routes
from tfkfp.components.serve.errors import ServeOptionsError
from tfkfp.components.serve.rows import Field

PROTOCOLS = served_protocols()  # ("v1", "v2", "tfserving"): common.endpoint.options' table
_PLACEHOLDER = {"float32": 0.0, "int64": 0, "string": ""}
_KEY_PLACEHOLDER = {"float32": 1.0, "int64": 1, "string": "row-1"}


def example_request(protocol: str, fields: Sequence[Field], keys: Dict[str, str],
                    model: str = "model") -> Tuple[str, Dict[str, Any]]:
    """(the path to POST to, the JSON body) of a one-row request in ``protocol``.

    Args:
        protocol: v1 (KServe v1 rows), v2 (Open Inference Protocol) or tfserving (TF
            Serving's REST API, its columnar form).
        fields: the model's inputs, in schema order.
        keys: key columns echoed into the answer (v1 and tfserving), name -> dtype.
        model: the model's name in the URLs.
    """
    if protocol not in served_protocols():
        raise ServeOptionsError(f"--example-request {protocol!r}: expected one of "
                                f"{', '.join(served_protocols())}")
    row = {**{name: _KEY_PLACEHOLDER.get(dtype, "row-1") for name, dtype in keys.items()},
           **{f.name: _value(f) for f in fields}}
    if protocol == "v1":
        return routes.v1_predict(model), {"instances": [row]}
    if protocol == "tfserving":
        return routes.v1_predict(model), {"inputs": {name: [v] for name, v in row.items()}}
    return routes.v2_infer(model), {"inputs": [_tensor(f) for f in fields]}


def _value(field: Field) -> Any:
    value: Any = _PLACEHOLDER[field.dtype]
    for size in reversed(field.shape):
        value = [value] * int(size)
    return value


def _tensor(field: Field) -> Dict[str, Any]:
    count = 1
    for size in field.shape:
        count *= int(size)
    return {"name": field.name, "shape": [1, *map(int, field.shape)],
            "datatype": datatypes.v2_name(field.dtype), "data": [_PLACEHOLDER[field.dtype]] * count}


def request_text(protocol: str, fields: Sequence[Field], keys: Dict[str, str],
                 model: str = "model") -> str:
    """The body as one line of JSON, for ``curl -d @FILE``."""
    return json.dumps(example_request(protocol, fields, keys, model)[1])


def served_fields(model_uri: str) -> Tuple[List[Field], Dict[str, str]]:
    """The inputs a served model takes, in schema order, and its key columns with their
    dtypes, read as ``tfkfp serve`` reads them."""
    from tfkfp.components.serve.options import ServeOptions
    from tfkfp.components.serve.servable import load_servable

    servable = load_servable(model_uri, ServeOptions(), threads=1)
    schema = servable.predictor.schema
    dtypes = {c.name: c.dtype for c in schema.columns} if schema is not None else {}
    keys = {name: dtypes.get(name, "string") for name in servable.decoder.keys}
    return list(servable.decoder.fields.values()), keys


def print_example_request(model_uri: str, protocol: str, model: str, base_url: str) -> None:
    """The body on stdout (for ``> FILE``), the URL to POST it to on stderr."""
    import sys

    fields, keys = served_fields(model_uri)
    path, body = example_request(protocol, fields, keys, model)
    print(json.dumps(body))
    print(f"POST it to {base_url}{path} with content-type application/json", file=sys.stderr)
