"""``tfkfp stream`` as a user runs it, against the Pub/Sub emulator: Ctrl-C stops it cleanly
with its counts, and a SIGKILL loses at most the messages the local runner had pulled, which
a restart does not see again (the DirectRunner acknowledges on pull)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from beam_table import HEADER, rows
from pubsub_emulator import (
    publish,
    pull_all,
    topic_with_subscription,
)

pytestmark = pytest.mark.slow
PULL_AT_ONCE = 10  # messages the DirectRunner pulls and acknowledges at a time
PULLS_IN_FLIGHT = 2  # its read bundle's pull, and the one before it still being predicted


def _bodies(count, first_id):
    table = [dict(zip(HEADER, r)) for r in rows(count, 5, first_id=first_id)]
    for row in table:
        row.update({k: None for k in ("mean radius", "a.b[0]") if row[k] == ""})
    return [json.dumps(r).encode() for r in table]


def _stream(model, subscription, out, dead, *more):
    return subprocess.Popen(
        [sys.executable, "-m", "tfkfp.cli.main", "stream", *([model] if model else []),
         "--subscription",
         subscription, "--output-topic", out, "--dead-letter-topic", dead,
         "--keys", "row id", "--drain", "20", *more],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


def _wait_for_output(subscription, at_least, timeout=120):
    found, deadline = [], time.monotonic() + timeout
    while len(found) < at_least and time.monotonic() < deadline:
        found += pull_all(subscription, expected=at_least - len(found), timeout=5)
    return found


def test_ctrl_c_stops_the_stream_with_its_counts(pubsub_emulator, beam_table):
    rows_in, subscription = topic_with_subscription("ctrlc-rows")
    out, out_sub = topic_with_subscription("ctrlc-predictions")
    dead, _dead_sub = topic_with_subscription("ctrlc-dead")
    publish(rows_in, _bodies(12, 100))
    process = _stream(beam_table.model, subscription, out, dead)
    first = _wait_for_output(out_sub, 12)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr[-3000:]
    assert len(first) == 12
    last = stdout.strip().splitlines()[-1]
    assert last.startswith("12 messages in, 12 predicted, 0 dead-lettered, 0 may be "
                           "unfinished (signal"), last


def test_a_killed_stream_loses_at_most_its_pulls_in_flight_and_a_restart_goes_on(
        pubsub_emulator, beam_table):
    rows_in, subscription = topic_with_subscription("kill-rows")
    out, out_sub = topic_with_subscription("kill-predictions")
    dead, dead_sub = topic_with_subscription("kill-dead")
    published = 60
    publish(rows_in, _bodies(published, 1000))
    process = _stream(beam_table.model, subscription, out, dead)
    before = _wait_for_output(out_sub, 15)
    process.kill()
    process.wait(timeout=30)
    restarted = _stream(beam_table.model, subscription, out, dead, "--duration", "40")
    stdout, stderr = restarted.communicate(timeout=300)
    assert restarted.returncode == 0, stderr[-3000:]
    after = pull_all(out_sub, timeout=20)
    letters = pull_all(dead_sub, timeout=5)
    left = pull_all(subscription, timeout=10)  # published, never pulled
    answered = {json.loads(m.data)["row id"] for m in before + after}
    lost = published - len(answered) - len(letters) - len(left)
    print(f"published {published}: {len(answered)} answered, {len(left)} left, {lost} lost "
          "with the killed runner's pulls")
    assert not letters and 0 <= lost <= PULLS_IN_FLIGHT * PULL_AT_ONCE, (len(answered), lost)


def test_a_stream_through_a_served_model_needs_no_model_folder(pubsub_emulator, beam_table,
                                                               tmp_path):
    """The columns come from the endpoint's metadata; each prediction names the endpoint."""
    from serve_process import running

    rows_in, subscription = topic_with_subscription("served-rows")
    out, out_sub = topic_with_subscription("served-predictions")
    dead, _dead_sub = topic_with_subscription("served-dead")
    publish(rows_in, _bodies(9, 300))
    with running(beam_table.model, tmp_path=tmp_path) as server:
        url = f"http://127.0.0.1:{server.port}"
        process = _stream("", subscription, out, dead, "--endpoint-url", url,
                          "--max-messages", "9")
        stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr[-3000:]
    assert stdout.strip().splitlines()[-1].startswith("9 messages in, 9 predicted, 0 "
                                                      "dead-lettered"), stdout
    answers = pull_all(out_sub, expected=9)
    assert {m.attributes["model"] for m in answers} == {f"{url}/v2/models/model/infer"}
    assert {json.loads(m.data)["row id"] for m in answers} == set(range(300, 309))


def test_a_stream_without_a_model_or_an_endpoint_is_a_usage_error():
    process = _stream("", "projects/local-project/subscriptions/rows",
                      "projects/local-project/topics/out", "projects/local-project/topics/dead")
    _stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 2
    assert "give a model, or --endpoint-url" in stderr

