"""Model: the SavedModel contract and the task figures (classification, regression). Imports
the platform and data rooms.
"""
