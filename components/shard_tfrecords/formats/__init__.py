"""Input formats for sharding, each with columns(), chunks() and read()."""
