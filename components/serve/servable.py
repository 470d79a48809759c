"""The model as the server sees it: the shared Predictor (common.model.predictor), its
request decoder, a batch function returning top-k (a regressor's values), and answers shaped
like batch_predict rows.

The Predictor is loaded exactly as batch_predict loads it (a SavedModel's ``serving_raw``
concrete function, or a TFLite bundle in LiteRT with its gap fills) and ranks classes as it
does (common.model.ranking), so a row gets the same answer online as in a batch. Nothing
here imports kserve.
"""

import dataclasses
from typing import Any, Dict, List, Tuple

import numpy as np

from tfkfp.components.common.data import datatypes
from tfkfp.components.common.model.predictor import ModelInputError, Predictor, load_predictor
from tfkfp.components.common.model.ranking import check_outputs, check_top_k, top_k_of
from tfkfp.components.serve.errors import RequestError, ServeOptionsError
from tfkfp.components.serve.options import ServeOptions
from tfkfp.components.serve.rows import Field, RowDecoder, Rows

# Open Inference Protocol parameters the server takes: KServe's binary tensor data extension
REQUEST_PARAMETERS = ("binary_data_output",)
OUTPUT_PARAMETERS = ("binary_data",)


@dataclasses.dataclass
class Servable:
    predictor: Predictor
    decoder: RowDecoder
    top_k: int

    def run(self, features: Dict[str, np.ndarray]) -> Tuple[np.ndarray, np.ndarray | None]:
        """The top-k class ids and scores of a batch of rows; a regressor's values and
        None."""
        outputs = np.asarray(self.predictor.predict(features))
        try:
            check_outputs(self.predictor, outputs)
        except ModelInputError as err:
            raise RuntimeError(str(err)) from err
        if self.predictor.regressor:
            return outputs.reshape(-1).astype(np.float32), None
        return top_k_of(outputs, self.top_k)

    def warm_up(self, rows: int) -> None:
        """Run one row and a full batch, so the first requests find everything allocated."""
        for count in sorted({1, rows}):
            self.run(self.decoder.finish({f.name: _blank(f, count)
                                          for f in self.decoder.fields.values()}))

    def v1_answers(self, rows: Rows, ids: np.ndarray, scores: np.ndarray | None
                   ) -> List[Dict]:
        if scores is None:  # a regressor: ids are its values
            return [{**keys, "value": float(str(v))} for keys, v in zip(rows.keys, ids)]
        labels = self.predictor.labels
        out = []
        for keys, row_ids, row_scores in zip(rows.keys, ids, scores):
            top = [float(str(s)) for s in row_scores]  # float32's shortest text
            answer = {**keys, "class": labels[row_ids[0]], "class_id": int(row_ids[0]),
                      "score": top[0]}
            if self.top_k > 1:
                answer["top_classes"] = [labels[i] for i in row_ids]
                answer["top_scores"] = top
            out.append(answer)
        return out

    def v2_outputs(self, ids: np.ndarray, scores: np.ndarray, names: List[str] | None = None
                   ) -> List[Tuple[str, str, List, List]]:
        """(name, datatype, shape, flat data) of each v2 output, or of those ``names`` in
        their order (a regressor: ids are its values and scores None)."""
        outs = self._v2_outputs(ids, scores)
        if names is None:
            return outs
        by_name = {out[0]: out for out in outs}
        return [by_name[name] for name in names]

    def requested_outputs(self, requested: List[Any] | None, parameters: Dict | None
                          ) -> List[str] | None:
        """The output names an Open Inference Protocol request asks for (None: all),
        refusing names the model does not answer and parameters the server does not take
        (KServe's binary tensor data extension: ``binary_data_output`` for the request,
        ``binary_data`` for an output)."""
        _check_parameters(parameters, REQUEST_PARAMETERS, "parameters")
        if not requested:
            return None
        names = [out.name for out in requested]
        known = [out["name"] for out in self.output_types()]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise RequestError(f"outputs: unknown output {unknown}; the model answers {known}")
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise RequestError(f"outputs: {twice} asked for more than once")
        for out in requested:
            _check_parameters(out.parameters, OUTPUT_PARAMETERS,
                              f"output {out.name!r}: parameters")
        return names

    def _v2_outputs(self, ids: np.ndarray, scores: np.ndarray
                    ) -> List[Tuple[str, str, List, List]]:
        count = len(ids)
        if scores is None:
            return [("value", "FP32", [count], ids.tolist())]
        labels = self.predictor.labels
        outs = [("class", "BYTES", [count], [labels[i] for i in ids[:, 0]]),
                ("class_id", "INT64", [count], ids[:, 0].tolist()),
                ("score", "FP32", [count], scores[:, 0].tolist())]
        if self.top_k > 1:
            outs += [("top_classes", "BYTES", [count, self.top_k],
                      [labels[i] for i in ids.reshape(-1)]),
                     ("top_scores", "FP32", [count, self.top_k], scores.reshape(-1).tolist())]
        return outs

    def input_types(self) -> List[Dict[str, Any]]:
        return [{"name": f.name, "datatype": datatypes.v2_name(f.dtype), "shape": [-1, *f.shape]}
                for f in self.decoder.fields.values()]

    def output_types(self) -> List[Dict[str, Any]]:
        example = (np.zeros(1, np.float32), None) if self.predictor.regressor else \
            (np.zeros((1, self.top_k), np.int64), np.zeros((1, self.top_k), np.float32))
        return [{"name": n, "datatype": t, "shape": [-1, *s[1:]]}
                for n, t, s, _ in self.v2_outputs(*example)]


def load_servable(model_uri: str, options: ServeOptions, threads: int) -> Servable:
    """Load the model as batch_predict does and build its request decoder."""
    predictor = load_predictor(model_uri, threads=threads)
    try:
        check_top_k(predictor, options.top_k)
    except ModelInputError as err:
        raise ServeOptionsError(str(err)) from err
    schema = predictor.schema
    fields = [Field(name, spec.dtype, tuple(spec.shape))
              for name, spec in _in_schema_order(predictor, schema)]
    keys = list(options.keys) if options.keys is not None else \
        [c.name for c in schema.keys] if schema is not None else []
    ignored = schema.names if schema is not None else []
    decoder = RowDecoder(fields, keys, ignored, _example_parser(predictor, model_uri),
                         options.max_instances, predictor.blocks, predictor.aliases)
    return Servable(predictor, decoder, options.top_k)


def _in_schema_order(predictor: Predictor, schema) -> List[Tuple[str, Any]]:
    """The model's inputs in the schema's column order (a signature sorts them by name), so
    refusals list missing columns as the table has them."""
    order = {name: i for i, name in enumerate(schema.names if schema is not None else [])}
    last = len(order)
    return sorted(predictor.inputs.items(),
                  key=lambda item: order.get(predictor.aliases.get(item[0], item[0]), last))


def _example_parser(predictor: Predictor, model_uri: str):
    """``records -> {input: array}`` with the Example parser every reader uses
    (common.data.parsing), images decoded as the reader decodes them."""
    if predictor.kind != "savedmodel" or predictor.schema is None:
        return None
    import tensorflow as tf

    from tfkfp.components.common.data.decoding import decode_column
    from tfkfp.components.common.data.parsing import example_parser
    from tfkfp.components.common.model.matching import feature_columns

    features = feature_columns(predictor, predictor.schema, model_uri)
    schema = predictor.schema
    if schema.record_layout.multi_row:  # an instance is one row: read it as a packed Example
        schema = schema.with_layout("packed")
    parse_columns = example_parser(schema, features, accept="both")

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def parse(serialized):
        parsed = parse_columns(serialized)
        return {c.name: decode_column(c, parsed[c.name]) for c in features}

    def parse_examples(records: List[bytes]) -> Dict[str, np.ndarray]:
        parsed = parse(tf.constant(records, tf.string))
        return {name: value.numpy() for name, value in parsed.items()}

    return parse_examples


def _check_parameters(parameters: Any, known: Tuple[str, ...], where: str) -> None:
    unknown = sorted(set(parameters or ()) - set(known))
    if unknown:
        raise RequestError(f"{where}: unknown parameter {unknown}; the server takes "
                           f"{list(known)} (KServe's binary tensor data extension)")


def _blank(field: Field, rows: int) -> np.ndarray:
    shape = (rows, *field.shape)
    if field.dtype == "string":
        return np.full(shape, b"", dtype=object)
    return np.zeros(shape, dtype=field.dtype)
