"""What a Predictor's answers mean: the checks on a top_k and on its outputs, and the top-k
ranking of a classifier's probabilities. batch_predict, serve and deploy_model rank classes
here, so a row gets the same classes in a batch, online and at the deploy step."""

import numpy as np

from tfkfp.components.common.model.predictor import ModelInputError, Predictor


def check_top_k(predictor: Predictor, top_k: int) -> None:
    """top_k is a classifier's: at most its classes; a regressor answers one value."""
    if predictor.regressor and top_k > 1:
        raise ModelInputError(f"top_k {top_k}: model {predictor.uri} is a regressor, which "
                              "predicts one value per row; top_k applies to classifiers")
    if not predictor.regressor and top_k > len(predictor.labels):
        raise ModelInputError(f"top_k {top_k} is more than the model's "
                              f"{len(predictor.labels)} classes")


def check_outputs(predictor: Predictor, outputs: np.ndarray) -> None:
    """A classifier's probabilities are [rows, classes]; a regressor's values [rows]."""
    if predictor.regressor:
        if outputs.ndim != 1 and (outputs.ndim != 2 or outputs.shape[1] != 1):
            raise ModelInputError(f"model {predictor.uri} is a regressor but returned "
                                  f"values of shape {list(outputs.shape)}, not one per row")
    elif outputs.ndim != 2 or outputs.shape[1] != len(predictor.labels):
        raise ModelInputError(
            f"model {predictor.uri} returned probabilities of shape "
            f"{list(outputs.shape)}, but it has {len(predictor.labels)} labels")


def top_k_of(probs: np.ndarray, k: int):
    """The k best class ids per row (ties: the lower id first) and their scores."""
    if k == 1:
        ids = np.argmax(probs, axis=1)[:, None]
    else:
        ids = np.argsort(-probs, axis=1, kind="stable")[:, :k]
    return ids.astype(np.int64), np.take_along_axis(probs, ids, axis=1).astype(np.float32)
