"""stream_predict: rows from a Pub/Sub subscription predicted in an Apache Beam streaming job,
one prediction message per row to an output topic, each row that cannot be predicted to a
dead-letter topic naming why."""
