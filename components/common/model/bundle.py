"""The TFLite bundle contract: the folder export_tflite writes and everyone else reads.

A bundle holds ``model.tflite`` (converted from the SavedModel's ``serving_raw`` signature),
``signature.json`` (inputs, outputs, how each input is fed, the model's ``task``),
``validation.json`` (the figures of the export gate), ``schema.json`` (the columns the model
was trained on: keys, label, features) and, for a classifier with class names, ``labels.txt``
(one per line). This module is the one place that names those files and reads them back:
export_tflite writes a bundle through ``Bundle.write``, the Predictor reads one through
``Bundle``, and ``kind_of`` is the one answer to "a SavedModel or a bundle?".
"""

import dataclasses
import json
from typing import Dict, List, Sequence

from tfkfp.components.common.data.schema import SCHEMA_FILE, Schema
from tfkfp.components.common.model import savedmodel
from tfkfp.components.common.platform import uris

MODEL_FILE = "model.tflite"
SIGNATURE_FILE = "signature.json"
VALIDATION_FILE = "validation.json"
LABELS_FILE = "labels.txt"
FILES = (MODEL_FILE, SIGNATURE_FILE, VALIDATION_FILE, SCHEMA_FILE, LABELS_FILE)
SAVEDMODEL, TFLITE = "savedmodel", "tflite"  # the two kinds of model folder


class BundleError(ValueError):
    """A bundle file that cannot be read as export_tflite writes it; the message names it."""


def kind_of(model_uri: str) -> str:
    """SAVEDMODEL (a folder with saved_model.pb), TFLITE (a bundle folder with model.tflite)
    or "" (neither, or not a folder)."""
    if savedmodel.is_savedmodel(model_uri):
        return SAVEDMODEL
    if uris.isdir(model_uri) and uris.exists(uris.join(model_uri, MODEL_FILE)):
        return TFLITE
    return ""


def neither(model_uri: str) -> str:
    """What a folder that is neither kind holds, for an error message."""
    found = uris.listdir(model_uri)[:10] if uris.isdir(model_uri) else "a file"
    return (f"model {model_uri} holds neither {savedmodel.SAVEDMODEL_FILE} (a SavedModel) nor "
            f"{MODEL_FILE} (a TFLite bundle); it has {found}")


def task_in(signature: Dict | None) -> str | None:
    """The task a bundle's signature.json records: classification or regression; None where it
    records none (a bundle written before it did, no signature.json, or outputs of neither
    kind: export_tflite's "other")."""
    task = (signature or {}).get("task")
    return task if task in savedmodel.TASKS else None


@dataclasses.dataclass(frozen=True)
class Bundle:
    """A bundle folder; each reader reads its file when asked (a file absent: None)."""

    folder: str

    @classmethod
    def of_model_file(cls, path: str) -> "Bundle":
        """The bundle a ``.tflite`` file lies in: the files beside it."""
        return cls(path.rpartition("/")[0] or ".")

    def path(self, name: str) -> str:
        return uris.join(self.folder, name)

    def signature(self) -> Dict | None:
        path = self.path(SIGNATURE_FILE)
        if not uris.exists(path):
            return None
        try:
            body = json.loads(uris.read_text(path))
        except ValueError as err:
            raise BundleError(f"{path}: not JSON ({err}); expected the {SIGNATURE_FILE} "
                              "export_tflite writes") from err
        if not isinstance(body, dict):
            raise BundleError(f"{path}: a {type(body).__name__}, not an object; expected the "
                              f"{SIGNATURE_FILE} export_tflite writes")
        return body

    def task(self) -> str | None:
        """classification or regression, as export_tflite recorded it in signature.json; None
        for a bundle that does not say (see ``task_in``)."""
        return task_in(self.signature())

    def schema(self) -> Schema | None:
        """The columns the model was trained on (bundles written before it: None)."""
        path = self.path(SCHEMA_FILE)
        return Schema.load(path) if uris.exists(path) else None

    def labels(self, labels_uri: str = "") -> List[str] | None:
        """Class names from ``labels_uri``, else the bundle's labels.txt; None without one."""
        path = labels_uri or self.path(LABELS_FILE)
        if not uris.exists(path):
            return None
        return [line for line in uris.read_text(path).splitlines() if line]

    @classmethod
    def write(cls, folder: str, content: bytes, signature: Dict, validation: Dict,
              labels: Sequence[str] = (), schema: Schema | None = None) -> "Bundle":
        """Publish the bundle's files into ``folder``, all at once; with ``schema``, a server
        or batch prediction can tell a row's key and label columns (echoed, ignored) from
        the model's inputs."""
        out = {MODEL_FILE: content,
               SIGNATURE_FILE: (json.dumps(signature, indent=2) + "\n").encode(),
               VALIDATION_FILE: (json.dumps(validation, indent=2) + "\n").encode()}
        if schema is not None:
            out[SCHEMA_FILE] = schema.to_json().encode()
        if labels:
            out[LABELS_FILE] = ("\n".join(labels) + "\n").encode()
        uris.publish_dir(out, folder)
        return cls(folder)
