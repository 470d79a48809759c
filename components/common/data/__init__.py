"""Data: the Dataset contract (schema, manifest, record layouts, missing values), its readers
and encoders. Imports only the platform room.
"""
