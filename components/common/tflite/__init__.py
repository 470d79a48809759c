"""TFLite: freezing, converting, feeding, binding to a Dataset and checking parity in LiteRT.
Imports the platform, data and model rooms.
"""
