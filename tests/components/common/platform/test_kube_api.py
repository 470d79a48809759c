"""Undoing a step's work while its own error is on its way: logged, never raised."""

import logging

import pytest
from kubernetes.client.exceptions import ApiException

from tfkfp.components.common.platform.kube_api import undoing

log = logging.getLogger("test.undoing")


@pytest.mark.parametrize("error, logged", [
    (ApiException(status=500, reason="Internal Server Error"),
     "could not delete TFJob team/j: Internal Server Error"),
    (ConnectionResetError("reset by peer"), "could not delete TFJob team/j: "),
    (ApiException(status=404, reason="Not Found"), None),  # already gone: nothing to undo
])
def test_a_failed_undo_is_logged_not_raised(error, logged, caplog):
    with caplog.at_level(logging.WARNING, logger="test.undoing"), \
            undoing("delete TFJob team/j", log):
        raise error
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == (0 if logged is None else 1)
    assert all(m.startswith(logged) for m in messages)


def test_a_missing_object_is_a_failure_where_it_had_to_be_there(caplog):
    with caplog.at_level(logging.WARNING, logger="test.undoing"), \
            undoing("put back the previous spec", log, missing_ok=False):
        raise ApiException(status=404, reason="Not Found")
    assert [r.getMessage() for r in caplog.records] == [
        "could not put back the previous spec: Not Found"]


def test_the_steps_interruption_is_not_swallowed():
    with pytest.raises(KeyboardInterrupt), undoing("delete", log):
        raise KeyboardInterrupt
