"""The kserve.Model: loads in the background, answers v1 and v2 through the batcher.

The server starts listening at once; the model is loaded and warmed up in a thread, and only
then is it ready (``/v1/models/NAME``, ``/v2/models/NAME/ready`` and ``/v2/health/ready``
answer 503 before). For tests, ``TFKFP_SERVE_LOAD_GATE`` and ``TFKFP_SERVE_CALL_GATE`` name
files that loading, and each model call, wait for: a test can then see the server before
its model is ready, or requests in flight when it sends SIGTERM, without timing anything.
"""

import logging
import os
import threading
import time
import uuid
from typing import Callable, Dict, List

from kserve import Model
from kserve.protocol.infer_type import InferOutput, InferRequest, InferResponse

from tfkfp.components.common.model.version import answered_version
from tfkfp.components.serve import metrics
from tfkfp.components.serve.batcher import Batcher
from tfkfp.components.serve.errors import OverloadedError, RequestError
from tfkfp.components.serve.heap import freeze_heap
from tfkfp.components.serve.options import ServeOptions
from tfkfp.components.serve.precomputed import Precomputed
from tfkfp.components.serve.servable import Servable, load_servable
from tfkfp.components.serve.tfserving import predict_request

log = logging.getLogger("tfkfp.serve")
LOAD_GATE, CALL_GATE = "TFKFP_SERVE_LOAD_GATE", "TFKFP_SERVE_CALL_GATE"


class TfkfpModel(Model):
    """A tfkfp SavedModel or TFLite bundle behind KServe's v1 and v2 protocols.

    Args:
        model_uri: what ``load_predictor`` loads.
        options: checked serving options.
        threads: model threads (the container's CPU limit unless set).
        on_failure: called (from the loading thread) when loading fails.
        precomputed: answers for known keys (v1 instances), or None.
    """

    def __init__(self, model_uri: str, options: ServeOptions, threads: int,
                 on_failure: Callable[[], None] = lambda: None,
                 precomputed: Precomputed | None = None):
        super().__init__(options.name)
        self.precomputed = precomputed
        self.model_uri, self.options, self.threads = model_uri, options, threads
        self.on_failure = on_failure
        self.servable: Servable | None = None
        self.version: str | None = None  # Open Inference Protocol answers' model_version
        self.batcher: Batcher | None = None
        self.failure: BaseException | None = None
        self._loader: threading.Thread | None = None
        self.ready = False
        # each request touches these: labelled once, not per request
        self._in_flight = metrics.IN_FLIGHT.labels(self.name)
        self._refused = metrics.REFUSED.labels(self.name)
        self._shed = metrics.SHED.labels(self.name)
        self._precomputed = metrics.PRECOMPUTED.labels(self.name)

    def load(self) -> bool:
        """Start loading in the background (once); True when ready."""
        if self._loader is None:
            self._loader = threading.Thread(target=self._load, name="tfkfp-load", daemon=True)
            self._loader.start()
        return self.ready

    def _load(self) -> None:
        try:
            _wait_for_gate(LOAD_GATE)
            started = time.monotonic()
            _size_tensorflow_threads(self.threads)
            servable = load_servable(self.model_uri, self.options, self.threads)
            servable.warm_up(self.options.max_batch_size)
            self.version = answered_version(self.model_uri)
            freeze_heap()  # the model and TensorFlow, out of the collector's reach
            self.servable = servable
            self.batcher = Batcher(self._run, self.options.max_batch_size,
                                   self.options.max_latency_ms, self.options.max_queue,
                                   metrics.observer(self.name))
            metrics.WAITING.labels(self.name).set_function(lambda: self.batcher.waiting)
            self.ready = True
            predictor = servable.predictor
            answers = "a value" if predictor.regressor else f"{len(predictor.labels)} classes"
            log.info("model %s (%s, %d inputs, %s) loaded and warmed up in %.1fs; ready",
                     self.name, predictor.kind, len(predictor.inputs), answers,
                     time.monotonic() - started)
        except Exception as err:  # noqa: BLE001 - reported, then the server stops
            self.failure = err
            log.error("tfkfp serve: cannot load %s: %s", self.model_uri, err)
            self.on_failure()

    def _run(self, features):
        _wait_for_gate(CALL_GATE)
        return self.servable.run(features)

    async def predict(self, payload, headers: Dict[str, str] | None = None):
        """Decode, queue for the batcher, answer in the request's protocol."""
        in_flight = self._in_flight
        in_flight.inc()
        try:
            if not isinstance(payload, InferRequest):  # v1: KServe's and TF Serving's REST
                request = self._decoded(predict_request, payload, self.servable.decoder)
                return request.answer(await self._v1_answers(request.body))
            rows = self._decoded(self.servable.decoder.v2, payload.inputs)
            names = self._decoded(self.servable.requested_outputs, payload.request_outputs,
                                  payload.parameters)
            ids, scores = await self._model(rows)
            outputs = [InferOutput(name, shape, dtype, data) for name, dtype, shape, data
                       in self.servable.v2_outputs(ids, scores, names)]
            return InferResponse(payload.id or str(uuid.uuid4()), self.name, outputs,
                                 model_version=self.version,
                                 use_binary_outputs=payload.use_binary_outputs,
                                 requested_outputs=payload.request_outputs)
        finally:
            in_flight.dec()

    async def _v1_answers(self, payload) -> List[Dict]:
        """Answers in request order: known keys from the precomputed set, the rest (or all,
        without one) from the model."""
        instances = payload.get("instances") if isinstance(payload, dict) else None
        if self.precomputed is None or not isinstance(instances, list) or not instances:
            rows = self._decoded(self.servable.decoder.v1, payload)
            return self.servable.v1_answers(rows, *await self._model(rows))
        self._decoded(self.servable.decoder.check_count, len(instances), '"instances"')
        answers = [self.precomputed.answer(instance) for instance in instances]
        todo = [i for i, answer in enumerate(answers) if answer is None]
        self._precomputed.inc(len(instances) - len(todo))
        if todo:
            try:
                rows = self.servable.decoder.v1({"instances": [instances[i] for i in todo]})
            except RequestError:  # decode the whole request: the error names its own index
                self._decoded(self.servable.decoder.v1, payload)
                raise
            model_answers = self.servable.v1_answers(rows, *await self._model(rows))
            for i, answer in zip(todo, model_answers):
                answers[i] = answer
        return answers

    def _decoded(self, decode, *args):
        try:
            return decode(*args)
        except RequestError:
            self._refused.inc()
            raise

    async def _model(self, rows):
        try:
            return await self.batcher.predict(rows.features, rows.count)
        except OverloadedError:
            self._shed.inc()
            raise

    def get_input_types(self) -> List[Dict]:
        return self.servable.input_types() if self.servable else []

    def get_output_types(self) -> List[Dict]:
        return self.servable.output_types() if self.servable else []

    def stop(self) -> None:
        self.ready = False
        if self.precomputed is not None:
            self.precomputed.stop()
        if self.batcher is not None:
            self.batcher.close()


def _wait_for_gate(variable: str) -> None:
    gate = os.environ.get(variable)
    while gate and not os.path.exists(gate):
        time.sleep(0.02)


def _size_tensorflow_threads(threads: int) -> None:
    """TensorFlow's intra-op pool sized to the container's CPUs, not the node's cores."""
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(min(threads, 2))
    except RuntimeError as err:  # TensorFlow already started: keep its pools
        log.info("TensorFlow threads left as they are: %s", err)
