import pytest


@pytest.fixture(scope="session")
def untrained_model(demo_dataset, tmp_path_factory):
    """A tfkfp SavedModel of the demo data that was never trained: near chance accuracy,
    the model a deploy gate must refuse to put in place of demo_model."""
    import tensorflow as tf
    import tf_keras

    from tfkfp.components.common.data.schema import Schema
    from tfkfp.components.common.model.savedmodel import export_model

    schema = Schema.load(demo_dataset)
    tf_keras.utils.set_random_seed(5)
    inputs = {c.name: tf_keras.Input(shape=(), name=c.name, dtype=tf.int64)
              for c in schema.features}
    x = tf_keras.layers.Concatenate()(
        [tf_keras.layers.Reshape((1,))(tf.cast(v, tf.float32)) for v in inputs.values()])
    outputs = tf_keras.layers.Dense(len(schema.label.vocabulary), activation="softmax")(x)
    out = str(tmp_path_factory.mktemp("untrained_model") / "model")
    return export_model(tf_keras.Model(inputs, outputs), schema, out)
