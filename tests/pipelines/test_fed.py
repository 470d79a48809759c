"""checks.fed: what a pipeline gives a step, read from the compiled pipeline, so a pipeline's
checks hand each step's own check what the step gets, without a list of names."""

from tfkfp.components.batch_predict.component import batch_predict, merge_predictions
from tfkfp.components.shard_tfrecords.component import shard_tfrecords
from tfkfp.components.tune.component import tune
from tfkfp.pipelines import checks, registry


def values(name, **given):
    return checks.with_defaults(registry.load(name), given)


def test_a_pipeline_parameter_reaches_the_step_under_the_step_s_name():
    training = registry.load("training")
    given = checks.fed(training, tune, values("training", input_uri="x", label="y",
                                              tune_trials=6, tune_engine="katib"))
    assert (given["trials"], given["engine"]) == (6, "katib")  # inside the If branch
    assert "train_defaults" not in given  # another task's output: the run's, not the check's


def test_constants_and_loops_are_followed_and_each_step_gets_its_own():
    pipeline = registry.load("batch_prediction")
    args = values("batch_prediction", model_uri="m", max_error_fraction=0.2, num_shards=3)
    predicting = checks.fed(pipeline, batch_predict, args)  # in a ParallelFor, nested
    assert predicting["max_error_fraction"] == 1.0  # a group's own share is not limited
    assert checks.fed(pipeline, merge_predictions, args)["max_error_fraction"] == 0.2
    assert checks.fed(pipeline, shard_tfrecords, args)["num_shards"] == 3
