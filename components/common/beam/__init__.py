"""The suite's models inside Apache Beam jobs: a RunInference model handler, row encoding
one row at a time before batching, the runners a job can run on, and Dataflow's launch.

handler.py imports Beam at its top: import it only where a Beam job runs (the beam extra),
never from a component's module scope. rows.py, runners.py and the
dataflow modules import Beam only inside the functions that need it, so parameters are
checked on the light install.
"""
