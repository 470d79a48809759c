"""Training: what a training request is and the checks made before any work, shared by train
and diagnose_bottleneck: its fields (config), the strategy table (strategies), the cluster
shape (shape), the task a label allows (tasks), the model builders (models) and the request's
checks against its Dataset and an earlier model (request). Imports the platform, data and
model rooms.
"""
