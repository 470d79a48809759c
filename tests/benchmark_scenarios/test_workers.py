"""The workers benchmark's pieces: a learnable image Dataset and medians that count a
target never reached as never."""

import math

import numpy as np
from PIL import Image

from benchmarks import workers


def test_the_generated_images_are_one_folder_per_class_and_tell_the_classes_apart(tmp_path):
    folder = workers.write_images(str(tmp_path / "images"), 40)
    classes = sorted(p.name for p in (tmp_path / "images").iterdir())
    assert classes == [f"c{c}" for c in range(workers.CLASSES)]
    assert all(len(list((tmp_path / "images" / c).iterdir())) == 4 for c in classes)
    image = np.asarray(Image.open(f"{folder}/c0/0.png"))
    assert image.shape == (workers.IMAGE_SIZE, workers.IMAGE_SIZE, 3)

    def stripes_across(c: int) -> float:
        """How much more the image varies across than down (column means average the noise
        out of a profile across; row means, down)."""
        pixels = np.asarray(Image.open(f"{folder}/c{c}/{c}.png"), dtype=float).mean(axis=2)
        return pixels.mean(axis=0).std() / pixels.mean(axis=1).std()

    assert all(stripes_across(c) > 3 for c in range(5))  # classes 0-4 vary across
    assert all(stripes_across(c) < 1 / 3 for c in range(5, 10))  # classes 5-9 down


def test_a_target_not_reached_counts_as_never_in_the_median():
    run = {"examples_per_second": 10.0, "mean_step_ms": 5.0, "eval_accuracy": 0.9}
    runs = [{**run, "seconds_to_target": s} for s in (12.0, None, None)]
    assert math.isinf(workers.median_figures(runs)["seconds_to_target"])
    runs[1]["seconds_to_target"] = 14.0
    assert workers.median_figures(runs)["seconds_to_target"] == 14.0
