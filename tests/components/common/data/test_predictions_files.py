"""batch_predict's output file names, written once for the writer and its readers."""

import fnmatch

import pytest

from tfkfp.components.common.data import predictions_files


def test_the_names_users_see():
    assert predictions_files.shard_names(3, 10, "jsonl") == {
        "predictions": "predictions-00003-of-00010.jsonl",
        "errors": "errors-00003-of-00010.jsonl"}
    assert predictions_files.shard_name("predictions", 0, 1, "tfrecord") == \
        "predictions-00000-of-00001.tfrecord"
    assert predictions_files.PATTERNS == ("predictions-*.jsonl", "predictions-*.csv")


@pytest.mark.parametrize("fmt", sorted(predictions_files.EXTENSIONS))
def test_what_the_writer_names_the_reader_finds(tmp_path, fmt):
    names = predictions_files.shard_names(1, 2, fmt)
    assert fnmatch.fnmatch(names["predictions"], predictions_files.pattern(fmt))
    assert not fnmatch.fnmatch(names["errors"], predictions_files.pattern(fmt))
    assert all(predictions_files.is_shard(n) for n in names.values())
    assert predictions_files.format_of(names["predictions"]) == fmt
    for name in names.values():
        (tmp_path / name).write_text("")
    found = predictions_files.find(str(tmp_path))
    row_file = [str(tmp_path / names["predictions"])]
    assert found == (row_file if fmt in predictions_files.ROW_FORMATS else [])
    assert predictions_files.find(str(tmp_path), [fmt]) == row_file


def test_a_reader_takes_every_row_file_sorted_and_nothing_else(tmp_path):
    for name in ("predictions-00001-of-00002.csv", "predictions-00000-of-00002.jsonl",
                 "errors-00000-of-00002.jsonl", "summary-group-00000-of-00001.json",
                 "predictions-00000-of-00002.tfrecord", "notes.jsonl"):
        (tmp_path / name).write_text("")
    found = [p.rsplit("/", 1)[-1] for p in predictions_files.find(str(tmp_path))]
    assert found == ["predictions-00000-of-00002.jsonl", "predictions-00001-of-00002.csv"]
    assert not predictions_files.is_shard("summary-group-00000-of-00001.json")
    assert predictions_files.format_of("notes.txt") == ""
