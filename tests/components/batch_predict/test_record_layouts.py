"""Reading TFRecords whose layout the schema does not tell: a model trained on blocks carries
a blocks schema, but a file pattern with no schema.json beside it may hold a row a record.
The batches are sized by the rows the first record holds, not by the model's block size."""

import glob
import os

from tfkfp.components.batch_predict.tfrecord_parser import (
    first_record_rows,
    make_parser,
    records_per_batch,
)
from tfkfp.components.batch_predict.tfrecords import read_tfrecords
from tfkfp.components.common.data.schema import Schema


def _files(dataset):
    return sorted(glob.glob(os.path.join(dataset, "*", "*.tfrecord")))


def test_a_blocks_schema_over_files_of_a_row_a_record_reads_full_batches(
        demo_dataset, demo_blocks_dataset):
    schema = Schema.load(demo_blocks_dataset)  # what a blocks-trained model carries
    assert schema.layout == "blocks" and schema.block_rows == 100
    parse = make_parser(list(schema.features), list(schema.keys), schema, accept="both")
    rows, blocks = _files(demo_dataset), _files(demo_blocks_dataset)
    assert first_record_rows(rows, "", parse) == 1
    assert first_record_rows(blocks, "", parse) == 100
    assert records_per_batch(256, schema, 1) == 256  # was 3 records: 3 rows a batch
    assert records_per_batch(256, schema, 100) == records_per_batch(256, schema) == 3
    biggest = max(rows, key=os.path.getsize)  # a train shard, some 700 rows
    chunks = list(read_tfrecords(biggest, "", parse, records_per_batch(256, schema, 1)))
    assert chunks[0].rows == 256 and not any(c.errors for c in chunks)
    assert first_record_rows([], "", parse) == 0
