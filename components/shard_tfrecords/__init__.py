"""Shard CSV, JSON Lines, Parquet, NumPy or image-folder data into TFRecord files."""
