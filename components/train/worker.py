"""Entry point of one training task of a cluster (``TF_CONFIG`` says which):
``python -m tfkfp.components.train.worker CONFIG_JSON RESULT_JSON``.

Local processes get local paths; TFJob and Vertex AI replicas get URIs every replica can
reach (gs://..., or a shared volume). Only the chief writes RESULT_JSON."""

import logging
import sys

from tfkfp.components.common import uris
from tfkfp.components.train import strategies
from tfkfp.components.train.config import TrainConfig


def main(argv=None) -> int:
    config_uri, result_uri = (argv or sys.argv[1:])[:2]
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("tfkfp").setLevel(logging.INFO)
    config = TrainConfig.from_json(uris.read_text(config_uri))
    task = strategies.current_task()
    if task and task.type in strategies.get(config.strategy).servers:
        strategies.run_server(task, config.workers)
        return 0
    from tfkfp.components.train import loop

    loop.run(config, result_uri)
    return 0


if __name__ == "__main__":
    sys.exit(main())
