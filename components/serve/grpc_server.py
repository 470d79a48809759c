"""KServe's Open Inference Protocol gRPC service, on the address ``--host`` names.

``kserve.protocol.grpc.server.GRPCServer`` listens on ``[::]`` whatever the REST server does;
this one binds ``host:port`` (refusing to start when it cannot), turns gRPC's SO_REUSEPORT
off (another process could otherwise bind the same port beside it), answers errors with
their own status codes (refusals.grpc_interceptor) and guards the repository methods
(repository.grpc_servicer). KServe's per-call log line is left out, as its REST timing is.
"""

from concurrent import futures

from tfkfp.components.serve.errors import ServeOptionsError


def listen_address(host: str, port: int) -> str:
    """``host:port`` as gRPC reads it (an IPv6 address in brackets)."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


class GrpcServer:
    """Bound by ``start``, which raises ServeOptionsError when the address cannot be bound;
    ``wait`` returns once stopped."""

    def __init__(self, host: str, port: int, servicer, max_message_bytes: int,
                 grace_seconds: float, workers: int = 4):
        self.address = listen_address(host, port)
        self.servicer, self.max_bytes = servicer, max_message_bytes
        self.grace, self.workers = grace_seconds, workers
        self._server = None

    async def start(self) -> None:
        from grpc import aio
        from kserve.protocol.grpc import grpc_predict_v2_pb2_grpc

        from tfkfp.components.serve.refusals import grpc_interceptor

        server = aio.server(futures.ThreadPoolExecutor(max_workers=self.workers),
                            interceptors=(grpc_interceptor(),),
                            options=[("grpc.max_send_message_length", self.max_bytes),
                                     ("grpc.max_receive_message_length", self.max_bytes),
                                     ("grpc.so_reuseport", 0)])
        grpc_predict_v2_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(self.servicer,
                                                                            server)
        try:
            bound = server.add_insecure_port(self.address)
        except RuntimeError as err:
            bound, reason = 0, str(err)
        else:
            reason = "no port bound"
        if not bound:
            raise ServeOptionsError(f"gRPC cannot listen on {self.address}: {reason}")
        await server.start()
        self._server = server

    async def wait(self) -> None:
        if self._server is not None:
            await self._server.wait_for_termination()

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(grace=self.grace)
