"""The per-epoch history kept beside the checkpoints survives a kill at any point."""

import json

import pytest

from tfkfp.components.train.callbacks import EpochCheckpoint, load_history


class KilledDuringSave:
    """A checkpoint manager whose process dies while saving."""

    def save(self, checkpoint_number):
        raise KeyboardInterrupt(f"killed while saving checkpoint {checkpoint_number}")


class Counter:
    def assign(self, value):
        self.value = value


def test_a_kill_while_saving_the_checkpoint_leaves_the_history_complete(tmp_path):
    path = str(tmp_path / "history.json")
    history = {"loss": [0.5, 0.4]}
    callback = EpochCheckpoint(KilledDuringSave(), Counter(), history, path)
    with pytest.raises(KeyboardInterrupt):
        callback.on_epoch_end(2, {"loss": 0.3})
    assert json.load(open(path))["loss"] == [0.5, 0.4, 0.3]
    # The resumed run starts from the checkpoint of epoch 2 and keeps its first 2 entries.
    assert load_history(path, 2) == {"loss": [0.5, 0.4]}
