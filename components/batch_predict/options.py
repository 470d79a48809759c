"""What batch_predict refuses before reading anything (the pipelines check requests with it
before a run starts). It imports no NumPy or TensorFlow."""

import dataclasses
import math
import re
from typing import Dict

from tfkfp.components.batch_predict.errors import PredictInputError
from tfkfp.components.batch_predict.merge import MAX_ERROR_FRACTION, check_error_fraction

OUTPUT_FORMATS = ("jsonl", "csv", "tfrecord")


def check_options(output_format: str, top_k: int, predict_batch_size: int,
                  max_error_fraction: float = MAX_ERROR_FRACTION) -> None:
    """Refuse what cannot work before any work; the pipelines call it before a run starts."""
    check_error_fraction(max_error_fraction)
    if output_format not in OUTPUT_FORMATS:
        raise PredictInputError(f"output_format {output_format!r} is not one of "
                                f"{OUTPUT_FORMATS}")
    if top_k < 1:
        raise PredictInputError(f"top_k {top_k} is below 1")
    if predict_batch_size < 1:
        raise PredictInputError(f"predict_batch_size {predict_batch_size} is below 1")


# Open Inference Protocol (the default: columns, a model version), KServe v1 rows, and a
# Vertex AI Endpoint's :predict (v1 rows, Google credentials)
PROTOCOLS = ("v2", "v1", "vertex")
# A Vertex AI Endpoint: its resource name, or a URL ending in it after the API version
VERTEX_ENDPOINT = re.compile(r"^(?:(?P<host>https?://[^/]+)/(?P<api>v1|v1beta1)/)?"
                             r"(?P<name>projects/[^/]+/locations/(?P<location>[^/]+)"
                             r"/endpoints/[^/:]+)/?$")


@dataclasses.dataclass(frozen=True)
class EndpointOptions:
    """Where batch_predict sends its rows instead of loading the model (endpoint mode).

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
    protocol: str = "v2"
    batch_rows: int = 256
    concurrency: int = 4
    headers: Dict[str, str] = dataclasses.field(default_factory=dict)
    token_file: str = ""
    token_env: str = ""
    retries: int = 8
    timeout_s: float = 120.0


def vertex_base_url(endpoint_url: str) -> str:
    """A Vertex AI Endpoint's URL (``:predict`` follows it) from its resource name (in its
    location's regional API) or its URL; PredictInputError naming the forms taken."""
    found = VERTEX_ENDPOINT.match(endpoint_url.strip())
    if found is None:
        raise PredictInputError(
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
        raise PredictInputError(f"endpoint_url {options.url!r}: expected an http:// or "
                                "https:// base URL, e.g. http://my-model.ns.svc.cluster.local")
    if not options.model or "/" in options.model:
        raise PredictInputError(f"endpoint_model {options.model!r}: expected the model's "
                                "name in the endpoint's URLs (non-empty, without '/')")
    if options.protocol not in PROTOCOLS:
        raise PredictInputError(f"endpoint_protocol {options.protocol!r} is not one of "
                                f"{PROTOCOLS}")
    for name in ("batch_rows", "concurrency"):
        if getattr(options, name) < 1:
            raise PredictInputError(f"endpoint_{name} {getattr(options, name)} is below 1")
    if options.retries < 0:
        raise PredictInputError(f"endpoint_retries {options.retries} is below 0")
    # NaN compares false and an infinite socket timeout overflows: both refused here
    if not (math.isfinite(options.timeout_s) and options.timeout_s > 0):
        raise PredictInputError(f"endpoint_timeout_s {options.timeout_s} must be a number "
                                "of seconds above 0 (e.g. 120)")
    secret = sorted(h for h in options.headers if h.lower() in ("authorization",
                                                                "proxy-authorization"))
    if secret:
        raise PredictInputError(f"endpoint_headers carries {secret}: a credential in a "
                                "pipeline parameter is visible to every reader of the run; "
                                "pass endpoint_token_file (a mounted Secret) or "
                                "endpoint_token_env (a variable set from one)")
    if options.token_file and options.token_env:
        raise PredictInputError("endpoint_token_file and endpoint_token_env both set: pass "
                                "one source of the bearer token")


def _check_vertex(options: EndpointOptions) -> None:
    vertex_base_url(options.url)
    if options.token_file or options.token_env:
        raise PredictInputError(
            "endpoint_token_file/endpoint_token_env with endpoint_protocol vertex: a Vertex "
            "AI Endpoint is called with the step's Google credentials (workload identity, "
            "the step's service account or GOOGLE_APPLICATION_CREDENTIALS); leave both empty")


def endpoint_options(endpoint_url: str, endpoint_model: str = "model",
                     endpoint_protocol: str = "v2", endpoint_batch_rows: int = 256,
                     endpoint_concurrency: int = 4, endpoint_headers: Dict | None = None,
                     endpoint_token_file: str = "", endpoint_token_env: str = "",
                     endpoint_retries: int = 8, endpoint_timeout_s: float = 120.0
                     ) -> EndpointOptions | None:
    """The component's endpoint parameters as checked EndpointOptions; None when
    endpoint_url is empty (the model is loaded in the step). The pipelines check a request
    with it before a run starts."""
    if not endpoint_url:
        return None
    options = EndpointOptions(endpoint_url, endpoint_model, endpoint_protocol,
                              endpoint_batch_rows, endpoint_concurrency,
                              dict(endpoint_headers or {}), endpoint_token_file,
                              endpoint_token_env, endpoint_retries, endpoint_timeout_s)
    check_endpoint(options)
    return options


def check_beam(beam_runner: str, beam_options: Dict[str, str] | None = None,
               endpoint_url: str = "") -> None:
    """A Beam runner and its settings (common.beam.runners), refused before any work; a
    Beam job and an endpoint are two places for the model, so not both."""
    from tfkfp.components.common.beam.runners import check_runner

    if not beam_runner:
        return
    if endpoint_url:
        raise PredictInputError("beam_runner and endpoint_url both set: the model runs in a "
                                "Beam job or at an endpoint; set one")
    try:
        check_runner(beam_runner, dict(beam_options or {}))
    except ValueError as err:
        raise PredictInputError(str(err)) from None
