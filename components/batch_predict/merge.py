"""Merging the group summaries of a fanned-out batch prediction into one, and the limit on
the share of rows that may fail (``max_error_fraction``), which a task applies to its own
rows and the merge to the rows of every group together."""

import json
from typing import Dict, List, Sequence

from tfkfp.components.batch_predict.errors import PredictInputError
from tfkfp.components.common.platform import uris

SUMMARY_PREFIX = "summary-group-"
SUMMARY_FILE = "summary.json"  # the merged summary in a gathered predictions folder
MAX_ERROR_FRACTION = 0.01  # the default: a run fails when more than 1% of its rows fail


def check_error_fraction(max_error_fraction: float) -> None:
    """The limit is a share of rows: 0 fails on any error row, 1 on none."""
    if not 0.0 <= max_error_fraction <= 1.0:
        raise PredictInputError(
            f"max_error_fraction {max_error_fraction} is outside [0, 1]; it is the largest "
            f"share of rows that may fail (e.g. {MAX_ERROR_FRACTION}: 1%; 1: never fail on "
            "error rows)")


def error_fraction(errors: int, inputs: int) -> float:
    return errors / inputs if inputs else 0.0


def refuse_errors(shards: Sequence[Dict], max_error_fraction: float) -> None:
    """Fail when more than ``max_error_fraction`` of the shards' rows are error rows, saying
    how many of how many, the limit, which errors files hold them and the first reason.

    ``shards``: ShardCounts as dicts, errors_file a path the user can open.
    """
    errors, inputs = (sum(s[k] for s in shards) for k in ("errors", "inputs"))
    if error_fraction(errors, inputs) <= max_error_fraction:
        return
    failed = [s for s in shards if s["errors"]]
    files = ", ".join(f"{s['errors_file']} ({s['errors']})" for s in failed[:5])
    more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
    first = next((s["first_error"] for s in failed if s.get("first_error")), "")
    raise PredictInputError(
        f"{errors:,} of {inputs:,} rows failed ({error_fraction(errors, inputs):.2%}), more "
        f"than max_error_fraction {max_error_fraction} allows; the error rows, each with its "
        f"reason, are in {files}{more}" + (f"; the first: {first}" if first else "")
        + ". Fix the input, or raise max_error_fraction to accept them")


def merge_predictions(prediction_dirs: Sequence[str], output_dir: str = "",
                      max_error_fraction: float = MAX_ERROR_FRACTION) -> Dict:
    """One summary of the group summaries in ``prediction_dirs`` (a fan-out's outputs).

    Counts add up across groups; the check inputs = predictions + errors is made again, and
    every shard must be predicted exactly once. With ``output_dir``, every prediction and
    error file is gathered there (hard links locally, copies on a remote store) with the
    summary as ``summary.json``, file names relative to it: one Dataset any step can read,
    where the groups' own folders are visible only to the task that wrote them. Then, when
    more than ``max_error_fraction`` of all the groups' rows are errors, it fails naming the
    groups' errors files (refuse_errors).
    """
    check_error_fraction(max_error_fraction)
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
    # the groups run side by side: the run's own throughput is the rows over the longest
    # group's time on them (a summary from before busy_seconds has only its wall time)
    busy = max(body.get("busy_seconds") or body["seconds"] for _, body in summaries)
    in_groups = files  # on a cluster the groups' outputs are kept when this step fails
    if output_dir:
        files = _gathered(files, output_dir)
    merged = {**totals, "groups": len(summaries),
              "error_fraction": round(error_fraction(totals["errors"], totals["inputs"]), 6),
              "num_shards": summaries[0][1]["num_shards"], "shards_done": len(files),
              "seconds": seconds, "busy_seconds": busy,
              "records_per_second": round(totals["inputs"] / max(busy, 1e-9), 1),
              "shards": sorted(files, key=lambda s: s["predictions_file"].rsplit("/", 1)[-1])}
    if output_dir:
        uris.write_text_atomic(uris.join(output_dir, SUMMARY_FILE), json.dumps(merged) + "\n")
    refuse_errors(in_groups, max_error_fraction)
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
             f"**{merged['errors']:,}** errors{_share(merged)}; {merged['groups']} group(s), "
             f"{merged['records_per_second']:,.0f} records/s", "",
             "| predictions | inputs | predictions | errors |", "|---|---:|---:|---:|"]
    for s in merged["shards"]:
        lines.append(f"| {s['predictions_file'].rsplit('/', 1)[-1]} | {s['inputs']} | "
                     f"{s['predictions']} | {s['errors']} |")
    return "\n".join(lines) + "\n"


def _share(merged: Dict) -> str:
    """The errors' share of the rows, where there are any."""
    share = error_fraction(merged["errors"], merged["inputs"])
    return f" ({share:.2%} of the rows)" if share else ""
