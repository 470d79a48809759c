"""A SavedModel's trained weights, to tell one trial's model from another's. saved_model.pb
alone will not do: it holds the graph, which two trials of one architecture can share byte
for byte; the weights live under variables/."""

from pathlib import Path


def saved_weights(model_dir):
    """Every file under the model's variables/ folder, by name: its bytes."""
    variables = Path(model_dir) / "variables"
    return {path.name: path.read_bytes() for path in sorted(variables.iterdir())}
