"""batch_predict's result: the counts of each input file (ShardCounts) and of the task
(PredictResult: its summary, metadata, metrics and charts), and the summary file written
into the output folder (finish_outputs), where stale output of earlier runs is dropped.
"""

import dataclasses
import json
from typing import Dict, List

from tfkfp.components.batch_predict import evaluation
from tfkfp.components.batch_predict.merge import (
    MAX_ERROR_FRACTION,
    SUMMARY_PREFIX,
    error_fraction,
)
from tfkfp.components.common.data import predictions_files
from tfkfp.components.common.platform import uris


@dataclasses.dataclass(frozen=True)
class ShardCounts:
    input: str
    predictions_file: str
    errors_file: str
    inputs: int
    predictions: int
    errors: int
    first_error: str = ""  # where the first error row is and its reason


@dataclasses.dataclass(frozen=True)
class PredictResult:
    output_dir: str
    output_format: str
    model: Dict
    shards: List[ShardCounts]
    num_shards: int  # input files in all groups
    file_group: int
    file_groups: int
    seconds: float  # the task's wall time, loading the model included
    stages: Dict = dataclasses.field(default_factory=dict)  # stages.StageClock's figures
    busy_seconds: float = 0.0  # reading, predicting and writing the rows: the rate's time
    max_error_fraction: float = MAX_ERROR_FRACTION
    path: str = "step"  # where the model ran: "step" (loaded here), "endpoint" or "beam"
    runner: str = ""  # the Beam runner of the "beam" path
    # the model judged on rows carrying their label (evaluation.py); None: no label carried
    evaluation: Dict | None = None

    inputs = property(lambda self: sum(s.inputs for s in self.shards))
    predictions = property(lambda self: sum(s.predictions for s in self.shards))
    errors = property(lambda self: sum(s.errors for s in self.shards))

    @property
    def records_per_second(self) -> float:
        """The step's own throughput: rows over the time spent on them, not on loading the
        model, so the console and the UI's Metrics show one figure."""
        return self.inputs / max(self.busy_seconds or self.seconds, 1e-9)

    @property
    def error_fraction(self) -> float:
        return error_fraction(self.errors, self.inputs)

    def metadata(self) -> Dict:
        return {"path": self.path, **({"runner": self.runner} if self.runner else {}),
                "inputs": self.inputs, "predictions": self.predictions,
                "errors": self.errors,
                "error_fraction": round(self.error_fraction, 6),
                "max_error_fraction": self.max_error_fraction,
                "output_format": self.output_format, "num_shards": self.num_shards,
                "file_group": self.file_group, "file_groups": self.file_groups,
                "shards_done": len(self.shards), "model": self.model,
                "records_per_second": round(self.records_per_second, 1),
                # times to the microsecond: a merge divides by them, tests compare them
                "seconds": round(self.seconds, 6), "busy_seconds": round(self.busy_seconds, 6),
                "stage_seconds": dict(self.stages)}

    def summary(self) -> Dict:
        return {**self.metadata(), "shards": [dataclasses.asdict(s) for s in self.shards]}

    def charts(self) -> List:
        """The step's page: the eval split's confusion matrix and curves, or residuals."""
        return evaluation.sections(self.evaluation)

    def classification(self) -> Dict | None:
        """The eval split's matrix for KFP ``ClassificationMetrics`` (None: not a classifier
        judged on its labels)."""
        return (self.evaluation or {}).get("classification")


def finish_outputs(result: PredictResult) -> None:
    """Drop output of another layout or format from earlier runs; write the summary."""
    keep = {name for index in range(result.num_shards) for name in
            predictions_files.shard_names(index, result.num_shards,
                                          result.output_format).values()}
    for name in uris.listdir(result.output_dir):
        stale_shard = predictions_files.is_shard(name) and name not in keep
        stale_summary = name.startswith(SUMMARY_PREFIX) and \
            not name.endswith(f"-of-{result.file_groups:05d}.json")
        if stale_shard or stale_summary:
            uris.remove(uris.join(result.output_dir, name))
    name = f"{SUMMARY_PREFIX}{result.file_group:05d}-of-{result.file_groups:05d}.json"
    uris.write_text_atomic(uris.join(result.output_dir, name),
                           json.dumps(result.summary(), indent=2) + "\n")
