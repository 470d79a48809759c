"""The records of one TFRecord file for tf.data: read where TensorFlow reads them, or
fetched whole through the local fetch cache (an object store TensorFlow cannot read), the
fetched copy handed back once every record was read (see ``common.platform.fetch_cache``).

``common.data.reader`` builds its pipelines on these; diagnose_bottleneck times them alone.
"""

from typing import List, Tuple

from tfkfp.components.common.platform import fetch_cache, uris


def fetched(files: List[str]) -> bool:
    """Whether these files are read through the local fetch cache (an object store that
    TensorFlow cannot read, see ``common.platform.fetch_cache``)."""
    return any(not uris.tf_reads(f) for f in files)


def readable_path(path, fetch: bool):
    """A file's path as TensorFlow's readers take it: fetched locally first when ``fetch``."""
    import tensorflow as tf

    if not fetch:
        return path
    local = tf.py_function(fetch_cache.tf_path, [path], tf.string)
    local.set_shape([])
    return local


def file_records(path, compression: str, share: Tuple[int, int] | None = None,
             fetch: bool = False):
    """Records of one file; with ``share=(n, i)`` only every n-th record from the i-th."""
    import tensorflow as tf

    path = readable_path(path, fetch)
    records = tf.data.TFRecordDataset(path, compression_type=compression, buffer_size=1 << 20)
    records = records.shard(*share) if share else records
    return released_after(records, path) if fetch else records


def released_after(records, local_path):
    """records, then (adding nothing) the fetched file handed back to the cache: the empty
    tail runs only once every record was read, so the file leaves the disk then."""
    import tensorflow as tf

    release = tf.data.Dataset.from_tensors(local_path).map(
        lambda p: tf.py_function(fetch_cache.tf_release, [p], tf.bool))
    return records.concatenate(release.filter(lambda done: done).map(
        lambda _: tf.constant("", tf.string)))
