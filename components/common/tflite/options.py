"""What a quantization request is refused for before any model is loaded: its error class and
the input mapping's form. Nothing here imports NumPy or TensorFlow, so the pipelines refuse a
bad request before a run in the time a typo deserves."""

import json
from typing import Dict

# how a bundle's model takes a tabular row (common.tflite.packing): one input per dtype block
# of scalar numeric columns, or one input per column as the SavedModel's signature takes them
PACKED, COLUMNS = "packed", "columns"
INPUT_LAYOUTS = (PACKED, COLUMNS)


class QuantizeInputError(ValueError):
    """Bad input or options: the message names the path, signature, column or value."""


def check_input_layout(input_layout: str) -> None:
    if input_layout not in INPUT_LAYOUTS:
        raise QuantizeInputError(f"input_layout {input_layout!r} is not one of "
                                 f"{', '.join(INPUT_LAYOUTS)} (packed: one [batch, n] input "
                                 "per dtype of the numeric columns; columns: one input per "
                                 "column)")


def parse_mapping(input_mapping: str | Dict[str, str] | None) -> Dict[str, str]:
    """``input_mapping`` as a dict; JSON text (as a pipeline passes it) is parsed."""
    mapping = input_mapping
    if not mapping:
        return {}
    if isinstance(mapping, str):
        try:
            mapping = json.loads(mapping)
        except json.JSONDecodeError as err:
            raise QuantizeInputError(f"input_mapping {mapping!r} is not JSON: {err}; expected "
                                     'an object like {"input_1": "image"}') from err
    if not isinstance(mapping, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
        raise QuantizeInputError(f"input_mapping {mapping!r}: expected an object of signature "
                                 "input name -> Dataset column name, both strings")
    return dict(mapping)
