"""``tfkfp serve``: the KServe model server around one TfkfpModel.

KServe's own pieces (its FastAPI app, DataPlane, RESTServer, gRPC servicer) are put together
here rather than through ``kserve.ModelServer.start``, which listens on every address, refuses
to start before a model is ready and parses ``sys.argv`` as its own. REST and gRPC listen on
``options.host`` alike (grpc_server.py). Added to KServe's app: a request gate (413 over the
body limit, 415 for a body that is not JSON, a log line per refusal: limits.py), errors
answered by name without server internals (refusals.py), and readiness that is false while
a served model is not loaded; taken out: the model-repository API unless asked for, then for
local clients only (repository.py), and KServe's per-request timing middleware, whose log
lines are silenced anyway. The REST port is bound before the model loads, and uvicorn's
HTTP protocol gets header and body deadlines (listener.py). The event loop is uvloop's, as
``kserve.ModelServer`` picks by default. SIGTERM stops accepting connections, answers the
requests in flight (up to ``grace_seconds``), then exits 0.
"""

import asyncio
import contextlib
import logging
import signal
import sys
from typing import Callable, Iterator

from tfkfp.components.common.platform import uris
from tfkfp.components.common.platform.cpus import container_cpus
from tfkfp.components.serve import tfserving
from tfkfp.components.serve.errors import ServeOptionsError, too_deep
from tfkfp.components.serve.limits import RequestGate
from tfkfp.components.serve.listener import bind, timed_protocol
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
    """Serve the model until SIGTERM or SIGINT; returns the exit status (1: load failed).
    The REST port is taken first: a port in use stops the start before the model loads."""
    if not uris.exists(model_uri):
        raise ServeOptionsError(f"model {model_uri} does not exist")
    listener = bind(options.host, options.http_port)
    try:
        with _own_argv():
            from tfkfp.components.serve.model import TfkfpModel
        threads = options.threads or model_threads(container_cpus())
        precomputed = _precomputed(options)  # loaded before listening: a broken set stops it
        model = TfkfpModel(model_uri, options, threads, precomputed=precomputed)
        log.info("serving %s with %d model threads", model_uri, threads)
        serve_model(model, options, rebuild=lambda: TfkfpModel(
            model_uri, options, threads, precomputed=_precomputed(options)), listener=listener)
    finally:
        listener.close()
    return 1 if model.failure is not None else 0


def serve_model(model, options: ServeOptions, rebuild: Callable, listener=None) -> None:
    """Serve a kserve.Model on this module's stack until SIGTERM or SIGINT (the benchmarks'
    anchors use it too, so that only the model differs).

    Args:
        model: the served model; its ``on_failure`` (where it has one) stops the server.
        options: checked serving options (name, addresses, limits, timeouts).
        rebuild: builds the model anew (the model-repository API's load).
        listener: the REST socket, bound (``listener.bind``); None binds it here.
    """
    if listener is None:
        with bind(options.host, options.http_port) as own:
            serve_model(model, options, rebuild, own)
        return
    with _own_argv():
        from kserve import logging as kserve_logging
        from kserve import model_server
    _quiet_logs(kserve_logging)
    loop = new_event_loop()
    rest, grpc = _servers(model, options, model_server.app, rebuild)
    if hasattr(model, "on_failure"):  # uvicorn's own exit flag, set from the loading thread
        model.on_failure = lambda: loop.call_soon_threadsafe(
            setattr, rest._server, "should_exit", True)
    log.info("serving %r on http://%s:%d%s (batches of at most %d rows; model-repository "
             "API %s)", options.name, options.host, options.http_port,
             f" and gRPC {grpc.address}" if grpc else "", options.max_batch_size,
             "on, for local clients" if options.model_repository_api else "off")
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)  # uvicorn handles them while it serves
    try:
        loop.run_until_complete(_run(model, rest, grpc, listener))
    finally:
        loop.close()


def _precomputed(options: ServeOptions):
    if not options.precomputed:
        return None
    from tfkfp.components.serve.precomputed import Precomputed

    return Precomputed(options.precomputed, options.precomputed_key, options.top_k,
                       options.precomputed_max_age_s, options.precomputed_reload_s)


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


def _servers(model, options: ServeOptions, app, rebuild: Callable):
    from kserve.constants.constants import PredictorProtocol
    from kserve.errors import InvalidInput
    from kserve.protocol.dataplane import DataPlane
    from kserve.protocol.rest.server import RESTServer
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    from tfkfp.components.serve import repository as repo
    from tfkfp.components.serve.grpc_server import GrpcServer
    from tfkfp.components.serve.refusals import add_rest_handlers

    V1 = PredictorProtocol.REST_V1.value
    api = options.model_repository_api

    class _DataPlane(DataPlane):
        async def ready(self) -> bool:  # the server is ready when every served model is
            return self.model_registry.all_ready()

        async def model_ready(self, model_name: str, disable_predictor_health_check=False):
            if model_name in registry.builders and registry.get_model(model_name) is None:
                return False  # served, but unloaded through the repository API
            return await super().model_ready(model_name, disable_predictor_health_check)

        def metadata(self):  # lists the repository extension only where it is served
            described = super().metadata()
            return described if api else {**described, "extensions": []}

        def decode(self, body, headers, protocol_version=V1, model_name=None):
            try:
                return super().decode(body, headers, protocol_version, model_name)
            except InvalidInput:
                parsed = _json_with_nan(body) if protocol_version == V1 else None
                if parsed is None:
                    raise
                return super().decode(parsed, headers, protocol_version, model_name)

    registry = repo.ServedRepository({options.name: rebuild})
    registry.update(model)
    dataplane = _DataPlane(model_registry=registry)
    _extend_app(app, options.max_request_bytes)
    tfserving.add_routes(app, dataplane)  # TF Serving's status, metadata, /versions/N

    class _RESTServer(RESTServer):
        def _add_middlewares(self, app):
            super()._add_middlewares(app)
            _drop_timing(app)

        def _register_endpoints(self, app):
            repo.install_rest(app, registry, api)  # first: its routes shadow KServe's
            super()._register_endpoints(app)

        def _add_exception_handlers(self, app):
            super()._add_exception_handlers(app)
            add_rest_handlers(app)

        async def start(self, sockets=None):  # KServe's binds a socket of its own
            self.create_application()
            await self._server.serve(sockets=sockets)

    rest = _RESTServer("kserve.model_server:app", dataplane, None, options.http_port,
                       grace_period=options.grace_seconds, event_loop="asyncio")
    rest.config.host = options.host  # KServe's RESTServer says 0.0.0.0
    rest.config.http = timed_protocol(AutoHTTPProtocol, options.header_timeout_s,
                                      options.read_timeout_s)
    grpc = None
    if options.grpc_port:
        grpc = GrpcServer(options.host, options.grpc_port,
                          repo.grpc_servicer(dataplane, registry, api),
                          options.max_request_bytes, options.grace_seconds)
    return rest, grpc


def _json_with_nan(body):
    """A v1 body orjson refused, read as TF Serving reads JSON, where ``NaN`` (a gap) and
    ``Infinity`` (then refused by the decoder, naming its instance and column) are tokens;
    None where it is not JSON even so; RequestError where it is nested too deeply to read.
    Only on the failure path."""
    import json

    try:
        return json.loads(body) if isinstance(body, (bytes, str)) else None
    except RecursionError:
        raise too_deep() from None
    except ValueError:
        return None


def _drop_timing(app) -> None:
    """KServe's middlewares less its TimingMiddleware: its only output is two kserve.trace
    lines per request, which _quiet_logs silences, yet it matches the request's route a second
    time, formats both lines and calls getrusage twice, on the event loop, for every request
    (about an eighth of the no-op server's time per request)."""
    from timing_asgi import TimingMiddleware

    app.user_middleware[:] = [m for m in app.user_middleware if m.cls is not TimingMiddleware]


def _extend_app(app, max_bytes: int) -> None:
    """The request gate in front of the app; the error answers are added with KServe's
    (refusals.add_rest_handlers), after them, so that ours win."""
    app.add_middleware(RequestGate, limit=max_bytes)


async def _run(model, rest, grpc, listener) -> None:
    if grpc is not None:  # bound first: an address it cannot bind stops the start
        await grpc.start()
    model.load()
    tasks = [asyncio.ensure_future(rest.start([listener]))]
    if grpc is not None:
        tasks.append(asyncio.ensure_future(grpc.wait()))
    await tasks[0]  # returns after SIGTERM/SIGINT, once requests in flight are answered
    if grpc is not None:
        await grpc.stop()
    served = rest.dataplane.model_registry.get_models().values()
    for each in {id(m): m for m in [model, *served]}.values():  # and any loaded again
        each.stop()
    for task in tasks[1:]:
        task.cancel()
