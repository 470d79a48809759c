"""Serving options, checked before anything starts."""

import dataclasses
from typing import Tuple

from tfkfp.components.serve.errors import ServeOptionsError


@dataclasses.dataclass(frozen=True)
class ServeOptions:
    """How ``tfkfp serve`` listens, batches and refuses.

    Attributes:
        name: the model's name in the URLs (``/v1/models/NAME:predict``).
        host: the address REST and gRPC listen on: ``127.0.0.1`` (the default) answers this
            machine only; a pod serving others needs ``0.0.0.0`` (every IPv4 interface).
        http_port: REST port (KServe's default 8080).
        grpc_port: Open Inference Protocol gRPC port; 0 serves REST only.
        max_batch_size: rows per model call at most (a single larger request runs alone).
        max_latency_ms: how long a batch may wait for requests already arriving to join it;
            a request that finds nothing else queued runs at once.
        max_queue: requests waiting for the model beyond which new ones get 503.
        max_instances: rows one request may carry.
        max_request_bytes: request body size limit (413 above it).
        top_k: best classes (and scores) listed in each answer.
        threads: model threads (LiteRT interpreter, TensorFlow intra-op); 0: the container's
            CPU limit less the event loop's one (at least 1).
        keys: columns echoed from each instance into its answer (None: the schema's keys).
        grace_seconds: how long a SIGTERM waits for requests in flight.
        precomputed: batch_predict's predictions folder answering known keys ("": none).
        precomputed_key: the key column a v1 instance is looked up by.
        precomputed_max_age_s: older answers fall through to the model (0: no limit).
        precomputed_reload_s: how often a newer set is looked for (0: never).
        model_repository_api: serve KServe's model-repository API (load and unload the
            model), to clients on 127.0.0.1 or ::1 only; off by default.
        header_timeout_s: seconds a client has to send a request's headers, from the
            request's first byte (from connecting, for the first request); past it the
            server answers 408 and disconnects.
        read_timeout_s: seconds a client has to send a whole request, body included (at
            least header_timeout_s); past it, 408 and disconnected. The default lets the
            largest body (max_request_bytes) arrive at about 140 KB/s.
    """

    name: str = "model"
    host: str = "127.0.0.1"
    http_port: int = 8080
    grpc_port: int = 0
    max_batch_size: int = 64
    max_latency_ms: float = 2.0
    max_queue: int = 256
    max_instances: int = 1024
    max_request_bytes: int = 8 << 20
    top_k: int = 1
    threads: int = 0
    keys: Tuple[str, ...] | None = None
    grace_seconds: int = 30
    precomputed: str = ""
    precomputed_key: str = ""
    precomputed_max_age_s: float = 0.0
    precomputed_reload_s: float = 30.0
    model_repository_api: bool = False
    header_timeout_s: float = 10.0
    read_timeout_s: float = 60.0

    def check(self) -> "ServeOptions":
        """Raise ServeOptionsError naming the first option out of range."""
        if not self.name or "/" in self.name or ":" in self.name:
            raise ServeOptionsError(f"model name {self.name!r}: expected a non-empty name "
                                    "without '/' or ':' (it is part of the URLs)")
        if not self.host.strip():
            raise ServeOptionsError("host is empty: expected an address to listen on, e.g. "
                                    "127.0.0.1 (this machine) or 0.0.0.0 (every interface)")
        positive = ("max_batch_size", "max_queue", "max_instances", "max_request_bytes",
                    "top_k")
        for field in positive:
            if getattr(self, field) < 1:
                raise ServeOptionsError(f"{field} {getattr(self, field)} is below 1")
        for field in ("http_port", "grpc_port"):
            if not 0 <= getattr(self, field) <= 65535:
                raise ServeOptionsError(f"{field} {getattr(self, field)} is not a port "
                                        "(0-65535)")
        if self.max_latency_ms < 0 or self.threads < 0 or self.grace_seconds < 0:
            raise ServeOptionsError("max_latency_ms, threads and grace_seconds must be >= 0; "
                                    f"found {self.max_latency_ms}, {self.threads}, "
                                    f"{self.grace_seconds}")
        if bool(self.precomputed) != bool(self.precomputed_key):
            raise ServeOptionsError("precomputed and precomputed_key go together: the "
                                    "predictions folder and the key column to look up")
        if self.precomputed_max_age_s < 0 or self.precomputed_reload_s < 0:
            raise ServeOptionsError("precomputed_max_age_s and precomputed_reload_s must be "
                                    f">= 0; found {self.precomputed_max_age_s}, "
                                    f"{self.precomputed_reload_s}")
        if not 0 < self.header_timeout_s <= self.read_timeout_s:
            raise ServeOptionsError("header_timeout_s and read_timeout_s: expected 0 < "
                                    "header_timeout_s <= read_timeout_s; found "
                                    f"{self.header_timeout_s}, {self.read_timeout_s}")
        return self
