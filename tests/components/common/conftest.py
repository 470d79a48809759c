from string_tables import string_table  # noqa: F401  (a session fixture)
