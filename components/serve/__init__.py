"""Online prediction: a tfkfp SavedModel or TFLite bundle on the KServe Python model server.

``tfkfp serve MODEL`` runs it (server.serve). The model is loaded and run by batch
prediction's Predictor, so a row gets the answer batch_predict gives it; requests are grouped
into model calls by an adaptive micro-batcher (batcher.py); rows are decoded and checked in
rows.py. Nothing here imports kfp: a deploy component runs the same code in the suite image.
"""
