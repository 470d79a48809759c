"""fingerprint_input fails at once on an error that cannot change, and retries inside the step
only the storage faults that may pass (KFP's set_retry reran it whatever the error: 75-104 s
of backoff for a missing file or an unsupported pattern)."""

import time

import pytest
from kfp import dsl

from tfkfp.cli import local_run
from tfkfp.pipelines.fan_out import fingerprinted


@dsl.pipeline(name="fingerprint-only")
def fingerprint_only(input_uri: str) -> str:
    return fingerprinted(input_uri, "auto").output


@pytest.mark.parametrize("pattern, message", [
    ("{tmp}/in/*.csv", "no files match the pattern {tmp}/in/*.csv"),
    ("{tmp}/in/*", "cannot tell the input format from the file extensions ['.txt']"),
])
def test_a_permanent_error_fails_the_step_once_within_seconds(pattern, message, tmp_path):
    pattern, message = pattern.format(tmp=tmp_path), message.format(tmp=tmp_path)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "notes.txt").write_text("not a table")
    started = time.monotonic()
    with pytest.raises(local_run.TaskFailed) as failed:
        local_run.run_pipeline(fingerprint_only, {"input_uri": pattern}, str(tmp_path / "root"))
    assert time.monotonic() - started < 5
    assert message in str(failed.value)
    log = open(failed.value.record.log).read()
    assert log.count("ShardInputError:") == 1, log[-2000:]  # one attempt, not four

