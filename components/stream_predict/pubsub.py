"""The stream's topics and subscription asked for before any work, with the Pub/Sub client
(the emulator where ``PUBSUB_EMULATOR_HOST`` is set): one that does not exist, or that
cannot be reached, is refused naming it."""

from tfkfp.components.stream_predict.errors import StreamInputError
from tfkfp.components.stream_predict.options import StreamOptions

TIMEOUT_S = 10.0


def check_exists(options: StreamOptions, timeout: float = TIMEOUT_S) -> None:
    from google.api_core import exceptions
    from google.auth.exceptions import DefaultCredentialsError
    from google.cloud import pubsub_v1

    try:
        subscriber = pubsub_v1.SubscriberClient()
        publisher = pubsub_v1.PublisherClient()
    except DefaultCredentialsError as err:
        raise StreamInputError(f"no Google credentials to reach Pub/Sub ({err}); set "
                               "GOOGLE_APPLICATION_CREDENTIALS, or PUBSUB_EMULATOR_HOST for "
                               "the emulator") from None
    def topic(path: str):
        return lambda: publisher.get_topic(request={"topic": path}, timeout=timeout)

    asks = [("subscription", options.subscription,
             lambda: subscriber.get_subscription(
                 request={"subscription": options.subscription}, timeout=timeout))]
    asks += [(name, getattr(options, name), topic(getattr(options, name)))
             for name in ("output_topic", "dead_letter_topic")]
    try:
        for name, path, ask in asks:
            try:
                ask()
            except exceptions.NotFound:
                raise StreamInputError(f"{name} {path} does not exist; create it first "
                                       "(gcloud pubsub ... create)") from None
            except exceptions.GoogleAPICallError as err:
                raise StreamInputError(f"{name} {path}: Pub/Sub refused to describe it: "
                                       f"{err.message or err}") from None
            except exceptions.RetryError:
                raise StreamInputError(f"{name} {path}: Pub/Sub did not answer within "
                                       f"{timeout:g} s") from None
    finally:
        subscriber.close()
        publisher.transport.close()
