"""Any header a user's table has, through every step under its own name: the `training`
pipeline by the command a user types (every quantization mode swept), batch prediction on
the SavedModel and on the TFLite bundle in LiteRT, `tfkfp serve` (v1 and v2, by the
columns' own names and by their tensor names) and the `serving` pipeline's smoke test, with
the same answers everywhere."""

import csv
import glob
import json
import os

import numpy as np
import pytest
from serve_process import running

from tfkfp.cli.main import main
from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.common.data.schema import Schema

pytestmark = pytest.mark.slow

# Every kind of header the issue names: spaces (leading and trailing too), / . - ( ) $ %,
# a leading digit or underscore, other scripts, 200 characters, an empty and a blank cell,
# two names that map to one tensor name, and the project's own words.
HEADERS = ["mean radius", " padded ", "od280/od315_of_diluted_wines", "a/b", "a-b", "x-y",
           "a.b", "sepal length (cm)", "Price ($)", "growth %", "1st", "_x", "Größe", "价格",
           "Высота", "x" * 200, "", "  ", "label", "packed_float32", "examples", "value",
           "probabilities", "dense"]
LABEL = "Klasse (Ziel)"
CLASSES = ["ja", "nein", "ψ-klasse"]  # one label value in another script
ROWS = 450


def write_table(path: str) -> None:
    rng = np.random.default_rng(7)
    values = rng.normal(size=(ROWS, len(HEADERS)))
    score = values[:, 0] + values[:, 2] - values[:, 13]  # 'mean radius', 'od280/..', '价格'
    classes = np.digitize(score, [-0.6, 0.6])
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", *HEADERS, LABEL])
        for i in range(ROWS):
            writer.writerow([i, *(f"{v:.5f}" for v in values[i]), CLASSES[classes[i]]])


def only(pattern: str) -> str:
    found = glob.glob(pattern, recursive=True)
    assert len(found) == 1, (pattern, found)
    return found[0]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The training pipeline run once on the table, as a user types it."""
    root = tmp_path_factory.mktemp("any-header")
    table = str(root / "awkward.csv")
    write_table(table)
    code = main(["run", "training", "--local", "--pipeline-root", str(root / "runs"),
                 "--set", f"input_uri={table}", "--set", f"label={LABEL}", "--set", "keys=id",
                 "--set", "quantization=auto", "--set", "epochs=20",
                 # a quantized model may flip a close call: the gate is not what is tested
                 "--set", "min_agreement=0.9"])
    assert code == 0
    runs = str(root / "runs" / "*")
    return {"root": root, "dataset": only(f"{runs}/merge-datasets/dataset"),
            "model": only(f"{runs}/train/model"),
            "bundle": only(f"{runs}/export-tflite/bundle"),
            "quantized": only(f"{runs}/freeze-quantize/tflite_model"),
            "predictions": only(f"{runs}/batch-predict/predictions")}


def read_rows(folder: str, pattern: str = "predictions-*.jsonl"):
    rows = [json.loads(line) for path in sorted(glob.glob(os.path.join(folder, pattern)))
            for line in open(path, encoding="utf-8")]
    return {row["id"]: row for row in rows}


def eval_rows(root, ids):
    """The table's rows of these ids, each as {its own column name: value}."""
    with open(root / "awkward.csv", encoding="utf-8", newline="") as f:
        table = {int(r["id"]): r for r in csv.DictReader(f)}
    return [{"id": i, **{h: float(table[i][h]) for h in HEADERS}} for i in ids]


def test_every_column_keeps_its_own_name_and_gets_one_tensor_name(run):
    schema = Schema.load(run["dataset"])
    assert [c.name for c in schema.columns] == ["id", *HEADERS, LABEL]
    tensors = [c.tensor for c in schema.columns]
    assert len(set(tensors)) == len(tensors)
    assert schema.column("od280/od315_of_diluted_wines").tensor == \
        "od280_od315_of_diluted_wines"
    assert schema.column("label").tensor == "label"  # a plain name is its own tensor name
    assert schema.label.vocabulary == tuple(CLASSES)
    model_info = json.load(open(os.path.join(run["model"], "tfkfp_model.json")))
    assert sorted(model_info["input_columns"].values()) == sorted(HEADERS)
    signature = json.load(open(os.path.join(run["bundle"], "signature.json")))
    taken = [c for e in signature["inputs"].values() for c in e.get("columns", [e.get("column")])]
    assert sorted(taken) == sorted(HEADERS)  # packed inputs list their columns
    assert open(os.path.join(run["bundle"], "labels.txt"), encoding="utf-8").read().split(
        "\n")[:3] == CLASSES


def test_every_quantization_mode_converts_and_agrees(run):
    report = json.load(open(os.path.join(run["quantized"], "quantization.json")))
    assert sorted(report["modes"]) == sorted(["none", "dynamic", "float16", "int8", "int16x8"])
    assert not report.get("skipped")
    for mode, figures in report["modes"].items():
        assert figures["agreement"] >= 0.9, (mode, figures)


def test_batch_predict_on_the_tflite_bundle_answers_as_the_savedmodel(run, tmp_path):
    pipeline = read_rows(run["predictions"])
    assert len(pipeline) > 20
    out = str(tmp_path / "tflite")
    result = batch_predict(run["bundle"], run["dataset"], out, keys=["id"], split="eval")
    assert result.errors == 0
    tflite = read_rows(out)
    assert tflite.keys() == pipeline.keys()
    agree = np.mean([tflite[i]["class"] == pipeline[i]["class"] for i in pipeline])
    assert agree >= 0.9


@pytest.mark.parametrize("model", ["model", "bundle"])
def test_the_server_answers_by_the_columns_own_names_and_by_their_tensor_names(
        run, model, tmp_path):
    expected = read_rows(run["predictions"]) if model == "model" else None
    ids = sorted(read_rows(run["predictions"]))[:12]
    rows = eval_rows(run["root"], ids)
    schema = Schema.load(run["dataset"])
    tensor = {c.name: c.tensor for c in schema.columns}
    with running(run[model], tmp_path=tmp_path) as server:
        status, v1 = server.v1(rows)
        assert status == 200, v1
        by_tensor = [{tensor[k] if k != "id" else k: v for k, v in r.items()} for r in rows]
        assert server.v1(by_tensor)[1] == v1
        inputs = [{"name": h, "datatype": "FP32", "shape": [len(rows)],
                   "data": [r[h] for r in rows]} for h in HEADERS]
        status, v2 = server.v2(inputs)
        assert status == 200, v2
        _, meta = server.request("GET", "/v2/models/model")
    assert sorted(i["name"] for i in meta["inputs"]) == sorted(HEADERS)
    answers = v1["predictions"]
    v2_classes = next(o["data"] for o in v2["outputs"] if o["name"] == "class")
    assert [a["class"] for a in answers] == v2_classes
    assert [a["id"] for a in answers] == ids
    if expected is not None:  # the SavedModel online answers as in the batch
        for answer in answers:
            assert answer["class"] == expected[answer["id"]]["class"]
            assert abs(answer["score"] - expected[answer["id"]]["score"]) < 1e-4


@pytest.mark.usefixtures("isolated")
def test_the_serving_pipeline_smoke_tests_the_model_by_its_columns_names(run, tmp_path,
                                                                       capsys):
    with running(run["model"], "--name", "awkward", tmp_path=tmp_path) as server:
        code = main(["run", "serving", "--local", "--pipeline-root", str(tmp_path / "root"),
                     "--set", "target=existing", "--set", "service_name=awkward",
                     "--set", f"model_uri={run['model']}",
                     "--set", f"dataset_uri={run['dataset']}",
                     "--set", f"serving_model_uri={run['model']}",
                     "--set", f'deploy_options={{"url": "http://127.0.0.1:{server.port}"}}'])
    assert code == 0
    out = capsys.readouterr().out
    assert "done   smoke-test" in out, out[-3000:]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_batch_predict_reads_the_users_own_table_by_its_headers(run, fmt, tmp_path):
    pipeline = read_rows(run["predictions"])
    source = run["root"] / "awkward.csv"
    if fmt == "jsonl":  # the same rows as JSON Lines, keyed by the same names
        rows = eval_rows(run["root"], range(ROWS))
        source = tmp_path / "awkward.jsonl"
        source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                          encoding="utf-8")
    out = str(tmp_path / "out")
    result = batch_predict(run["model"], str(source), out, keys=["id"])
    assert sum(s.errors for s in result.shards) == 0
    answers = read_rows(out)
    assert len(answers) == ROWS
    for i, row in pipeline.items():
        assert answers[i]["class"] == row["class"]
        assert abs(answers[i]["score"] - row["score"]) < 1e-4
