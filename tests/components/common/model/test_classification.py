import numpy as np
import pytest
from kfp import dsl

from tfkfp.components.common.model import classification
from tfkfp.components.common.model.classification import Accumulator, confusion_matrix, roc_curve


def test_confusion_matrix_counts_true_rows_against_predicted_columns():
    labels = np.array([0, 0, 1, 1, 1, 2])
    predicted = np.array([0, 1, 1, 1, 2, 0])
    assert confusion_matrix(labels, predicted, 3).tolist() == [[1, 1, 0],
                                                               [0, 2, 1],
                                                               [1, 0, 0]]


def test_confusion_matrix_refuses_an_id_outside_the_classes():
    with pytest.raises(ValueError, match=r"label id 3 at position 1 is outside the 3 classes"):
        confusion_matrix(np.array([0, 3]), np.array([0, 1]), 3)
    with pytest.raises(ValueError, match="predicted class id -1 at position 0"):
        confusion_matrix(np.array([0]), np.array([-1]), 3)
    with pytest.raises(ValueError, match="2 labels but 1 predictions"):
        confusion_matrix(np.array([0, 1]), np.array([1]), 2)


def test_roc_curve_has_one_point_per_distinct_score_after_the_origin():
    labels = np.array([1, 0, 1, 0, 1])
    scores = np.array([0.9, 0.8, 0.8, 0.3, 0.1])
    roc = roc_curve(labels, scores)
    # >= 0.9: 1 of 3 positives; >= 0.8: 2 of 3 and 1 of 2 negatives; >= 0.3: all negatives
    assert roc["tpr"] == [0.0, 1 / 3, 2 / 3, 2 / 3, 1.0]
    assert roc["fpr"] == [0.0, 0.0, 0.5, 1.0, 1.0]
    assert roc["thresholds"][1:] == [0.9, 0.8, 0.3, 0.1]
    assert roc["thresholds"][0] > 0.9


def test_roc_curve_is_thinned_to_max_points_keeping_both_ends():
    labels = np.arange(1000) % 2
    scores = np.linspace(0.0, 1.0, 1000)
    roc = roc_curve(labels, scores, max_points=11)
    assert len(roc["fpr"]) == len(roc["tpr"]) == len(roc["thresholds"]) == 11
    assert (roc["fpr"][0], roc["tpr"][0]) == (0.0, 0.0)
    assert (roc["fpr"][-1], roc["tpr"][-1]) == (1.0, 1.0)
    assert roc["thresholds"] == sorted(roc["thresholds"], reverse=True)


def test_roc_curve_is_none_when_one_side_is_absent():
    assert roc_curve(np.array([1, 1]), np.array([0.2, 0.7])) is None
    assert roc_curve(np.array([0, 0]), np.array([0.2, 0.7])) is None


def test_accumulator_adds_batches_and_draws_the_binary_curve():
    acc = Accumulator(["no", "yes"])
    acc.add(np.array([0, 1]), np.array([[0.9, 0.1], [0.4, 0.6]]))
    acc.add(np.array([1, 0]), np.array([[0.7, 0.3], [0.2, 0.8]]))
    summary = acc.summary()
    assert summary["classes"] == ["no", "yes"]
    assert summary["matrix"] == [[1, 1], [1, 1]]
    assert summary["examples"] == 4
    assert summary["roc"]["tpr"] == [0.0, 0.0, 0.5, 1.0, 1.0]
    assert summary["roc"]["fpr"] == [0.0, 0.5, 0.5, 0.5, 1.0]
    assert summary["notes"] == []


def test_accumulator_refuses_probabilities_of_the_wrong_width():
    with pytest.raises(ValueError, match=r"shape \(1, 3\), expected \(examples, 2\)"):
        Accumulator(["a", "b"]).add(np.array([0]), np.zeros((1, 3)))


def test_summary_leaves_out_a_matrix_over_max_classes_and_says_so():
    n = classification.MAX_CLASSES + 1
    summary = classification.summarise(np.array([0]), np.eye(n)[:1], range(n))
    assert summary["matrix"] is None and summary["roc"] is None
    assert any("confusion matrix left out" in note for note in summary["notes"])
    assert summary["classes"][:3] == ["0", "1", "2"]


def test_log_to_writes_what_the_kfp_ui_reads():
    artifact = dsl.ClassificationMetrics(name="classification")
    summary = classification.summarise(np.array([0, 1, 1]),
                                       np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]]),
                                       ["cat", "dog"])
    classification.log_to(artifact, summary)
    matrix = artifact.metadata["confusionMatrix"]
    assert [spec["displayName"] for spec in matrix["annotationSpecs"]] == ["cat", "dog"]
    assert [row["row"] for row in matrix["rows"]] == [[1, 0], [1, 1]]
    points = artifact.metadata["confidenceMetrics"]
    assert [(p["falsePositiveRate"], p["recall"]) for p in points] == [
        (0.0, 0.0), (0.0, 0.5), (0.0, 1.0), (1.0, 1.0)]
    assert artifact.metadata["examples"] == 3


def test_log_to_writes_no_curve_for_three_classes():
    artifact = dsl.ClassificationMetrics(name="classification")
    classification.log_to(artifact, classification.summarise(
        np.array([0, 1, 2]), np.eye(3), ["a", "b", "c"]))
    assert "confidenceMetrics" not in artifact.metadata
    assert len(artifact.metadata["confusionMatrix"]["rows"]) == 3
    assert artifact.metadata["notes"] == ["ROC curve drawn for two classes only; there are 3"]
