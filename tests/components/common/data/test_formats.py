"""The input formats are one table (common.data.formats): sharding's and batch prediction's
refusals, their extension lookups and the command's choices all read it, so one entry adds a
format everywhere."""

import pytest

from tfkfp.cli.main import _parser
from tfkfp.components.batch_predict import sources as predict_sources
from tfkfp.components.batch_predict.errors import PredictInputError
from tfkfp.components.common.data import formats
from tfkfp.components.shard_tfrecords import options as shard_options
from tfkfp.components.shard_tfrecords import sources as shard_sources
from tfkfp.components.shard_tfrecords.errors import ShardInputError


def test_the_table_gives_each_step_the_formats_it_reads():
    assert formats.choices(formats.SHARD) == ("auto", "csv", "jsonl", "parquet", "npz", "images")
    assert formats.choices(formats.PREDICT) == ("auto", "tfrecord", "csv", "jsonl")
    assert formats.extensions(formats.SHARD) == {
        ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl",
        ".parquet": "parquet", ".pq": "parquet", ".npz": "npz"}
    assert formats.format_of("gs://b/part-0.TFRecord.gz", formats.PREDICT) == "tfrecord"
    assert formats.format_of("part-0.tfrecord", formats.SHARD) is None


def test_every_format_sharding_reads_has_a_reader():
    assert set(shard_sources._READERS) == set(formats.names(formats.SHARD))


def test_one_entry_adds_a_format_to_every_step_that_reads_it(monkeypatch):
    monkeypatch.setitem(formats.FORMATS, "arrow", formats.InputFormat(
        "arrow", (".arrow",), (formats.SHARD, formats.PREDICT), "Arrow IPC files"))
    assert shard_sources._format_of(["a.arrow", "b.arrow.gz"]) == "arrow"
    assert predict_sources._format_of(["a.arrow"]) == "arrow"
    with pytest.raises(ShardInputError, match=r"images, arrow$"):
        shard_options.check_input_format("bogus")
    with pytest.raises(ShardInputError, match=r"'\.arrow'.*'images', 'arrow'\)"):
        shard_sources._format_of(["a.xyz"])
    with pytest.raises(PredictInputError, match=r"'jsonl', 'arrow'\)"):
        predict_sources.resolve_input("unused", input_format="bogus")
    with pytest.raises(PredictInputError, match=r"'\.arrow'"):
        predict_sources._format_of(["a.xyz"])
    args = _parser().parse_args(["shard", "in", "out", "--input-format", "arrow"])
    assert args.input_format == "arrow"


def test_refusals_keep_their_words():
    with pytest.raises(ShardInputError, match=r"^input_format 'x' is not one of auto, csv, "
                       r"jsonl, parquet, npz, images$"):
        shard_options.check_input_format("x")
    with pytest.raises(PredictInputError, match=r"^input_format 'x' is not one of \('auto', "
                       r"'tfrecord', 'csv', 'jsonl'\)$"):
        predict_sources.resolve_input("unused", input_format="x")
    with pytest.raises(ShardInputError, match=r"expected one kind among \['\.csv', '\.json', "
                       r"'\.jsonl', '\.ndjson', '\.npz', '\.parquet', '\.pq'\], or set "
                       r"input_format to one of \('csv', 'jsonl', 'parquet', 'npz', 'images'\)"):
        shard_sources._format_of(["a.xyz"])
