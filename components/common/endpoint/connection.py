"""A connected serving endpoint, checked before any row is sent: it answers, its model is
ready, credentials give a token; what its metadata says about the model (``Served``).

Both endpoint callers start here: batch_predict's endpoint mode and stream_predict's. A
server that cannot be reached, a model not ready after the retries, or credentials that
cannot give a token are refused with ``EndpointInputError`` naming the URL.
"""

import dataclasses
from typing import Any, Callable, Dict

from tfkfp.components.common.endpoint.backoff import RETRIED
from tfkfp.components.common.endpoint.client import EndpointClient, GoogleAuth, bearer_token
from tfkfp.components.common.endpoint.errors import EndpointError, EndpointInputError
from tfkfp.components.common.endpoint.options import EndpointOptions, check_endpoint
from tfkfp.components.common.endpoint.protocols import PROTOCOLS, Served


@dataclasses.dataclass
class Connection:
    """An endpoint that answered ready: its client, protocol and what its metadata says."""

    options: EndpointOptions
    client: EndpointClient
    protocol: Any  # a PROTOCOLS entry
    served: Served

    @property
    def predict_path(self) -> str:
        return self.protocol.predict_path(self.options.model)

    @property
    def predict_url(self) -> str:
        return self.client.url(self.predict_path)


def open_endpoint(options: EndpointOptions, credentials=None) -> Connection:
    """The endpoint, checked to answer, with what its metadata says. ``credentials``:
    Google credentials for a Vertex AI Endpoint (None: google.auth.default()'s)."""
    check_endpoint(options)
    protocol = PROTOCOLS[options.protocol]
    client = EndpointClient(protocol.base_url(options.url), options.headers,
                            options.retries, options.timeout_s,
                            auth=_auth(options, credentials))
    ready_path, metadata_path = (protocol.ready_path(options.model),
                                 protocol.metadata_path(options.model))
    body = _check_ready(client, ready_path, options)
    problem = protocol.not_ready(body)
    if problem:
        raise EndpointInputError(f"endpoint {client.url(ready_path)}: {problem}")
    status, metadata = (200, body) if metadata_path == ready_path else \
        client.get(metadata_path)
    served = protocol.served(metadata) if status == 200 else Served(None, None, None, "")
    return Connection(options, client, protocol, served)


def _auth(options: EndpointOptions, credentials) -> Callable[[], Dict[str, str]] | None:
    """The Authorization header's source: Google credentials for Vertex AI (a token got
    now, so credentials that cannot give one are refused before any work), else a bearer
    token read once from a file or variable, else none."""
    try:
        if options.protocol == "vertex":
            google = GoogleAuth(credentials)
            google()
            return google
        token = bearer_token(options.token_file, options.token_env)
    except EndpointError as err:
        raise EndpointInputError(str(err)) from None
    header = {"Authorization": f"Bearer {token}"}
    return (lambda: header) if token else None


def _check_ready(client: EndpointClient, path: str, options: EndpointOptions) -> Any:
    """The model answers ready (its body returned); a server still loading it (429, 502,
    503, 504) is waited for as a request would be; a server that cannot be reached is
    refused at once."""
    waiting = client.backoff(total=options.retries, connect=0, read=0, other=0,
                             status_forcelist=RETRIED)
    try:
        status, body = client.get(path, waiting)
    except OSError as err:
        raise EndpointInputError(
            f"endpoint {client.url(path)} is unreachable ({type(err).__name__}: {err}); "
            "check endpoint_url (inside a cluster an InferenceService's "
            "status.address.url) and that the server is running") from None
    if status != 200:
        raise EndpointInputError(f"endpoint {client.url(path)} answered {status} "
                                 f"({str(body)[:200]}): {_not_ready_hint(options)}")
    return body


def _not_ready_hint(options: EndpointOptions) -> str:
    if options.protocol == "vertex":
        return ("the Vertex AI Endpoint cannot be used (check endpoint_url and that the "
                "step's Google account may get and predict on it: roles/aiplatform.user)")
    return (f"model {options.model!r} is not ready there (check endpoint_model, "
            "endpoint_headers and the token)")
