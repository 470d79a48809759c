"""What a ``checkpoint_dir`` was trained on, so that a rerun resumes only the run it belongs to.

The chief writes ``tfkfp_checkpoint.json`` into the folder before the first epoch: the
Dataset's fingerprint, the schema as the model sees it, and the settings that shape the
weights or give them their meaning (``CHECKPOINT_SETTINGS``). A later run on the same folder
compares its own record with it. Same record: it resumes at the next epoch (raising
``epochs`` continues a finished run). Another record while checkpoints are kept: it is
refused with CheckpointMismatch, naming the folder, what differs and the remedy; starting
over silently (or in a subfolder) would hide that two runs share one folder. A record with no
checkpoint beside it binds nothing and is replaced.

The fingerprint hashes the manifest's shard entries (records, bytes, CRC32C) and compression,
not the Dataset's path: KFP gives every run's artifact a new path, and the same data sharded
again has the same checksums. Reading the manifest costs one small file, not the data.
"""

import hashlib
import json
import logging
from typing import Any, Dict, List

from tfkfp.components.common.data.dataset import SPLITS, Manifest
from tfkfp.components.common.data.schema import Column, Schema
from tfkfp.components.common.platform import uris
from tfkfp.components.common.training import tasks
from tfkfp.components.common.training.config import TrainConfig
from tfkfp.components.train.errors import CheckpointMismatch

RECORD_FILE = "tfkfp_checkpoint.json"
RECORD_VERSION = 1
# The settings a checkpoint_dir records, besides the model (model_fn or model_name): those
# that change the weights' shapes or meaning, or the optimizer and loss scale state kept with
# them. A rerun may change the others (epochs to continue, batch size, learning rate,
# strategy and cluster shape after a preemption) and still resume.
CHECKPOINT_SETTINGS = ("hidden_units", "task", "loss", "optimizer", "precision")
log = logging.getLogger("tfkfp")


def expected(config: TrainConfig) -> Dict[str, Any]:
    """The record this run writes: its Dataset, schema and model settings."""
    manifest = Manifest.load(config.dataset)
    schema = Schema.load(config.dataset)
    task = tasks.resolve(schema, config.task)
    settings = {"model": config.model_fn or config.model_name,
                **{name: getattr(config, name) for name in CHECKPOINT_SETTINGS}}
    # Defaults resolved, so "auto" and the task it picks (or "" and the loss it means) agree.
    settings.update(task=task, loss=tasks.check_loss(task, config.loss))
    record = {"version": RECORD_VERSION,
              "dataset": {"fingerprint": fingerprint(manifest), "uri": config.dataset,
                          "records": {s: manifest.records(s) for s in SPLITS}},
              "schema": model_schema(schema), "settings": settings}
    return json.loads(json.dumps(record))  # tuples as lists, as read back from the file


def fingerprint(manifest: Manifest) -> str:
    """SHA-256 of the shards' contents as the manifest lists them (where a shard has no
    CRC32C, its file name stands in for it)."""
    shards = {split: [[s["records"], s.get("bytes"), s.get("crc32c") or s["file"]]
                      for s in manifest.split(split)["shards"]] for split in SPLITS}
    body = json.dumps({"compression": manifest.compression, "shards": shards},
                      sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def model_schema(schema: Schema) -> Dict[str, Any]:
    """The schema as the weights see it: features and label with dtypes, shapes and
    vocabularies; not keys, gap counts or the record layout, which no weight depends on."""
    label = schema.label
    return {"features": {c.name: _column(c) for c in schema.features},
            "label": {"name": label.name, **_column(label)} if label else None}


def _column(column: Column) -> Dict[str, Any]:
    out: Dict[str, Any] = {"dtype": column.dtype, "shape": list(column.shape)}
    if column.image_shape:
        out["image_shape"] = list(column.image_shape)
    if column.vocabulary is not None:
        out["vocabulary"] = list(column.vocabulary)
    return out


def check(config: TrainConfig) -> Dict[str, Any]:
    """Refuse a run whose record differs from the one kept with checkpoints in
    ``config.checkpoint_dir``; return this run's record."""
    record = expected(config)
    folder = config.checkpoint_dir
    stored = load(folder)
    if stored is not None and has_checkpoints(folder):
        changes = differences(stored, record)
        if changes:
            raise CheckpointMismatch(
                f"checkpoint_dir {folder} keeps the checkpoints of another run, so this one "
                f"does not resume from them. It differs in: {'; '.join(changes)}. Give this "
                f"run a new checkpoint_dir, or empty {folder} to start over there (what it "
                f"was trained on: {uris.join(folder, RECORD_FILE)})")
    return record


def save(folder: str, record: Dict[str, Any]) -> None:
    """Record this run in ``folder`` (the chief only, once its checkpoint, if any, has been
    restored: a folder whose checkpoints fail to restore keeps what it had)."""
    stored = load(folder)
    if stored == record:
        return
    if stored is None and has_checkpoints(folder):
        log.warning("checkpoint_dir %s has checkpoints but no %s (an earlier tfkfp wrote "
                    "them); they fit this model, so this run resumes from them without "
                    "checking their data, and records its own from now on", folder,
                    RECORD_FILE)
    uris.makedirs(folder)
    uris.write_text_atomic(uris.join(folder, RECORD_FILE), json.dumps(record, indent=2) + "\n")


def load(folder: str) -> Dict[str, Any] | None:
    """The record kept in ``folder``; None when there is none."""
    path = uris.join(folder, RECORD_FILE)
    return json.loads(uris.read_text(path)) if uris.exists(path) else None


def has_checkpoints(folder: str) -> bool:
    """Whether ``folder`` has a checkpoint to resume from (its ``checkpoint`` index names one)."""
    import tensorflow as tf

    return bool(tf.train.latest_checkpoint(folder))


def differences(stored: Dict[str, Any], record: Dict[str, Any]) -> List[str]:
    """What differs between two records, each as 'what: recorded ..., this run ...'."""
    changes = []
    old, new = stored.get("dataset", {}), record["dataset"]
    if old.get("fingerprint") != new["fingerprint"]:
        changes.append(f"the Dataset: recorded {_dataset_text(old)}, this run "
                       f"{_dataset_text(new)}")
    changes += _schema_differences(stored.get("schema", {}), record["schema"])
    old_settings = stored.get("settings", {})
    changes += [f"setting {name}: recorded {_short(old_settings.get(name))}, this run "
                f"{_short(value)}"
                for name, value in record["settings"].items()
                if old_settings.get(name) != value]
    return changes


def _dataset_text(dataset: Dict[str, Any]) -> str:
    records = dataset.get("records", {})
    counts = ", ".join(f"{records[s]} {s}" for s in SPLITS if s in records)
    return (f"fingerprint {str(dataset.get('fingerprint'))[:12]} ({dataset.get('uri')}, "
            f"{counts} records)")


def _schema_differences(old: Dict[str, Any], new: Dict[str, Any]) -> List[str]:
    changes = []
    before, after = old.get("features", {}), new["features"]
    for what, names in (("added", [n for n in after if n not in before]),
                        ("removed", [n for n in before if n not in after]),
                        ("changed", [n for n in after if n in before
                                     and before[n] != after[n]])):
        if names:
            more = f" and {len(names) - 5} more" if len(names) > 5 else ""
            changes.append(f"the schema: features {what}: {names[:5]}{more}")
    if old.get("label") != new["label"]:
        changes.append(f"the schema's label: recorded {_short(old.get('label'))}, this run "
                       f"{_short(new['label'])}")
    return changes


def _short(value: Any, limit: int = 200) -> str:
    """``value`` as text, cut where it runs long (a label may have thousands of classes)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
