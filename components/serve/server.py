"""``tfkfp serve``: the KServe model server around one TfkfpModel.

KServe's own pieces (its FastAPI app, DataPlane, RESTServer, GRPCServer) are put together
here rather than through ``kserve.ModelServer.start``, which listens on every address, refuses
to start before a model is ready and parses ``sys.argv`` as its own. Added to KServe's app: a
request body limit (413), RequestError as 400 and OverloadedError as 503, and server
readiness (``/v2/health/ready``) that waits for the model; taken out: its per-request timing
middleware, whose log lines are silenced anyway. The event loop is uvloop's, as
``kserve.ModelServer`` picks by default. SIGTERM stops accepting connections, answers the
requests in flight (up to ``grace_seconds``), then exits 0.
"""

import asyncio
import contextlib
import logging
import signal
import sys
from typing import Iterator

from tfkfp.components.common.platform import uris
from tfkfp.components.common.platform.cpus import container_cpus
from tfkfp.components.serve.errors import (
    OverloadedError,
    RequestError,
    ServeOptionsError,
)
from tfkfp.components.serve.limits import BodyLimit
from tfkfp.components.serve.options import ServeOptions

log = logging.getLogger("tfkfp.serve")


@contextlib.contextmanager
def _own_argv() -> Iterator[None]:
    """Hide our command line from kserve.model_server, which parses sys.argv on import."""
    saved = sys.argv
    sys.argv = saved[:1]
    try:
        yield
    finally:
        sys.argv = saved


def serve(model_uri: str, options: ServeOptions) -> int:
    """Serve the model until SIGTERM or SIGINT; returns the exit status (1: load failed)."""
    options.check()
    if not uris.exists(model_uri):
        raise ServeOptionsError(f"model {model_uri} does not exist")
    with _own_argv():
        from kserve import logging as kserve_logging
        from kserve import model_server

        from tfkfp.components.serve.model import TfkfpModel
    _quiet_logs(kserve_logging)
    threads = options.threads or model_threads(container_cpus())
    precomputed = None
    if options.precomputed:  # loaded before listening: a broken set stops the start
        from tfkfp.components.serve.precomputed import Precomputed

        precomputed = Precomputed(options.precomputed, options.precomputed_key, options.top_k,
                                  options.precomputed_max_age_s, options.precomputed_reload_s)
    loop = new_event_loop()
    model = TfkfpModel(model_uri, options, threads, on_failure=lambda: loop.call_soon_threadsafe(
        setattr, rest._server, "should_exit", True),  # uvicorn's own exit flag
        precomputed=precomputed)
    rest, grpc = _servers(model, options, model_server.app)
    log.info("serving %s as %r on http://%s:%d (%d model threads, batches of at most %d rows)",
             model_uri, options.name, options.host, options.http_port, threads,
             options.max_batch_size)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)  # uvicorn handles them while it serves
    try:
        loop.run_until_complete(_run(model, rest, grpc))
    finally:
        loop.close()
    return 1 if model.failure is not None else 0


def model_threads(cpus: int) -> int:
    """The model's threads by default: the container's CPUs less the one the event loop
    keeps busy under load (at least one). On 2 CPUs a second model thread only takes the
    loop's core: measured on the 64-column MLP, one intra-op thread made a 16-row call
    0.63 -> 0.42 ms and halved its CPU time."""
    return max(1, cpus - 1)


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop (KServe's default; about 10% more requests per second than
    asyncio's on the same app), asyncio's where uvloop is not installed."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _quiet_logs(kserve_logging) -> None:
    """KServe's logging, less its per-request lines (two timing lines and an access line
    per request cost throughput; /metrics has the latencies)."""
    import warnings

    kserve_logging.configure_logging()
    for name in ("kserve.trace", "uvicorn.access"):
        logging.getLogger(name).setLevel(logging.WARNING)
    logging.getLogger("tfkfp.serve").setLevel(logging.INFO)
    warnings.filterwarnings("ignore", message=".*ORJSONResponse is deprecated")


def _servers(model, options: ServeOptions, app):
    from kserve.constants.constants import PredictorProtocol
    from kserve.errors import InvalidInput
    from kserve.model_repository import ModelRepository
    from kserve.protocol.dataplane import DataPlane
    from kserve.protocol.grpc.server import GRPCServer
    from kserve.protocol.model_repository_extension import ModelRepositoryExtension
    from kserve.protocol.rest.server import RESTServer

    V1 = PredictorProtocol.REST_V1.value

    class _DataPlane(DataPlane):
        async def ready(self) -> bool:  # the server is ready when its model is
            return all(m.ready for m in self.model_registry.get_models().values())

        def decode(self, body, headers, protocol_version=V1, model_name=None):
            try:
                return super().decode(body, headers, protocol_version, model_name)
            except InvalidInput:
                parsed = _json_with_nan(body) if protocol_version == V1 else None
                if parsed is None:
                    raise
                return super().decode(parsed, headers, protocol_version, model_name)

    registry = ModelRepository()
    registry.update(model)
    dataplane = _DataPlane(model_registry=registry)
    extension = ModelRepositoryExtension(model_registry=registry)
    _extend_app(app, options.max_request_bytes)

    class _RESTServer(RESTServer):
        def _add_middlewares(self, app):
            super()._add_middlewares(app)
            _drop_timing(app)

        def _add_exception_handlers(self, app):
            super()._add_exception_handlers(app)
            _quiet_not_ready(app)

    rest = _RESTServer("kserve.model_server:app", dataplane, extension, options.http_port,
                       grace_period=options.grace_seconds, event_loop="asyncio")
    rest.config.host = options.host
    grpc = None
    if options.grpc_port:
        grpc = GRPCServer(options.grpc_port, dataplane, extension,
                          kwargs={"grpc_max_send_message_length": options.max_request_bytes,
                                  "grpc_max_receive_message_length": options.max_request_bytes},
                          grace_period=options.grace_seconds)
    return rest, grpc


def _json_with_nan(body):
    """A v1 body orjson refused, read as TF Serving reads JSON, where ``NaN`` (a gap) and
    ``Infinity`` (then refused by the decoder, naming its instance and column) are tokens;
    None where it is not JSON even so. Only on the failure path."""
    import json

    try:
        return json.loads(body) if isinstance(body, (bytes, str)) else None
    except ValueError:
        return None


def _drop_timing(app) -> None:
    """KServe's middlewares less its TimingMiddleware: its only output is two kserve.trace
    lines per request, which _quiet_logs silences, yet it matches the request's route a second
    time, formats both lines and calls getrusage twice, on the event loop, for every request
    (about an eighth of the no-op server's time per request)."""
    from timing_asgi import TimingMiddleware

    app.user_middleware[:] = [m for m in app.user_middleware if m.cls is not TimingMiddleware]


def _quiet_not_ready(app) -> None:
    """503 for "not ready yet" without KServe's traceback in the log: readiness probes ask
    every few seconds while the model loads, and a traceback per probe buries the log."""
    from fastapi.responses import ORJSONResponse
    from kserve.errors import ModelNotReady, ServerNotReady

    async def not_ready(_, err: Exception):
        return ORJSONResponse({"error": str(err)}, status_code=503)

    app.add_exception_handler(ServerNotReady, not_ready)
    app.add_exception_handler(ModelNotReady, not_ready)


def _extend_app(app, max_bytes: int) -> None:
    from fastapi.responses import ORJSONResponse

    async def bad_request(_, err: RequestError):
        return ORJSONResponse({"error": str(err)}, status_code=400)

    async def overloaded(_, err: OverloadedError):
        return ORJSONResponse({"error": str(err)}, status_code=503,
                              headers={"Retry-After": "1"})

    app.add_exception_handler(RequestError, bad_request)
    app.add_exception_handler(OverloadedError, overloaded)
    app.add_middleware(BodyLimit, limit=max_bytes)


async def _run(model, rest, grpc) -> None:
    model.load()
    tasks = [asyncio.ensure_future(rest.start())]
    if grpc is not None:
        tasks.append(asyncio.ensure_future(grpc.start(4)))
    await tasks[0]  # returns after SIGTERM/SIGINT, once requests in flight are answered
    if grpc is not None:
        await grpc.stop()
    model.stop()
    for task in tasks[1:]:
        task.cancel()
