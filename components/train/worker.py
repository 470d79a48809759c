"""Entry point of one training task of a cluster (``TF_CONFIG`` says which):
``python -m tfkfp.components.train.worker CONFIG_JSON RESULT_JSON``.

Local processes get local paths; TFJob, TrainJob and Vertex AI replicas get URIs every replica
can reach (gs://..., or a shared volume). The local launcher, the Training Operator and Vertex
AI set ``TF_CONFIG``; a Trainer v2 replica builds its own from its JobSet identity (see
jobset_replica.py). Only the chief writes RESULT_JSON."""

import logging
import os
import sys

from tfkfp.components.common.platform import uris
from tfkfp.components.common.training import strategies
from tfkfp.components.common.training.config import TrainConfig
from tfkfp.components.common.training.shape import ClusterShape
from tfkfp.components.train import jobset_replica


def main(argv=None) -> int:
    config_uri, result_uri = (argv or sys.argv[1:])[:2]
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("tfkfp").setLevel(logging.INFO)
    config = TrainConfig.from_json(uris.read_text(config_uri))
    if jobset_replica.set_tf_config(ClusterShape.for_config(config)):
        logging.getLogger("tfkfp").info("TF_CONFIG from the JobSet identity: %s",
                                        os.environ["TF_CONFIG"])
    cluster_task = strategies.current_cluster_task()
    if cluster_task and cluster_task.type in strategies.get(config.strategy).servers:
        strategies.run_server(cluster_task, config.workers)
        return 0
    from tfkfp.components.train import loop

    loop.run(config, result_uri)
    return 0


if __name__ == "__main__":
    sys.exit(main())
