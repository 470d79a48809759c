"""A serving endpoint's settings, one place for every step that calls one (batch_predict's
endpoint mode, stream_predict's): where it is, its protocol, batching, credentials, retries
and timeouts, each refused before any work naming the setting. It imports no NumPy."""

import dataclasses
import math
import re
from typing import Dict, Tuple

from tfkfp.components.common.endpoint.errors import EndpointInputError


@dataclasses.dataclass(frozen=True)
class Protocol:
    """A serving protocol the suite speaks: as a caller of an endpoint (batch_predict's and
    stream_predict's endpoint mode; its encoding is common.endpoint.protocols' class of the
    same name), as ``tfkfp serve`` (which prints an example request in it), or both."""

    name: str
    called: bool  # endpoint callers speak it (endpoint_protocol)
    served: bool  # tfkfp serve answers it (--example-request)
    summary: str  # one line for help texts and docs


# One entry a protocol; callers list the default first, then the table's order.
PROTOCOL_TABLE: Dict[str, Protocol] = {p.name: p for p in (
    Protocol("v1", called=True, served=True, summary="KServe v1 rows"),
    Protocol("v2", called=True, served=True,
             summary="Open Inference Protocol: columns, a model version"),
    Protocol("vertex", called=True, served=False,
             summary="a Vertex AI Endpoint's :predict: v1 rows, Google credentials"),
    Protocol("tfserving", called=False, served=True,
             summary="TF Serving's REST API, its columnar form"),
)}
DEFAULT_PROTOCOL = "v2"


def called_protocols() -> Tuple[str, ...]:
    """What endpoint_protocol takes: the default first, then the others callers speak."""
    return tuple(sorted((p.name for p in PROTOCOL_TABLE.values() if p.called),
                        key=lambda name: name != DEFAULT_PROTOCOL))


def served_protocols() -> Tuple[str, ...]:
    """The protocols ``tfkfp serve`` answers, in the table's order."""
    return tuple(p.name for p in PROTOCOL_TABLE.values() if p.served)


PROTOCOLS = called_protocols()  # ("v2", "v1", "vertex"), for choices and messages

# A Vertex AI Endpoint: its resource name, or a URL ending in it after the API version
VERTEX_ENDPOINT = re.compile(r"^(?:(?P<host>https?://[^/]+)/(?P<api>v1|v1beta1)/)?"
                             r"(?P<name>projects/[^/]+/locations/(?P<location>[^/]+)"
                             r"/endpoints/[^/:]+)/?$")


@dataclasses.dataclass(frozen=True)
class EndpointOptions:
    """Where a step sends its rows instead of loading the model (endpoint mode).

    Attributes:
        url: the server's base URL (``http://host:port``; a KServe InferenceService's
            ``status.address.url`` inside the cluster, its ingress from outside); with the
            ``vertex`` protocol a Vertex AI Endpoint's resource name
            (``projects/P/locations/L/endpoints/E``) or its ``https://L-aiplatform.
            googleapis.com/v1/projects/P/locations/L/endpoints/E`` URL.
        model: the model's name in the protocol's paths (not used by ``vertex``).
        protocol: ``v2`` (Open Inference Protocol), ``v1`` (KServe v1 rows) or ``vertex``
            (a Vertex AI Endpoint's ``:predict``, v1 rows, the step's Google credentials).
        batch_rows: rows per request.
        concurrency: requests in flight at once.
        headers: extra request headers (e.g. ``Host`` for an ingress); never a token.
        token_file: a file holding a bearer token (e.g. a mounted Secret), read at start.
        token_env: an environment variable holding a bearer token.
        retries: attempts after the first on 429, 502, 503, 504, lost connections and
            timeouts, with exponential backoff (0.5 s doubling, at most 15 s, or the
            server's Retry-After).
        timeout_s: seconds to wait for the connection and for each read of an answer;
            a request that waits longer is an attempt lost (retried as above).
    """

    url: str
    model: str = "model"
    protocol: str = DEFAULT_PROTOCOL
    batch_rows: int = 256
    concurrency: int = 4
    headers: Dict[str, str] = dataclasses.field(default_factory=dict)
    token_file: str = ""
    token_env: str = ""
    retries: int = 8
    timeout_s: float = 120.0


def vertex_base_url(endpoint_url: str) -> str:
    """A Vertex AI Endpoint's URL (``:predict`` follows it) from its resource name (in its
    location's regional API) or its URL; EndpointInputError naming the forms taken."""
    found = VERTEX_ENDPOINT.match(endpoint_url.strip())
    if found is None:
        raise EndpointInputError(
            f"endpoint_url {endpoint_url!r}: endpoint_protocol vertex takes a Vertex AI "
            "Endpoint's resource name, projects/PROJECT/locations/REGION/endpoints/ID, or "
            "its URL, https://REGION-aiplatform.googleapis.com/v1/projects/PROJECT/"
            "locations/REGION/endpoints/ID")
    host = found["host"] or f"https://{found['location']}-aiplatform.googleapis.com"
    return f"{host}/{found['api'] or 'v1'}/{found['name']}"


def check_endpoint(options: EndpointOptions) -> None:
    """Refuse endpoint options that cannot work, naming the option and the allowed values."""
    if options.protocol == "vertex":
        _check_vertex(options)
    elif not options.url.startswith(("http://", "https://")):
        raise EndpointInputError(f"endpoint_url {options.url!r}: expected an http:// or "
                                "https:// base URL, e.g. http://my-model.ns.svc.cluster.local")
    if not options.model or "/" in options.model:
        raise EndpointInputError(f"endpoint_model {options.model!r}: expected the model's "
                                "name in the endpoint's URLs (non-empty, without '/')")
    if options.protocol not in called_protocols():
        raise EndpointInputError(f"endpoint_protocol {options.protocol!r} is not one of "
                                f"{called_protocols()}")
    for name in ("batch_rows", "concurrency"):
        if getattr(options, name) < 1:
            raise EndpointInputError(f"endpoint_{name} {getattr(options, name)} is below 1")
    if options.retries < 0:
        raise EndpointInputError(f"endpoint_retries {options.retries} is below 0")
    # NaN compares false and an infinite socket timeout overflows: both refused here
    if not (math.isfinite(options.timeout_s) and options.timeout_s > 0):
        raise EndpointInputError(f"endpoint_timeout_s {options.timeout_s} must be a number "
                                "of seconds above 0 (e.g. 120)")
    secret = sorted(h for h in options.headers if h.lower() in ("authorization",
                                                                "proxy-authorization"))
    if secret:
        raise EndpointInputError(f"endpoint_headers carries {secret}: a credential in a "
                                "pipeline parameter is visible to every reader of the run; "
                                "pass endpoint_token_file (a mounted Secret) or "
                                "endpoint_token_env (a variable set from one)")
    if options.token_file and options.token_env:
        raise EndpointInputError("endpoint_token_file and endpoint_token_env both set: pass "
                                "one source of the bearer token")


def _check_vertex(options: EndpointOptions) -> None:
    vertex_base_url(options.url)
    if options.token_file or options.token_env:
        raise EndpointInputError(
            "endpoint_token_file/endpoint_token_env with endpoint_protocol vertex: a Vertex "
            "AI Endpoint is called with the step's Google credentials (workload identity, "
            "the step's service account or GOOGLE_APPLICATION_CREDENTIALS); leave both empty")


def endpoint_options(endpoint_url: str, endpoint_model: str = "model",
                     endpoint_protocol: str = "v2", endpoint_batch_rows: int = 256,
                     endpoint_concurrency: int = 4, endpoint_headers: Dict | None = None,
                     endpoint_token_file: str = "", endpoint_token_env: str = "",
                     endpoint_retries: int = 8, endpoint_timeout_s: float = 120.0
                     ) -> EndpointOptions | None:
    """A step's endpoint parameters as checked EndpointOptions; None when endpoint_url is
    empty (the model is loaded in the step). The pipelines check a request with it before a
    run starts."""
    if not endpoint_url:
        return None
    options = EndpointOptions(endpoint_url, endpoint_model, endpoint_protocol,
                              endpoint_batch_rows, endpoint_concurrency,
                              dict(endpoint_headers or {}), endpoint_token_file,
                              endpoint_token_env, endpoint_retries, endpoint_timeout_s)
    check_endpoint(options)
    return options
