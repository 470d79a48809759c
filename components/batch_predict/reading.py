"""How batch_predict reads its input files: ``make_reader`` turns an input plan into a
stream of each file's chunks (TFRecords or CSV / JSON Lines, with per-record errors), for
the step and for the Beam job alike; ``parsed_blocks`` says which of the model's input
blocks a TFRecord parse hands over as one matrix.
"""

from typing import Dict, List, Tuple

from tfkfp.components.batch_predict import sources, text
from tfkfp.components.common.data.packing import scalar_of
from tfkfp.components.common.data.schema import Column
from tfkfp.components.common.model.predictor import Predictor


def parsed_blocks(predictor: Predictor, features: List[Column]) -> Dict[str, Tuple[str, ...]]:
    """The model's blocks of inputs whose columns are all scalar columns of the block's
    dtype parsed here: TFRecords hand each over as one matrix (the others: by column)."""
    return {dtype: names for dtype, names in predictor.blocks.items()
            if set(names) <= {c.name for c in features if scalar_of(c, dtype)}}


def make_reader(plan: sources.InputPlan, files: List[str], features, key_columns,
                batch_size: int, blocks: Dict[str, Tuple[str, ...]]):
    """``read(paths) -> Iterator[(position, Chunk | None)]`` for the plan's format: each
    file's chunks, then None, file after file (text headers checked now); TFRecords give
    each of ``blocks`` as one matrix."""
    if plan.fmt == "tfrecord":
        from tfkfp.components.batch_predict.tfrecord_parser import (
            first_record_rows,
            make_parser,
            records_per_batch,
        )
        from tfkfp.components.batch_predict.tfrecords import read_shards

        # "both": a pattern read with the model's schema may hold either layout, and its
        # first record says how many rows a record holds
        parse = make_parser(features, key_columns, plan.schema,
                            accept="schema" if plan.layout_known else "both", blocks=blocks)
        counted = first_record_rows(files, plan.compression, parse) \
            if plan.schema.record_layout.multi_row and not plan.layout_known else 0
        per_batch = records_per_batch(batch_size, plan.schema, counted)
        rows_per_record = counted or plan.schema.block_rows or 1
        return lambda paths: read_shards(paths, plan.compression, parse, per_batch,
                                         rows_per_record)
    for path in files:
        text.check_columns(path, plan.fmt, features + key_columns)

    def read(paths: List[str]):
        for position, path in enumerate(paths):
            yield from ((position, chunk) for chunk in
                        text.read_text(path, plan.fmt, features, key_columns, batch_size))
            yield position, None

    return read
