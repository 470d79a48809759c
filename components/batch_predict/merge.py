"""Merging the group summaries of a fanned-out batch prediction into one."""

import json
from typing import Dict, List, Sequence

from tfkfp.components.batch_predict.errors import PredictInputError
from tfkfp.components.common import uris

SUMMARY_PREFIX = "summary-group-"
SUMMARY_FILE = "summary.json"  # the merged summary in a gathered predictions folder


def merge_predictions(prediction_dirs: Sequence[str], output_dir: str = "") -> Dict:
    """One summary of the group summaries in ``prediction_dirs`` (a fan-out's outputs).

    Counts add up across groups; the check inputs = predictions + errors is made again, and
    every shard must be predicted exactly once. With ``output_dir``, every prediction and
    error file is gathered there (hard links locally, copies on a remote store) with the
    summary as ``summary.json``, file names relative to it: one Dataset any step can read,
    where the groups' own folders are visible only to the task that wrote them.
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
    if output_dir:
        files = _gathered(files, output_dir)
    merged = {**totals, "groups": len(summaries),
              "num_shards": summaries[0][1]["num_shards"], "shards_done": len(files),
              "seconds": seconds,
              "records_per_second": round(totals["inputs"] / max(seconds, 1e-9), 1),
              "shards": sorted(files, key=lambda s: s["predictions_file"].rsplit("/", 1)[-1])}
    if output_dir:
        uris.write_text_atomic(uris.join(output_dir, SUMMARY_FILE), json.dumps(merged) + "\n")
    return merged


def _gathered(files: List[Dict], output_dir: str) -> List[Dict]:
    """Every shard's files linked or copied into output_dir, named as batch_predict named
    them (the shard's number is global, so names never collide)."""
    uris.makedirs(output_dir)
    out = []
    for shard in files:
        names = {}
        for field in ("predictions_file", "errors_file"):
            names[field] = shard[field].rsplit("/", 1)[-1]
            uris.link_or_copy(shard[field], uris.join(output_dir, names[field]))
        out.append({**shard, **names})
    return out


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
