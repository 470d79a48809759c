"""Merging the group summaries of a fanned-out batch prediction into one."""

import json
from typing import Dict, Sequence

from tfkfp.components.batch_predict.errors import PredictInputError
from tfkfp.components.common import uris

SUMMARY_PREFIX = "summary-group-"


def merge_predictions(prediction_dirs: Sequence[str]) -> Dict:
    """One summary of the group summaries in ``prediction_dirs`` (a fan-out's outputs).

    Counts add up across groups; the check inputs = predictions + errors is made again, and
    every shard must be predicted exactly once.
    """
    summaries = []
    for folder in prediction_dirs:
        for name in uris.listdir(folder):
            if name.startswith(SUMMARY_PREFIX):
                body = json.loads(uris.read_text(uris.join(folder, name)))
                summaries.append((folder, body))
    if not summaries:
        raise PredictInputError(f"no {SUMMARY_PREFIX}*.json in {list(prediction_dirs)}")
    files = [{**s, "predictions_file": uris.join(folder, s["predictions_file"]),
              "errors_file": uris.join(folder, s["errors_file"])}
             for folder, body in summaries for s in body["shards"]]
    inputs = [s["input"] for s in files]
    duplicates = sorted({i for i in inputs if inputs.count(i) > 1})
    if duplicates:
        raise PredictInputError(f"shards predicted more than once: {duplicates}")
    totals = {k: sum(s[k] for s in files) for k in ("inputs", "predictions", "errors")}
    if totals["inputs"] != totals["predictions"] + totals["errors"]:
        raise AssertionError(f"merged counts do not add up: {totals}")
    seconds = max(body["seconds"] for _, body in summaries)
    return {**totals, "groups": len(summaries), "num_shards": summaries[0][1]["num_shards"],
            "shards_done": len(files), "seconds": seconds,
            "records_per_second": round(totals["inputs"] / max(seconds, 1e-9), 1),
            "shards": sorted(files, key=lambda s: s["predictions_file"].rsplit("/", 1)[-1])}


def markdown(merged: Dict) -> str:
    """The merged summary as a Markdown table for the KFP UI."""
    lines = [f"**{merged['inputs']:,}** records in, **{merged['predictions']:,}** predictions, "
             f"**{merged['errors']:,}** errors; {merged['groups']} group(s), "
             f"{merged['records_per_second']:,.0f} records/s", "",
             "| predictions | inputs | predictions | errors |", "|---|---:|---:|---:|"]
    for s in merged["shards"]:
        lines.append(f"| {s['predictions_file'].rsplit('/', 1)[-1]} | {s['inputs']} | "
                     f"{s['predictions']} | {s['errors']} |")
    return "\n".join(lines) + "\n"
