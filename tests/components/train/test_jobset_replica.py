"""A Trainer v2 replica's TF_CONFIG, built from its JobSet identity, for every strategy and
replica count: every replica sees the same cluster, the replicas together are the cluster
shape (as the local and TFJob launchers run it), and each has its own task."""

import json

import pytest

from tfkfp.components.common.training import strategies
from tfkfp.components.common.training.config import TrainConfig
from tfkfp.components.common.training.shape import ClusterShape
from tfkfp.components.train import jobset_replica
from tfkfp.components.train.jobset_replica import Identity
from tfkfp.components.train.launchers.local import local_cluster


def shapes():
    for name in strategies.STRATEGIES:
        if not strategies.get(name).multi_process:
            yield ClusterShape.for_config(TrainConfig("d", "m", strategy=name))
    for workers in (1, 2, 3, 5, 8):
        yield ClusterShape.for_config(TrainConfig("d", "m", strategy="multi_worker_mirrored",
                                                  workers=workers))
        for ps in (1, 2, 3):
            yield ClusterShape.for_config(TrainConfig(
                "d", "m", strategy="parameter_server", workers=workers, parameter_servers=ps))


def env(name, index, **more):
    return {"TFKFP_JOBSET_NAME": name, "TFKFP_REPLICATED_JOB": "node", "TFKFP_JOB_INDEX": "0",
            "JOB_COMPLETION_INDEX": str(index), **more}


@pytest.mark.parametrize("shape", list(shapes()),
                         ids=lambda s: f"{s.strategy}-{s.chief}c{s.workers}w{s.ps}ps")
def test_every_replica_builds_one_cluster_and_its_own_task(shape):
    nodes = sum(shape.replicas.values())
    configs = []
    for index in range(nodes):
        variables = env("fit-7", index)
        assert jobset_replica.set_tf_config(shape, variables)
        configs.append(json.loads(variables["TF_CONFIG"]))
    (cluster,) = {json.dumps(c["cluster"], sort_keys=True) for c in configs}
    cluster = json.loads(cluster)
    assert {role: len(hosts) for role, hosts in cluster.items()} == shape.replicas
    assert cluster.keys() == local_cluster(shape).spec.keys()
    hosts = [host for role in shape.replicas for host in cluster[role]]
    assert hosts == [f"fit-7-node-0-{i}.fit-7:2222" for i in range(nodes)]
    tasks = [(c["task"]["type"], c["task"]["index"]) for c in configs]
    assert sorted(tasks) == sorted((role, i) for role, n in shape.replicas.items()
                                   for i in range(n))
    for index, config in enumerate(configs):  # each replica's own host is its task's
        assert cluster[config["task"]["type"]][config["task"]["index"]] == hosts[index]


@pytest.mark.parametrize("shape", list(shapes())[::4],
                         ids=lambda s: f"{s.strategy}-{s.chief}c{s.workers}w{s.ps}ps")
def test_index_0_leads_and_only_index_0(shape, monkeypatch):
    """The runtime's Job succeeds with index 0: it must be the task that writes the result."""
    for index in range(sum(shape.replicas.values())):
        monkeypatch.setenv("TF_CONFIG", jobset_replica.tf_config(shape,
                                                                 Identity("j", "node", 0, index)))
        assert strategies.is_chief(strategies.current_cluster_task()) == (index == 0)


def test_tensorflow_reads_the_cluster_the_replica_built(monkeypatch):
    import tensorflow as tf

    shape = ClusterShape("parameter_server", chief=1, workers=2, ps=1)
    variables = env("fit", 3, TFKFP_SUBDOMAIN="tf", TFKFP_PORT="4000")
    jobset_replica.set_tf_config(shape, variables)
    monkeypatch.setenv("TF_CONFIG", variables["TF_CONFIG"])
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    assert (resolver.task_type, resolver.task_id) == ("ps", 0)
    assert resolver.cluster_spec().as_dict() == {
        "chief": ["fit-node-0-0.tf:4000"],
        "worker": ["fit-node-0-1.tf:4000", "fit-node-0-2.tf:4000"],
        "ps": ["fit-node-0-3.tf:4000"]}


def test_outside_a_jobset_or_with_a_tf_config_nothing_changes():
    shape = ClusterShape("multi_worker_mirrored", workers=2)
    assert not jobset_replica.set_tf_config(shape, {})
    given = {**env("j", 1), "TF_CONFIG": '{"task": {"type": "worker", "index": 1}}'}
    assert not jobset_replica.set_tf_config(shape, given)
    assert given["TF_CONFIG"] == '{"task": {"type": "worker", "index": 1}}'


@pytest.mark.parametrize("variables,message", [
    ({"JOB_COMPLETION_INDEX": "0"}, "not TFKFP_JOBSET_NAME, TFKFP_REPLICATED_JOB, "
                                    "TFKFP_JOB_INDEX"),
    (env("j", "x"), "JOB_COMPLETION_INDEX='x' is not a whole number"),
    (env("j", 4), "completion index 4 is outside the cluster shape of 4 replicas "
                  "(1 chief, 2 worker, 1 ps)"),
])
def test_a_replica_that_cannot_place_itself_says_why(variables, message):
    shape = ClusterShape("parameter_server", chief=1, workers=2, ps=1)
    with pytest.raises(RuntimeError) as err:
        jobset_replica.set_tf_config(shape, dict(variables))
    assert message in str(err.value)
