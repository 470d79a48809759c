"""The suite's models inside Apache Beam jobs: a RunInference model handler, row encoding
one row at a time before batching, the runners a job can run on, and Dataflow's launch.

Beam is imported by these modules at their top: import them only where a Beam job runs
(``pip install 'tfkfp[beam]'``), never from a component's module scope.
"""
