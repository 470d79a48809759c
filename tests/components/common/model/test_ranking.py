"""The ranking and output checks every caller of a Predictor shares (common.model.ranking):
top-k with ties by class id, and ModelInputError naming a top_k or outputs that do not fit
the model."""

import numpy as np
import pytest

from tfkfp.components.common.model.predictor import ModelInputError, Predictor
from tfkfp.components.common.model.ranking import check_outputs, check_top_k, top_k_of


def _predictor(task="classification", labels=("a", "b", "c")):
    return Predictor("savedmodel", "m", {}, list(labels) if task == "classification" else [],
                     predict=lambda features: None, task=task)


def test_top_k_orders_ties_by_class_id():
    ids, scores = top_k_of(np.array([[0.25, 0.5, 0.25]], np.float32), 3)
    assert ids.tolist() == [[1, 0, 2]] and scores.tolist() == [[0.5, 0.25, 0.25]]


def test_a_top_k_the_model_cannot_give_is_refused():
    check_top_k(_predictor(), 3)
    with pytest.raises(ModelInputError, match="top_k 4 is more than the model's 3 classes"):
        check_top_k(_predictor(), 4)
    check_top_k(_predictor("regression"), 1)
    with pytest.raises(ModelInputError, match="top_k 2: model m is a regressor, which "
                                              "predicts one value per row"):
        check_top_k(_predictor("regression"), 2)


def test_outputs_of_the_wrong_shape_are_refused():
    check_outputs(_predictor(), np.zeros((4, 3), np.float32))
    with pytest.raises(ModelInputError, match=r"probabilities of shape \[4, 2\], but it has 3 "
                                              "labels"):
        check_outputs(_predictor(), np.zeros((4, 2), np.float32))
    for good in (np.zeros(4), np.zeros((4, 1))):
        check_outputs(_predictor("regression"), good)
    with pytest.raises(ModelInputError, match=r"regressor but returned values of shape "
                                              r"\[4, 2\], not one per row"):
        check_outputs(_predictor("regression"), np.zeros((4, 2)))
