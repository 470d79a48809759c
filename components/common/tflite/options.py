"""What a quantization request is refused for before any model is loaded: its error class and
the input mapping's form. Nothing here imports NumPy or TensorFlow, so the pipelines refuse a
bad request before a run in the time a typo deserves."""

import json
from typing import Dict


class QuantizeInputError(ValueError):
    """Bad input or options: the message names the path, signature, column or value."""


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
