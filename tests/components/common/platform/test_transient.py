"""Storage calls retry, inside the step, only the faults another attempt may cure; anything
else (a missing object, a gs:// input without credentials) is raised at once, not retried
for 70 s as KFP's set_retry did. Nothing here waits: sleeping is recorded."""

import time

import pytest

from tfkfp.components.common.platform import object_store, transient, uris


class Calls:
    """A storage call: each item of the script is raised if an exception, else returned."""

    def __init__(self, *script):
        self.script, self.count = list(script), 0

    def __call__(self, *args):
        self.count += 1
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item


def tf_error(name):
    import tensorflow as tf

    return getattr(tf.errors, name)(None, None, f"a {name}")


S3_NETWORK = OSError("When getting information for key 'x.csv' in bucket 'b': AWS Error "
                     "NETWORK_CONNECTION during HeadObject operation: curlCode: 7")
S3_DENIED = OSError("When getting information for key 'x.csv' in bucket 'b': AWS Error "
                    "ACCESS_DENIED during HeadObject operation: No response body.")


@pytest.mark.parametrize("fault", [
    S3_NETWORK, ConnectionResetError("reset by peer"), TimeoutError("timed out"),
    OSError("AWS Error SLOW_DOWN during ListObjectsV2 operation: Please reduce your rate"),
    "UnavailableError", "DeadlineExceededError", "ResourceExhaustedError"])
def test_transient_faults_are_retried_with_backoff(fault):
    fault = tf_error(fault) if isinstance(fault, str) else fault
    slept = []
    call = Calls(fault, fault, 42)
    assert transient.call("size s3://b/x.csv", call, sleep=slept.append) == 42
    assert call.count == 3 and slept == [2.0, 4.0]


@pytest.mark.parametrize("error", [
    S3_DENIED, FileNotFoundError("s3://b/x.csv: no such object"), ValueError("bad pattern"),
    "FailedPreconditionError", "PermissionDeniedError", "NotFoundError",
    "UnimplementedError"])
def test_anything_else_is_raised_at_once(error):
    error = tf_error(error) if isinstance(error, str) else error
    slept = []
    call = Calls(error)
    with pytest.raises(type(error)):
        transient.call("size s3://b/x.csv", call, sleep=slept.append)
    assert call.count == 1 and slept == []


def test_it_gives_up_naming_the_call_the_attempts_and_the_last_fault():
    slept = []
    with pytest.raises(transient.StorageGaveUp, match=r"gave up on glob s3://b/\*\.csv: 5 "
                       r"attempts in a row failed with transient faults; the last: "
                       r"OSError: .*NETWORK_CONNECTION"):
        transient.call("glob s3://b/*.csv", Calls(*[S3_NETWORK] * 5), sleep=slept.append)
    assert slept == [2.0, 4.0, 8.0, 16.0]


def test_remote_lookups_survive_a_blip_and_local_ones_are_not_wrapped(monkeypatch, tmp_path):
    monkeypatch.setattr(transient, "FIRST_WAIT_SECONDS", 0.001)
    flaky = Calls(S3_NETWORK, 7)
    monkeypatch.setattr(object_store, "size", flaky)
    assert uris.size("s3://b/x.csv") == 7 and flaky.count == 2
    denied = Calls(S3_DENIED)
    monkeypatch.setattr(object_store, "exists", denied)
    with pytest.raises(OSError, match="ACCESS_DENIED"):
        uris.exists("s3://b/x.csv")
    assert denied.count == 1
    (tmp_path / "a").write_text("abc")
    assert uris.size(str(tmp_path / "a")) == 3


def test_a_gs_input_without_credentials_is_refused_at_once_naming_it():
    """On this machine (no credentials, no route to Google) TensorFlow answers
    FailedPrecondition; with a route, PermissionDenied. Neither is retried."""
    import tensorflow  # noqa: F401 - imported before the clock starts

    from tfkfp.components.shard_tfrecords.errors import ShardInputError
    from tfkfp.components.shard_tfrecords.sources import fingerprint

    started = time.monotonic()
    with pytest.raises(ShardInputError, match=r"input_uri 'gs://tfkfp-no-such-bucket/in/\*"
                       r"\.csv' could not be read: .*; check that this step reaches the store "
                       "and has credentials for it"):
        fingerprint("gs://tfkfp-no-such-bucket/in/*.csv")
    assert time.monotonic() - started < 5
