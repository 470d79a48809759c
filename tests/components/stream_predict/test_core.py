"""stream_predict against the real Pub/Sub emulator and Beam's streaming DirectRunner: each
row answered as batch_predict answers it, one dead letter per bad row naming why, nothing
unaccounted, and a stream that cannot start refused before any work."""

import json

import pytest
from beam_table import HEADER, assert_answers_as_batch_predict, rows
from pubsub_emulator import (
    PROJECT,
    publish,
    pull_all,
    topic_with_subscription,
)

from tfkfp.components.common.model.version import answered_version
from tfkfp.components.stream_predict.core import stream_predict
from tfkfp.components.stream_predict.errors import StreamInputError
from tfkfp.components.stream_predict.options import StreamOptions

pytestmark = pytest.mark.slow


def _table():
    table = [dict(zip(HEADER, r)) for r in rows(40, 31, first_id=9000)]
    for row in table:  # a JSON gap is null
        row.update({k: None for k in ("mean radius", "a.b[0]") if row[k] == ""})
    return table


def _topics(name):
    rows_in, subscription = topic_with_subscription(f"{name}-rows")
    out, out_sub = topic_with_subscription(f"{name}-predictions")
    dead, dead_sub = topic_with_subscription(f"{name}-dead")
    return rows_in, subscription, out, out_sub, dead, dead_sub


def test_a_stream_answers_as_batch_predict_and_dead_letters_each_bad_row(
        pubsub_emulator, beam_table, tmp_path):
    rows_in, subscription, out, out_sub, dead, dead_sub = _topics("answers")
    table = _table()
    table[4]["mean radius"] = "inf"  # a non-finite value
    del table[7]["colour"]  # a column missing
    bodies = [json.dumps(r).encode() for r in table[:30]]
    bodies.append(json.dumps(table[30:]).encode())  # one message, ten rows
    bodies.append(b"{not json")
    ids = publish(rows_in, bodies, {"source": "test"})
    options = StreamOptions(subscription, out, dead, keys=["row id"], top_k=2,
                             max_messages=len(bodies), drain_s=30)
    result = stream_predict(beam_table.model, options, "direct")
    predictions = pull_all(out_sub, expected=result.predicted)
    letters = pull_all(dead_sub, expected=result.dead_lettered)
    assert (result.messages, result.rows) == (32, 41)
    assert (result.predicted, result.dead_lettered, result.unfinished) == (38, 3, 0)
    assert (len(predictions), len(letters)) == (38, 3)
    reasons = sorted(json.loads(m.data)["reason"] for m in letters)
    assert "finite" in reasons[0] and "'mean radius'" in reasons[0]
    assert "missing column(s) ['colour']" in reasons[1]
    assert reasons[2].startswith("the message is not JSON")
    bad_ids = {json.loads(m.data)["message_id"] for m in letters}
    assert bad_ids == {ids[4], ids[7], ids[31]}
    got = {json.loads(m.data)["row id"]: m for m in predictions}
    assert {m.attributes["source"] for m in predictions} == {"test"}
    assert {m.attributes["model"] for m in predictions} == {beam_table.model}
    assert {m.attributes["model_version"] for m in predictions} == {
        answered_version(beam_table.model)} and answered_version(beam_table.model)
    assert got[9035].attributes["message_id"] == ids[30]
    assert got[9035].attributes["row"] == "5"
    good = [r for i, r in enumerate(table) if i not in (4, 7)]
    assert_answers_as_batch_predict(beam_table.model, good,
                                    {k: json.loads(m.data) for k, m in got.items()}, tmp_path)


def test_a_subscription_or_topic_that_does_not_exist_is_refused_before_any_work(
        pubsub_emulator, beam_table):
    rows_in, subscription, out, _out_sub, dead, _dead_sub = _topics("missing")
    absent_sub = f"projects/{PROJECT}/subscriptions/no-such-rows"
    with pytest.raises(StreamInputError, match=f"subscription {absent_sub} does not exist"):
        stream_predict(beam_table.model, StreamOptions(absent_sub, out, dead, max_messages=1),
                       "direct")
    absent_topic = f"projects/{PROJECT}/topics/no-such-dead"
    with pytest.raises(StreamInputError, match=f"dead_letter_topic {absent_topic} does not"):
        stream_predict(beam_table.model, StreamOptions(subscription, out, absent_topic,
                                                        max_messages=1), "direct")


@pytest.mark.parametrize("change,message", [
    ({"subscription": "rows-sub"}, "expected projects/PROJECT/subscriptions/NAME"),
    ({"output_topic": "projects/local-project/topics/x"}, "expected projects/PROJECT/topics"),
    ({"dead_letter_topic": "projects/local-project/topics/preds"}, "are the same topic"),
    ({"max_messages": -1}, "max_messages -1 is below 0"),
    ({"top_k": 0}, "top_k 0 is below 1"),
])
def test_settings_that_cannot_work_are_refused(change, message):
    given = {"subscription": "projects/local-project/subscriptions/rows-sub",
             "output_topic": "projects/local-project/topics/preds",
             "dead_letter_topic": "projects/local-project/topics/dead", **change}
    with pytest.raises(StreamInputError, match=message):
        StreamOptions(**given)
