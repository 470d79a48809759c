"""Entry point of one task of a local multi-process cluster (``TF_CONFIG`` says which):
``python -m tfkfp.components.train.worker CONFIG_JSON RESULT_JSON``."""

import logging
import sys

from tfkfp.components.train import strategies
from tfkfp.components.train.config import TrainConfig


def main(argv=None) -> int:
    config_path, result_path = (argv or sys.argv[1:])[:2]
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("tfkfp").setLevel(logging.INFO)
    with open(config_path) as f:
        config = TrainConfig.from_json(f.read())
    task = strategies.current_task()
    if config.strategy == "parameter_server" and task.type in ("worker", "ps"):
        strategies.run_server(task, config.workers)
        return 0
    from tfkfp.components.train import loop

    loop.run(config, result_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
