"""What the pipelines that fan work out with ``dsl.ParallelFor`` share: the group count's
check and the fingerprinted input (the steps are shard_tfrecords' group_numbers and
fingerprint_input)."""


def check_group_count(count: int, name: str) -> None:
    """group_numbers' check (shard_tfrecords/component.py), made before a run (``name``: the
    pipeline parameter that gives the count). The step keeps its own copy: kfp's executor
    cannot import this module."""
    if count < 1:
        raise ValueError(f"{name} {count}: the group count must be at least 1")


def fingerprinted(input_uri, input_format):
    """fingerprint_input on ``input_uri`` (files of ``input_format``, as shard_tfrecords reads
    them), never cached, so the sharding step's cache key follows the data.

    No ``set_retry``: KFP reruns a task whatever made it fail, so a missing file, an
    unsupported pattern or absent credentials would fail four times, 70 s of backoff apart.
    The step retries the storage faults that may pass (common.platform.transient) itself.
    """
    from tfkfp.components.shard_tfrecords.component import fingerprint_input

    task = fingerprint_input(input_uri=input_uri, input_format=input_format)
    return task.set_caching_options(False)
