from plain_models import digit_images, plain_mobilenet  # noqa: F401  (session fixtures)
