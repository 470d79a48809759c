"""batch_predict says where its time goes: busy seconds of read+parse, the model and
format+write, the model's waits, and the stage that bounds the run."""

import itertools

from tfkfp.components.batch_predict.core import batch_predict
from tfkfp.components.batch_predict.stages import STAGES, WAITS, StageClock


def test_the_clock_counts_each_stage_and_names_the_slowest():
    ticks = itertools.count()
    clock = StageClock(now=lambda: float(next(ticks)))  # every reading one second later
    assert list(clock.timed_iter("read", ["a", "b"])) == ["a", "b"]  # 3 calls of next()
    clock.timed("write", lambda x: x)("done")
    with clock.timing("predict"):
        pass
    figures = clock.figures()
    assert (figures["read"], figures["predict"], figures["write"]) == (3.0, 1.0, 1.0)
    assert figures["bound_by"] == "read"


def test_a_run_reports_its_stages(demo_model, demo_dataset, tmp_path):
    result = batch_predict(demo_model, demo_dataset, str(tmp_path / "out"),
                           predict_batch_size=256)
    stages = result.metadata()["stage_seconds"]
    assert set(stages) == {*STAGES, *WAITS, "bound_by"} and stages["bound_by"] in STAGES
    assert all(stages[name] >= 0 for name in (*STAGES, *WAITS))
    assert stages["predict"] > 0 and stages["read"] > 0 and stages["write"] > 0
