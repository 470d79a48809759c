"""tfkfp pipelines: the KFP DAGs wiring the components together, each compiled to the YAML
beside its module, and what compiles, checks and documents them (registry, lint, docs). The
``tfkfp`` command is in tfkfp.cli."""
