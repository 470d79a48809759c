import pytest


@pytest.fixture(scope="session")
def gzip_many_shards(demo_dir, tmp_path_factory):
    """The demo digits in 64 tiny GZIP shards per split: a slow input pipeline."""
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    out = str(tmp_path_factory.mktemp("gzip64") / "dataset")
    shard_tfrecords(demo_dir.csv, out, label="label", keys=["id"], compression="gzip",
                    num_shards=64)
    return out
