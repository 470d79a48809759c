"""Model: the SavedModel contract, the model runtime (predictor: a SavedModel or TFLite
model behind one API; ranking; matching its inputs to a schema) and the task figures
(classification, regression). Imports the platform and data rooms.
"""
