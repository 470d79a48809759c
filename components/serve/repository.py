"""The served models and the model-repository API (load and unload, KServe's version of
Triton's Model Repository Extension: REST ``/v2/repository/models/NAME/load|unload`` and the
gRPC ``RepositoryModelLoad|Unload``).

KServe registers that API for anyone who can reach the port: a client without any credential
could unload the model. Here it is off by default (REST 404, from routes of ours that shadow
KServe's; gRPC UNIMPLEMENTED); with ``model_repository_api`` it answers only clients on
127.0.0.1 or ::1 (KServe's agent in the same pod), 403 or PERMISSION_DENIED to others. The
rest of 127.0.0.0/8 is not trusted: Istio's sidecar forwards traffic from outside the pod
from 127.0.0.6.
"""

import asyncio
import ipaddress
from typing import Callable, Dict

from kserve.errors import ModelNotFound
from kserve.model_repository import ModelRepository

PREFIX = "/v2/repository"
LOCAL = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))
OFF = ("the model-repository API is off (tfkfp serve --model-repository-api turns it on, "
       "for clients on this machine only)")


class ServedRepository(ModelRepository):
    """The models this server serves, each built by its builder. A model unloaded through
    the API is not ready (nor is the server) until loaded again: ``load`` builds it anew and
    returns once it is ready, raising if it failed."""

    def __init__(self, builders: Dict[str, Callable]):
        super().__init__()
        self.builders = builders
        self._lock = asyncio.Lock()

    def all_ready(self) -> bool:
        """Every served model is loaded and ready."""
        return all(name in self.models and self.models[name].ready for name in self.builders)

    async def load(self, name: str) -> bool:
        if name not in self.builders:
            raise ModelNotFound(name)
        async with self._lock:
            model = self.get_model(name)
            if model is None or getattr(model, "failure", None) is not None:
                model = await asyncio.to_thread(self.builders[name])
                self.update(model)
                model.load()
            while not model.ready and getattr(model, "failure", None) is None:
                await asyncio.sleep(0.05)
        if model.failure is not None:
            raise RuntimeError(f"model {name} could not be loaded: {model.failure}")
        return True

    async def unload_served(self, name: str) -> None:
        try:
            self.unload(name)
        except KeyError:
            raise ModelNotFound(name) from None


def is_local(host: str | None) -> bool:
    """Whether a client address is 127.0.0.1 or ::1 (an IPv4-mapped 127.0.0.1 too)."""
    try:
        address = ipaddress.ip_address((host or "").strip("[]"))
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address) in LOCAL


def grpc_peer_host(peer: str) -> str:
    """The address of a gRPC peer (``ipv4:127.0.0.1:5000``, ``ipv6:[::1]:5000``)."""
    kind, _, rest = (peer or "").partition(":")
    if kind not in ("ipv4", "ipv6"):
        return ""
    return rest.rsplit(":", 1)[0].strip("[]")


def _not_local(host: str) -> str:
    return (f"the model-repository API answers clients on 127.0.0.1 or ::1 only; this one is "
            f"{host or 'unknown'}")


def install_rest(app, repository: ServedRepository, enabled: bool) -> None:
    """Routes that shadow KServe's repository routes (call it before KServe registers them:
    the first route that matches answers): with ``enabled``, load and unload for local
    clients; any other path under /v2/repository, or every one when off, answers 404."""
    from fastapi import Request
    from fastapi.responses import ORJSONResponse

    def refusal(request: Request):
        host = request.client.host if request.client else ""
        return None if is_local(host) else ORJSONResponse({"error": _not_local(host)},
                                                          status_code=403)

    async def load(model_name: str, request: Request):
        if (refused := refusal(request)) is not None:
            return refused
        await repository.load(model_name)
        return {"name": model_name, "load": True}

    async def unload(model_name: str, request: Request):
        if (refused := refusal(request)) is not None:
            return refused
        await repository.unload_served(model_name)
        return {"name": model_name, "unload": True}

    async def off(rest: str):
        return ORJSONResponse({"error": OFF if not enabled else "not found"}, status_code=404)

    if enabled:
        app.add_api_route(PREFIX + "/models/{model_name}/load", load, methods=["POST"])
        app.add_api_route(PREFIX + "/models/{model_name}/unload", unload, methods=["POST"])
    app.add_api_route(PREFIX + "{rest:path}", off, include_in_schema=False,
                      methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])


def grpc_servicer(dataplane, repository: ServedRepository, enabled: bool):
    """KServe's gRPC servicer with the repository methods off, or for local peers only."""
    from grpc_interceptor.exceptions import PermissionDenied, Unimplemented
    from kserve.protocol.grpc import grpc_predict_v2_pb2 as pb
    from kserve.protocol.grpc.servicer import InferenceServicer

    def check(context) -> None:
        if not enabled:
            raise Unimplemented(OFF)
        host = grpc_peer_host(context.peer())
        if not is_local(host):
            raise PermissionDenied(_not_local(host))

    class Servicer(InferenceServicer):
        async def RepositoryModelLoad(self, request, context):
            check(context)
            await repository.load(request.model_name)
            return pb.RepositoryModelLoadResponse(model_name=request.model_name,
                                                  isLoaded=True)

        async def RepositoryModelUnload(self, request, context):
            check(context)
            await repository.unload_served(request.model_name)
            return pb.RepositoryModelUnloadResponse(model_name=request.model_name,
                                                    isUnloaded=True)

    return Servicer(dataplane, None)
