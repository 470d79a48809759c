"""Every compiled step carries its size from pipelines/resources.py, request = limit."""

import pytest
import yaml

from tfkfp.cli.main import main
from tfkfp.pipelines import registry, resources


def steps(path):
    spec = next(yaml.safe_load_all(open(path)))
    for label, executor in spec["deploymentSpec"]["executors"].items():
        if "container" in executor:
            yield label, executor["container"]


def check_sizes(path, profile):
    checked = 0
    for label, container in steps(path):
        step = resources.step_name(label, container)
        want = resources.PROFILES[profile][step].kfp_resources()
        got = {k: v for k, v in container.get("resources", {}).items() if k != "accelerator"}
        assert got == pytest.approx(want), f"{path} {label} ({step}): {got}, expected {want}"
        checked += 1
    assert checked, f"{path}: no container steps"


@pytest.mark.parametrize("name", registry.names())
def test_the_committed_yaml_carries_the_cluster_sizes(name):
    check_sizes(registry.golden_path(name), "cluster")


def test_compile_sizes_kind_writes_the_kind_sizes(tmp_path, capsys):
    assert main(["compile", "--sizes", "kind", "--gpus", "1", "--out", str(tmp_path)]) == 0
    for name in registry.names():
        check_sizes(tmp_path / f"{name}.yaml", "kind")
    train = dict(steps(tmp_path / "training.yaml"))["exec-train"]
    assert train["resources"]["accelerator"]["resourceCount"] == "1"  # kept


def test_both_profiles_size_the_same_steps():
    assert set(resources.PROFILES["kind"]) == set(resources.PROFILES["cluster"])
    assert set(resources.DISK) == set(resources.DISK_REQUEST) == set(resources.PROFILES)


def test_a_step_without_a_size_is_named():
    from kfp import dsl

    @dsl.component
    def unsized_step(x: int) -> int:
        return x

    @dsl.pipeline(name="p")
    def p(x: int):
        unsized_step(x=x)

    with pytest.raises(resources.SizeError, match="step 'unsized_step' .*exec-unsized-step.* "
                       "has no size in profile 'kind'"):
        resources.sized(p, "kind")
    with pytest.raises(resources.SizeError, match="no size profile 'huge'; the profiles are "
                       "cluster, kind"):
        resources.sized(p, "huge")


def test_largest_dataset_is_the_disk_less_the_reserve_over_the_copies():
    assert resources.largest_dataset("train", "cluster") == 19.0
    assert resources.largest_dataset("shard_tfrecords", "kind") == 1.5
    assert resources.largest_dataset("group_numbers") is None
