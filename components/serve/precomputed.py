"""Precomputed answers (the hybrid): batch_predict's output, looked up by a key column.

A v1 instance carrying a key found in the set is answered from it, marked ``precomputed``
with the time the set was computed, without running the model; the rest go to the model.
The set is the predictions folder batch_predict wrote (``predictions-*.jsonl`` or ``.csv``,
named in ``common.data.predictions_files``: its rows already hold class, class_id, score and
the top-k lists, or a regressor's value). A background thread notices a newer set (files
added, replaced or changed) and swaps it in whole, so a request sees the old set or the new
one, never a mix; a set that fails to load is logged and the old one kept. Entries older
than ``max_age_s`` (by the files' modification time: when batch_predict wrote them) fall
through to the model.

Memory: an entry is a tuple of the answer's values (label strings shared), rebuilt into a dict
when it answers. Measured with tracemalloc on 200k keys: 250 bytes per key at top_k 1, 410 at
top_k 2, so about 240 MiB and 390 MiB per million keys; a lookup takes about 7 us.
"""

import csv
import dataclasses
import io
import json
import logging
import sys
import threading
import time
from datetime import datetime, timezone
from typing import Any, Dict, List, Tuple

from tfkfp.components.common.data import predictions_files
from tfkfp.components.common.platform import uris
from tfkfp.components.serve.errors import PrecomputedError
from tfkfp.components.serve.heap import freeze_heap

log = logging.getLogger("tfkfp.serve")
# The answer fields batch_predict writes, beside the key columns (CSV spells the top-k
# lists as class_1..k / score_1..k).
ANSWER_FIELDS = ("class", "class_id", "score", "top_classes", "top_scores", "value")


@dataclasses.dataclass(frozen=True)
class PrecomputedSet:
    answers: Dict[str, Tuple]  # key text -> the answer's values (see _packed)
    computed_at: float  # epoch seconds: the newest file's modification time
    signature: Tuple  # (file, size, mtime) of every file: a change means a newer set

    @property
    def computed_at_text(self) -> str:
        return datetime.fromtimestamp(self.computed_at, timezone.utc).isoformat(
            timespec="seconds")


def key_text(value: Any) -> str | None:
    """One spelling of a key whatever the file or request wrote: 7, 7.0 and "7" match."""
    if value is None or isinstance(value, (dict, list, bool)):
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def signature_of(files: List[str]) -> Tuple:
    return tuple((f, uris.size(f), uris.mtime(f)) for f in files)


def load(uri: str, key: str, top_k: int) -> PrecomputedSet:
    """Read every predictions file under ``uri``, keyed by column ``key``."""
    files = predictions_files.find(uri)
    if not files:
        raise PrecomputedError(f"precomputed {uri}: no {' or '.join(predictions_files.PATTERNS)}"
                               " files (batch_predict's output with output_format "
                               f"{' or '.join(predictions_files.ROW_FORMATS)})")
    signature = signature_of(files)
    answers: Dict[str, Tuple] = {}
    for path in files:
        for line, row in _rows(path):
            text = _key_of(row, key, path, line)  # checked before the row is packed
            answers[text] = _packed(row, key, top_k, path, line)
    return PrecomputedSet(answers, max(mtime for _, _, mtime in signature), signature)


def _rows(path: str):
    text = uris.read_text(path)
    if predictions_files.format_of(path) == "jsonl":
        for line, raw in enumerate(text.splitlines(), 1):
            if raw.strip():
                try:
                    yield line, json.loads(raw)
                except ValueError as err:
                    raise PrecomputedError(f"{path}, line {line}: not JSON ({err})") from None
    else:
        for line, row in enumerate(csv.DictReader(io.StringIO(text)), 2):
            yield line, _from_csv(row)


def _from_csv(row: Dict[str, str]) -> Dict[str, Any]:
    """CSV's strings back into batch_predict's JSON Lines shape."""
    out: Dict[str, Any] = {k: v for k, v in row.items()
                           if not k.startswith(("class_", "score_")) and k not in ANSWER_FIELDS}
    if "value" in row and "class" not in row:  # a regressor's
        out["value"] = _number(row["value"], float)
        return out
    out.update({"class": row.get("class"), "class_id": _number(row.get("class_id"), int),
                "score": _number(row.get("score"), float)})
    ranks = sorted(int(k[6:]) for k in row if k.startswith("class_") and k[6:].isdigit())
    if ranks:
        out["top_classes"] = [row[f"class_{r}"] for r in ranks]
        out["top_scores"] = [_number(row[f"score_{r}"], float) for r in ranks]
    return out


def _number(text: str | None, kind):
    try:
        return kind(text)
    except (TypeError, ValueError):
        return None


def _key_of(row: Dict[str, Any], key: str, path: str, line: int) -> str:
    if key not in row:
        raise PrecomputedError(f"{path}, line {line}: no key column {key!r}; its columns are "
                               f"{sorted(row)} (batch_predict writes the key columns given "
                               "to it as keys)")
    text = key_text(row[key])
    if text is None:
        raise PrecomputedError(f"{path}, line {line}: key {key!r} is {row[key]!r}; expected "
                               "a string or a number")
    return text


def _packed(row: Dict[str, Any], key: str, top_k: int, path: str, line: int) -> Tuple:
    """(key column, its value, other columns or None, class, class_id, score, top classes,
    top scores): a tuple and interned labels rather than a dict per key, for the memory of
    millions of keys. A regressor's value takes the score's place, with no class."""
    others = {k: v for k, v in row.items() if k not in ANSWER_FIELDS and k != key} or None
    if row.get("value") is not None and "class" not in row:
        return (key, row[key], others, None, None, row["value"], None, None)
    if row.get("class") is None or row.get("class_id") is None or row.get("score") is None:
        raise PrecomputedError(f"{path}, line {line}: not a prediction row (it needs class, "
                               f"class_id and score, or a regressor's value; found "
                               f"{sorted(row)})")
    tops = scores = None
    if top_k > 1:
        if len(row.get("top_classes") or []) < top_k:
            raise PrecomputedError(f"{path}, line {line}: {len(row.get('top_classes') or [])} "
                                   f"top classes, but the server answers top {top_k}: run "
                                   f"batch_predict with top_k={top_k}")
        tops = tuple(sys.intern(str(c)) for c in row["top_classes"][:top_k])
        scores = tuple(row["top_scores"][:top_k])
    return (key, row[key], others, sys.intern(str(row["class"])), row["class_id"],
            row["score"], tops, scores)


def _unpacked(packed: Tuple) -> Dict[str, Any]:
    key, value, others, label, class_id, score, tops, scores = packed
    if label is None:
        return {key: value, **(others or {}), "value": score}
    answer = {key: value, **(others or {}), "class": label, "class_id": class_id, "score": score}
    if tops is not None:
        answer["top_classes"], answer["top_scores"] = list(tops), list(scores)
    return answer



class Precomputed:
    """The current set and the thread that reloads it."""

    def __init__(self, uri: str, key: str, top_k: int, max_age_s: float = 0.0,
                 reload_s: float = 30.0):
        self.uri, self.key, self.top_k = uri, key, top_k
        self.max_age_s, self.reload_s = max_age_s, reload_s
        self.current = load(uri, key, top_k)  # a broken set stops the server at start
        log.info("precomputed: %d answers keyed by %s from %s (computed %s)",
                 len(self.current.answers), key, uri, self.current.computed_at_text)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._reload_loop, name="tfkfp-precomputed",
                                        daemon=True)
        if reload_s > 0:
            self._thread.start()

    def answer(self, instance: Any) -> Dict[str, Any] | None:
        """The precomputed answer for an instance, or None (no key, unknown, too old)."""
        current = self.current  # one read: a reload swaps the whole set
        if not isinstance(instance, dict):
            return None
        found = current.answers.get(key_text(instance.get(self.key)))
        if found is None or (self.max_age_s and time.time() - current.computed_at >
                             self.max_age_s):
            return None
        return {**_unpacked(found), "precomputed": True,
                "computed_at": current.computed_at_text}

    def reload(self) -> bool:
        """Swap in a newer set if the files changed; True when one was loaded."""
        try:
            if signature_of(predictions_files.find(self.uri)) == self.current.signature:
                return False
            newer = load(self.uri, self.key, self.top_k)
        except (OSError, ValueError) as err:  # PrecomputedError is a ValueError
            log.error("precomputed: keeping the %d answers of %s: %s",
                      len(self.current.answers), self.current.computed_at_text, err)
            return False
        self.current = newer
        freeze_heap()  # the new answers join the long-lived heap (see serve.heap)
        log.info("precomputed: reloaded %d answers (computed %s)", len(newer.answers),
                 newer.computed_at_text)
        return True

    def _reload_loop(self) -> None:
        while not self._stop.wait(self.reload_s):
            self.reload()

    def stop(self) -> None:
        self._stop.set()
