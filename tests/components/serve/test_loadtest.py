"""``tfkfp loadtest``: bounded load at concurrency levels against a real ``tfkfp serve``."""

import json
import math

import pytest

from tfkfp.cli.main import main
from tfkfp.components.serve.errors import ServeOptionsError
from tfkfp.components.serve.loadtest import check


@pytest.mark.parametrize("args,words", [
    (("ftp://h", [1], 10, 1.0), "expected http://HOST:PORT"),
    (("http://h:1", [0], 10, 1.0), "each level must be 1 to 256 clients"),
    (("http://h:1", [1], 0, 1.0), "expected 1 to 1,000,000 requests"),
    (("http://h:1", [1], 10, 3600.0), "at most 600 s"),
])
def test_unbounded_or_malformed_loads_are_refused(args, words):
    with pytest.raises(ServeOptionsError, match=words):
        check(*args)


def test_a_server_that_is_not_there_is_named(string_table, capsys):
    from serve_process import free_port

    url = f"http://127.0.0.1:{free_port()}"
    assert main(["loadtest", url, "--dataset", string_table.dataset, "--requests", "5"]) == 1
    assert f"{url}: cannot connect" in capsys.readouterr().err


@pytest.mark.slow
def test_loadtest_reports_each_level_and_writes_json(string_table, tmp_path, capsys):
    from serve_process import running

    with running(string_table.model, tmp_path=tmp_path) as server:
        out = tmp_path / "load.json"
        assert main(["loadtest", f"http://127.0.0.1:{server.port}", "--dataset",
                     string_table.dataset, "--concurrency", "1", "4", "--requests", "40",
                     "--rows-per-request", "3", "--json", str(out)]) == 0
        assert server.metric("tfkfp_batch_rows_sum") >= 80 * 3  # every row reached the model
    printed = capsys.readouterr().out
    assert "   1 clients:" in printed and "   4 clients:" in printed
    figures = json.loads(out.read_text())
    assert [level["clients"] for level in figures["levels"]] == [1, 4]
    for level in figures["levels"]:
        assert level["requests"] == 40 and level["errors"] == 0 and level["qps"] > 0
        assert not math.isnan(level["p50_ms"]) and level["p50_ms"] <= level["p99_ms"]


@pytest.mark.slow
def test_loadtest_counts_the_rows_a_precomputed_set_answers_and_can_leave_them_out(
        string_table, tmp_path, capsys):
    """Half the rows the load sends have their key in the server's precomputed set: the
    command says so, each level reports the rows the set answered (the server's counter),
    and --exclude-precomputed sends only rows that reach the model."""
    from serve_process import running

    from tfkfp.components.batch_predict.core import batch_predict
    from tfkfp.components.serve.load_inputs import instances

    rows = instances(string_table.dataset, 256)
    half = len(rows) // 2
    (tmp_path / "known.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:half]))
    batch_predict(string_table.model, str(tmp_path / "known.jsonl"), str(tmp_path / "preds"),
                  keys=["id"], schema_uri=string_table.dataset)
    with running(string_table.model, "--keys", "id", "--precomputed", str(tmp_path / "preds"),
                 "--precomputed-key", "id", tmp_path=tmp_path) as server:
        def load(*more):
            out = tmp_path / "load.json"
            assert main(["loadtest", f"http://127.0.0.1:{server.port}", "--dataset",
                         string_table.dataset, "--concurrency", "2", "--requests", "60",
                         "--json", str(out), *more]) == 0
            return capsys.readouterr().out, json.loads(out.read_text())["levels"][0]

        printed, level = load()
        said = f"{half} of {len(rows)} rows were answered from the server's precomputed set"
        assert f"{said}, not by the model; the levels measure the lookup" in printed
        # the load sends the rows in order, and the first half are the set's
        assert level["requests"] == 60 and level["precomputed"] == min(60, half)
        assert f"{level['precomputed']} rows answered from the precomputed set" in printed
        model_rows = server.metric("tfkfp_batch_rows_sum")
        printed, level = load("--exclude-precomputed")
        assert f"{said}, not by the model; left out" in printed
        assert level["requests"] == 60 and level["precomputed"] == 0
        # the load's 60 rows and the count's 256 - half all reached the model
        assert server.metric("tfkfp_batch_rows_sum") == model_rows + 60 + len(rows) - half
