from plain_models import cnn_299, digit_images, plain_mobilenet  # noqa: F401  (session fixtures)
