"""batch_predict's settings (PredictOptions) and its endpoint's, checked before anything is
read: the pipelines check requests with them before a run starts. It imports no NumPy or
TensorFlow."""

import dataclasses
import functools
from typing import ClassVar, Dict, List

from tfkfp.components.batch_predict.errors import PredictInputError, endpoint_errors
from tfkfp.components.batch_predict.merge import MAX_ERROR_FRACTION, check_error_fraction
from tfkfp.components.common.endpoint import options as _endpoint
from tfkfp.components.common.endpoint.options import PROTOCOLS, EndpointOptions
from tfkfp.components.common.platform.step_options import StepOptions, setting

__all__ = ["PROTOCOLS", "EndpointOptions", "PredictOptions", "check_beam", "check_endpoint",
           "endpoint_options", "vertex_base_url"]

OUTPUT_FORMATS = ("jsonl", "csv", "tfrecord")


@dataclasses.dataclass(frozen=True)
class PredictOptions(StepOptions):
    """How batch_predict predicts: every setting of the step but where the model runs (an
    endpoint's settings are common.endpoint's EndpointOptions), checked when built (what the
    pipelines check a request with before a run starts, and what the core takes)."""

    error: ClassVar = PredictInputError

    output_format: str = setting("jsonl", "prediction file format", OUTPUT_FORMATS)
    keys: List[str] = setting([], "passthrough columns carried into the predictions; empty: "
                                  "the schema's keys")
    top_k: int = setting(1, "how many best classes and scores each row lists")
    predict_batch_size: int = setting(4096, "records per model call")
    split: str = setting("all", "all, or one split of a Dataset directory (train, eval)")
    schema_uri: str = setting("", "schema.json for TFRecord patterns or text files (default: "
                                  "beside the data, else the model's own)")
    input_format: str = setting("auto", "auto (from the extensions), tfrecord, csv or jsonl")
    file_group: int = setting(0, "which group of the input files to predict (for a fan-out)")
    file_groups: int = setting(1, "how many groups the input files are dealt into")
    labels_uri: str = setting("", "class names (one per line) for a bare .tflite file")
    max_error_fraction: float = setting(MAX_ERROR_FRACTION, "largest share of rows that may "
                                                            "be errors, in [0, 1]")
    threads: int = setting(0, "LiteRT or TensorFlow threads (0: one per CPU)")
    beam_runner: str = setting("", "empty: predict in the step; else the Apache Beam runner "
                                   "(common.beam.runners)")
    beam_options: Dict[str, str] = setting({}, "the Beam runner's settings")

    def check(self) -> None:
        check_error_fraction(self.max_error_fraction)
        if self.top_k < 1:
            raise PredictInputError(f"top_k {self.top_k} is below 1")
        if self.predict_batch_size < 1:
            raise PredictInputError(f"predict_batch_size {self.predict_batch_size} is below 1")
        check_beam(self.beam_runner, self.beam_options)


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
