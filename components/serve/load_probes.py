"""The plain requests ``tfkfp loadtest`` makes beside the load, one at a time with
``http.client``: whether the model is ready, which rows the server's precomputed set answers,
and its /metrics count of such answers.
"""

import http.client
import json
from typing import Any, Dict, List

from tfkfp.components.common.model import routes
from tfkfp.components.serve.errors import ServeOptionsError
from tfkfp.components.serve.load_engine import ANSWER_TIMEOUT_S, Target

PRECOMPUTED_METRIC = "tfkfp_precomputed_answers_total"  # components/serve/metrics.py


def _call(where: Target, method: str, path: str, url: str, body: bytes = b"") -> tuple:
    """(status, body text) of one request carrying the target's headers."""
    if where.tls is None:
        conn = http.client.HTTPConnection(where.host, where.port, timeout=ANSWER_TIMEOUT_S)
    else:
        conn = http.client.HTTPSConnection(where.host, where.port, timeout=ANSWER_TIMEOUT_S,
                                           context=where.tls)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for line in where.headers.decode().splitlines():
            name, _, value = line.partition(":")
            conn.putheader(name, value.strip())
        if body:
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body or None)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException) as err:
        raise ServeOptionsError(f"{url}: cannot connect ({err})") from None
    finally:
        conn.close()


def check_ready(where: Target, model: str, url: str) -> None:
    status, _ = _call(where, "GET", routes.v1_model(model), url)
    if status != 200:
        raise ServeOptionsError(f"{url}: model {model!r} is not ready (HTTP {status} from "
                                f"{routes.v1_model(model)})")


def precomputed_rows(where: Target, model: str, url: str, rows: List[Dict[str, Any]],
                     rows_per_request: int) -> List[bool]:
    """Per row, whether the server answered it from its precomputed set (each row sent
    once, ``rows_per_request`` a request)."""
    marked: List[bool] = []
    for start in range(0, len(rows), rows_per_request):
        chunk = rows[start:start + rows_per_request]
        status, text = _call(where, "POST", routes.v1_predict(model), url,
                             json.dumps({"instances": chunk}).encode())
        try:
            answers = json.loads(text)["predictions"] if status == 200 else None
        except (ValueError, KeyError, TypeError):
            answers = None
        if not isinstance(answers, list) or len(answers) != len(chunk):
            raise ServeOptionsError(f"{url}: rows {start}-{start + len(chunk) - 1} of the "
                                    f"load were answered {status}: {text[:300]}")
        marked += [isinstance(a, dict) and a.get("precomputed") is True for a in answers]
    return marked


def precomputed_total(where: Target, model: str, url: str) -> float | None:
    """The server's count of rows its precomputed set answered for ``model`` (/metrics);
    None where it reports no such count."""
    status, text = _call(where, "GET", "/metrics", url)
    label = f'model_name="{model}"'
    for line in text.splitlines() if status == 200 else []:
        if line.startswith(PRECOMPUTED_METRIC + "{") and label in line:
            return float(line.rsplit(" ", 1)[1])
    return None
