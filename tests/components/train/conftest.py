import pytest


@pytest.fixture(scope="session")
def image_dataset(demo_dir, tmp_path_factory):
    from tfkfp.components.shard_tfrecords.core import shard_tfrecords

    out = str(tmp_path_factory.mktemp("images") / "dataset")
    shard_tfrecords(demo_dir.images, out)
    return out
