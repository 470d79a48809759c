"""A table as users have them, for the Beam tests: headers with a space, '/', a dot,
brackets and another script, a key column, a string column with blanks, float cells with
gaps, a string label; sharded into a Dataset and a model trained on it by ``train``. Built
once per test session."""

import csv
import dataclasses
import os

import numpy as np
import pytest

HEADER = ["row id", "mean radius", "od280/od315", "a.b[0]", "Größe", "colour", "label"]
COLOURS = ["red", "green", "blue, dark", "绿色"]
_CACHE = {}


@dataclasses.dataclass(frozen=True)
class BeamTable:
    csv: str  # the table, one CSV file
    dataset: str  # the table sharded (4 shards a split)
    model: str  # a tfkfp SavedModel trained on it


def rows(count: int, seed: int, first_id: int = 0):
    rng = np.random.default_rng(seed)
    for i in range(count):
        radius, ratio, ab = rng.normal(14, 3), rng.normal(2.5, 0.7), rng.normal()
        size = int(rng.integers(0, 50))
        colour = COLOURS[int(rng.integers(len(COLOURS)))] if rng.random() > 0.1 else ""
        score = (radius - 14) / 3 + (ratio - 2.5) / 0.7 + (colour == "red") - size / 50
        yield [first_id + i, "" if rng.random() < 0.05 else round(radius, 3),
               round(ratio, 4), "" if rng.random() < 0.05 else round(ab, 3), size, colour,
               "ja" if score > 0 else "nein"]


def write_csv(path: str, table_rows) -> str:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        writer.writerows(table_rows)
    return path


@pytest.fixture(scope="session")
def beam_table(tmp_path_factory) -> BeamTable:
    if "table" not in _CACHE:
        from tfkfp.components.shard_tfrecords.core import shard_tfrecords
        from tfkfp.components.train.core import train

        base = str(tmp_path_factory.mktemp("beam_table"))
        path = write_csv(os.path.join(base, "table.csv"), rows(1200, 7))
        dataset = shard_tfrecords(path, os.path.join(base, "dataset"), label="label",
                                  keys=["row id"], num_shards=4).dataset
        model = os.path.join(base, "model")
        train(dataset, model, epochs=4, hidden_units=(16,), seed=2)
        _CACHE["table"] = BeamTable(path, dataset, model)
    return _CACHE["table"]


def assert_answers_as_batch_predict(model: str, good_rows, answers, folder) -> None:
    """``answers`` (row id -> a prediction message's JSON) hold batch_predict's top-2 classes
    and scores for ``good_rows`` (dict rows), predicted from a JSON Lines file in ``folder``."""
    import json

    from tfkfp.components.batch_predict.core import batch_predict

    path = folder / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in good_rows))
    batch_predict(model, str(path), str(folder / "out"), keys=["row id"], top_k=2)
    for line in open(folder / "out" / "predictions-00000-of-00001.jsonl"):
        want = json.loads(line)
        answer = answers[want["row id"]]
        assert answer["top_classes"] == want["top_classes"]
        np.testing.assert_allclose(answer["top_scores"], want["top_scores"], atol=1e-5)
