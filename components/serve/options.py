"""Serving options, checked when built, before anything starts (StepOptions: ``tfkfp serve``'s
flags read their defaults and help from these fields). It imports no TensorFlow or kserve."""

import dataclasses
from typing import ClassVar, Tuple

from tfkfp.components.common.platform.step_options import StepOptions, setting
from tfkfp.components.serve.errors import ServeOptionsError


@dataclasses.dataclass(frozen=True)
class ServeOptions(StepOptions):
    """How ``tfkfp serve`` listens, batches and refuses; a value out of range raises
    ServeOptionsError naming it when the options are built."""

    error: ClassVar = ServeOptionsError

    name: str = setting("model", "the model's name in the URLs (/v1/models/NAME:predict)")
    host: str = setting("127.0.0.1", "the address REST and gRPC listen on: 127.0.0.1 answers "
                                     "this machine only; a pod serving others needs 0.0.0.0 "
                                     "(every IPv4 interface)")
    http_port: int = setting(8080, "REST port (KServe's default 8080)")
    grpc_port: int = setting(0, "Open Inference Protocol (v2) gRPC port; 0 serves REST only")
    max_batch_size: int = setting(64, "rows per model call at most (a single larger request "
                                      "runs alone)")
    max_latency_ms: float = setting(2.0, "how long a batch may wait for requests already "
                                         "arriving to join it; a request that finds nothing "
                                         "else queued runs at once")
    max_queue: int = setting(256, "requests waiting for the model beyond which new ones get "
                                  "503")
    max_instances: int = setting(1024, "rows one request may carry")
    max_request_bytes: int = setting(8 << 20, "request body size limit (413 above it)")
    top_k: int = setting(1, "best classes (and scores) listed in each answer")
    threads: int = setting(0, "model threads (LiteRT interpreter, TensorFlow intra-op); 0: the "
                              "container's CPU limit less the event loop's one (at least 1)")
    keys: Tuple[str, ...] | None = setting(None, "columns echoed from each instance into its "
                                                 "answer (None: the schema's keys)")
    grace_seconds: int = setting(30, "how long a SIGTERM waits for requests in flight")
    precomputed: str = setting("", "batch_predict's predictions folder answering known keys "
                                   "(empty: none)")
    precomputed_key: str = setting("", "the key column a v1 instance is looked up by")
    precomputed_max_age_s: float = setting(0.0, "precomputed answers older than this many "
                                                "seconds fall through to the model (0: no "
                                                "limit)")
    precomputed_reload_s: float = setting(30.0, "how often, in seconds, a newer precomputed "
                                                "set is looked for (0: never)")
    model_repository_api: bool = setting(False, "serve KServe's model-repository API (load "
                                                "and unload the model), to clients on "
                                                "127.0.0.1 or ::1 only; off by default")
    header_timeout_s: float = setting(10.0, "seconds a client has to send a request's "
                                            "headers, from the request's first byte (from "
                                            "connecting, for the first request); past it the "
                                            "server answers 408 and disconnects")
    read_timeout_s: float = setting(60.0, "seconds a client has to send a whole request, body "
                                          "included (at least header_timeout_s); past it, 408 "
                                          "and disconnected. The default lets the largest "
                                          "body (max_request_bytes) arrive at about 140 KB/s")

    def check(self) -> None:
        """Raise ServeOptionsError naming the first option out of range (run when the
        options are built)."""
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
