"""tfkfp pipelines: compiled KFP DAGs wiring the components together, and the CLI."""
