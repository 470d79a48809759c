"""The sharding anchor of the strongest library path: pyarrow's CSV reader, tfx_bsl's
Arrow-to-Examples encoder and ``TFRecordWriter``, one feature per column.

tfx_bsl is not a tfkfp dependency (it pulls apache-beam), so this runs as its own script
in whatever interpreter has it: ``python -m benchmarks`` starts it with the interpreter
named by ``TFKFP_TFX_BSL_PYTHON`` (or its own, if tfx_bsl imports there), and skips the
anchor with a note otherwise. Prints the best records/s of ``repeats`` runs as JSON.

    python benchmarks/tfx_bsl_anchor.py TABLE.csv OUT.tfrecord [REPEATS]
"""

import json
import sys
import time


def encode(csv_path: str, out_path: str) -> int:
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pa_csv
    import tensorflow as tf
    from tfx_bsl.coders import example_coder

    with open(csv_path) as f:
        header = f.readline().strip().split(",")
    types = {n: pa.int64() if n == "label" else pa.float32() for n in header}
    table = pa_csv.read_csv(csv_path, convert_options=pa_csv.ConvertOptions(column_types=types))
    encoder = example_coder.RecordBatchToExamplesEncoder()
    rows = 0
    with tf.io.TFRecordWriter(out_path) as writer:
        for batch in table.to_batches(max_chunksize=65_536):
            # the encoder takes list columns: one value per row
            offsets = pa.array(np.arange(batch.num_rows + 1, dtype=np.int32))
            lists = pa.RecordBatch.from_arrays(
                [pa.ListArray.from_arrays(offsets, column) for column in batch.columns],
                names=batch.schema.names)
            for record in encoder.encode(lists):
                writer.write(record)
            rows += batch.num_rows
    return rows


def main(argv) -> int:
    csv_path, out_path = argv[0], argv[1]
    repeats = int(argv[2]) if len(argv) > 2 else 3
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        rows = encode(csv_path, out_path)
        best = max(best, rows / (time.perf_counter() - start))
    print(json.dumps({"records_per_second": best}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
