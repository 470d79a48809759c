"""Prometheus metrics beside KServe's own (request_*_seconds), on the same /metrics page."""

from prometheus_client import Counter, Gauge, Histogram

_LABELS = ["model_name"]
_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)

BATCH_ROWS = Histogram("tfkfp_batch_rows", "rows per model call", _LABELS, buckets=_SIZES)
BATCH_REQUESTS = Histogram("tfkfp_batch_requests", "requests per model call", _LABELS,
                           buckets=_SIZES)
MODEL_SECONDS = Histogram("tfkfp_model_call_seconds", "seconds per model call", _LABELS)
WAITING = Gauge("tfkfp_requests_waiting", "requests queued for the model", _LABELS)
IN_FLIGHT = Gauge("tfkfp_requests_in_flight", "predict requests being handled", _LABELS)
SHED = Counter("tfkfp_requests_shed_total", "requests refused with 503 (queue full)",
               _LABELS)
PRECOMPUTED = Counter("tfkfp_precomputed_answers_total",
                      "rows answered from the precomputed set", _LABELS)
REFUSED = Counter("tfkfp_requests_refused_total", "requests refused with 400 (bad input)",
                  _LABELS)


def observer(name: str):
    """``observe(rows, requests, seconds)`` recording one model call of model ``name``."""
    rows, requests, seconds = (BATCH_ROWS.labels(name), BATCH_REQUESTS.labels(name),
                               MODEL_SECONDS.labels(name))

    def observe(count: int, batch: int, took: float) -> None:
        rows.observe(count)
        requests.observe(batch)
        seconds.observe(took)

    return observe
