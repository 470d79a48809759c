"""KFP component: merge the Datasets of fanned-out shard_tfrecords tasks (see core)."""

from typing import List

from kfp import dsl
from kfp.dsl import Dataset, Input, Output

from tfkfp.components._image import IMAGE


@dsl.component(base_image=IMAGE, install_kfp_package=False)
def merge_datasets(datasets: Input[List[Dataset]], dataset: Output[Dataset]):
    """Merges Datasets sharded in parallel into one that lists every shard.

    Args:
        datasets: Datasets from shard_tfrecords tasks over groups of the same input files.
        dataset: Output Dataset: a manifest listing every part's shards (those kept in a
            data root by their URI, not copied; those inside a part copied, hard links
            locally) and one schema whose label vocabulary is the union of the parts'.
    """
    from tfkfp.components.merge_datasets.core import merge_datasets as merge

    result = merge([d.path for d in datasets], dataset.path, [d.uri for d in datasets])
    dataset.metadata.update(result.metadata())
