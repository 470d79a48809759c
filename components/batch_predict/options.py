"""What batch_predict refuses before reading anything (the pipelines check requests with it
before a run starts). It imports no NumPy or TensorFlow."""

import functools
from typing import Dict

from tfkfp.components.batch_predict.errors import PredictInputError, endpoint_errors
from tfkfp.components.batch_predict.merge import MAX_ERROR_FRACTION, check_error_fraction
from tfkfp.components.common.endpoint import options as _endpoint
from tfkfp.components.common.endpoint.options import PROTOCOLS, EndpointOptions

__all__ = ["PROTOCOLS", "EndpointOptions", "check_beam", "check_endpoint", "check_options",
           "endpoint_options", "vertex_base_url"]

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


# The endpoint settings are common.endpoint's (stream_predict calls endpoints too); here they
# refuse as batch_predict's own input error, with common's signatures (the pipelines' checks
# read them).
def _refusing_as_batch_predict(check):
    @functools.wraps(check)
    def wrapped(*args, **kwargs):
        with endpoint_errors():
            return check(*args, **kwargs)
    return wrapped


check_endpoint = _refusing_as_batch_predict(_endpoint.check_endpoint)
vertex_base_url = _refusing_as_batch_predict(_endpoint.vertex_base_url)
endpoint_options = _refusing_as_batch_predict(_endpoint.endpoint_options)
