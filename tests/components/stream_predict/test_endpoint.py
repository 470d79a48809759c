"""stream_predict through a real ``tfkfp serve`` (the endpoint option) against the Pub/Sub
emulator: the server killed with requests in flight and restarted on its port mid-stream,
every row still answered once as batch_predict answers it, the retries counted, bad rows
dead-lettered one by one; an endpoint that does not answer refused before any work."""

import json

import pytest
from beam_table import HEADER, assert_answers_as_batch_predict, rows
from pubsub_emulator import publish, pull_all, topic_with_subscription
from serve_process import free_port, restarted_mid_run

from tfkfp.components.common.beam.endpoint_handler import connect_once
from tfkfp.components.common.endpoint.options import EndpointOptions
from tfkfp.components.stream_predict.core import stream_predict
from tfkfp.components.stream_predict.errors import StreamInputError
from tfkfp.components.stream_predict.options import StreamOptions

pytestmark = pytest.mark.slow


def _table():
    table = [dict(zip(HEADER, r)) for r in rows(24, 47, first_id=7000)]
    for row in table:  # a JSON gap is null
        row.update({k: None for k in ("mean radius", "a.b[0]") if row[k] == ""})
    table[3]["mean radius"] = "-inf"  # a non-finite value
    del table[5]["Größe"]  # a column missing
    return table


def test_a_server_restarted_mid_stream_loses_no_row(pubsub_emulator, beam_table, tmp_path):
    rows_in, subscription = topic_with_subscription("via-endpoint-rows")
    out, out_sub = topic_with_subscription("via-endpoint-predictions")
    dead, dead_sub = topic_with_subscription("via-endpoint-dead")
    table = _table()
    ids = publish(rows_in, [json.dumps(r).encode() for r in table])
    port = free_port()
    endpoint = EndpointOptions(f"http://127.0.0.1:{port}", retries=12, timeout_s=60)
    options = StreamOptions(subscription, out, dead, keys=["row id"], top_k=2,
                             max_batch_size=8, max_messages=len(table), drain_s=120)
    result = restarted_mid_run(beam_table.model, port, tmp_path, 1, lambda: stream_predict(
        beam_table.model, options, "direct", endpoint=endpoint))
    assert (result.messages, result.predicted, result.dead_lettered, result.unfinished) == \
        (24, 22, 2, 0)
    assert connect_once(endpoint).client.retried >= 1
    predictions = pull_all(out_sub, expected=22)
    letters = pull_all(dead_sub, expected=2)
    assert {json.loads(m.data)["message_id"] for m in letters} == {ids[3], ids[5]}
    assert {m.attributes["model"] for m in predictions} == {
        f"http://127.0.0.1:{port}/v2/models/model/infer"}
    got = {json.loads(m.data)["row id"]: json.loads(m.data) for m in predictions}
    assert len(got) == 22  # each row once
    good = [r for i, r in enumerate(table) if i not in (3, 5)]
    assert_answers_as_batch_predict(beam_table.model, good, got, tmp_path)


def test_an_endpoint_that_does_not_answer_is_refused_before_any_work(pubsub_emulator,
                                                                     beam_table):
    _rows, subscription = topic_with_subscription("no-endpoint-rows")
    out, _ = topic_with_subscription("no-endpoint-predictions")
    dead, _ = topic_with_subscription("no-endpoint-dead")
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(StreamInputError, match=f"endpoint {url}/v2/models/model/ready is "
                       "unreachable"):
        stream_predict(beam_table.model, StreamOptions(subscription, out, dead,
                                                        max_messages=1), "direct",
                       endpoint=EndpointOptions(url, retries=0))
