"""Platform: storage URIs, CPUs, progress logs, signals and child processes, scratch folders,
Kubernetes and Vertex AI job helpers. Imports no other room.
"""
